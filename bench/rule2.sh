#!/usr/bin/env bash
# Waiter 2: upstream dra-driver-cpu CI's rule (../shared/reference/dra-driver-cpu.md, "Readiness"):
# poll `kubectl get resourceslice` once a second until any ResourceSlice exists.
# Env: KUBECTL, KUBECONFIG, MAX_TRIES, INTERVAL (1).
set -u
KUBECTL=${KUBECTL:-kubectl}
for ((i = 1; i <= ${MAX_TRIES:-300}; i++)); do
  if "$KUBECTL" get resourceslice -o name 2>/dev/null | grep -q .; then
    echo "ready: a ResourceSlice exists (try $i)"
    exit 0
  fi
  sleep "${INTERVAL:-1}"
done
echo "timed out: no ResourceSlice" >&2
exit 1
