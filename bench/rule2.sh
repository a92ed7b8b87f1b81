#!/usr/bin/env bash
# Waiter 2: upstream dra-driver-cpu CI's rule (docs/upstream.md, "Start-up and readiness"):
# poll `kubectl get resourceslice` once a second, at most 120 times, until any ResourceSlice exists;
# then `kubectl rollout status` on the driver's DaemonSet (its helm e2e workflow). Upstream's rollout
# status waits without a limit; here it is bounded by ROLLOUT_TIMEOUT (the pass's timeout).
# Env: KUBECTL, KUBECONFIG, MAX_TRIES (120), INTERVAL (1), NAMESPACE, DAEMONSET, ROLLOUT_TIMEOUT.
set -u
KUBECTL=${KUBECTL:-kubectl}
found=
for ((i = 1; i <= ${MAX_TRIES:-120}; i++)); do
  if "$KUBECTL" get resourceslice -o name 2>/dev/null | grep -q .; then
    echo "a ResourceSlice exists (try $i)"
    found=1
    break
  fi
  sleep "${INTERVAL:-1}"
done
if [ -z "$found" ]; then
  echo "timed out: no ResourceSlice" >&2
  exit 1
fi
exec "$KUBECTL" rollout status "daemonset/${DAEMONSET:-dra-driver-cpu}" -n "${NAMESPACE:-dra-driver-cpu}" \
  --timeout "${ROLLOUT_TIMEOUT:-300}s"
