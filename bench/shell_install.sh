#!/usr/bin/env bash
# The kubevirtci shell installer's sequence (install_dra_driver_cpu.sh, steps 1, 2, 5, 6, 7, 8 as
# described in docs/upstream.md, "kubevirtci's shell installer"), against the hermetic cluster: the chart comes
# from the cluster's local registry (--plain-http), helm is CLUSTER_HELM_BINARY (step 4 finds it on
# PATH). Env: KUBECONFIG, KUBECTL, HELM, DRA_CPU_CHART, KUBEVIRT_USE_DRA_CPU, KUBEVIRT_PROVIDER.
set -euo pipefail
if [ "${KUBEVIRT_USE_DRA_CPU:-}" != "true" ]; then
  echo "KUBEVIRT_USE_DRA_CPU is not true: nothing to do"
  exit 0
fi
: "${KUBEVIRT_PROVIDER:?KUBEVIRT_PROVIDER is required}"
ver=${KUBEVIRT_PROVIDER##*-}
if [ "$(printf '%s\n' "$ver" 1.36 | sort -V | head -1)" != 1.36 ]; then
  echo "$KUBEVIRT_PROVIDER predates k8s 1.36, where DRAConsumableCapacity became beta" >&2
  exit 1
fi
KUBECTL=${KUBECTL:-kubectl}
HELM=${HELM:-helm}
CHART=${DRA_CPU_CHART:-oci://registry.k8s.io/dra-driver-cpu/charts/dra-driver-cpu}
VERSION=${DRA_CPU_CHART_VERSION:-0.3.0}
RELEASE=${DRA_CPU_RELEASE_NAME:-dra-driver-cpu}
NS=${DRA_CPU_DRIVER_NAMESPACE:-dra-driver-cpu}
RESERVED=${DRA_CPU_RESERVED_CPUS:-0-1}

if ! "$KUBECTL" get namespace "$NS" >/dev/null 2>&1; then
  "$KUBECTL" create namespace "$NS"
  "$KUBECTL" label namespace "$NS" pod-security.kubernetes.io/enforce=privileged \
    pod-security.kubernetes.io/warn=privileged pod-security.kubernetes.io/audit=privileged
fi
extra=()
if [ -n "${DRA_CPU_GROUP_BY:-}" ]; then extra+=(--set-string "driverConfig.groupBy=$DRA_CPU_GROUP_BY"); fi
"$HELM" upgrade -i "$RELEASE" "$CHART" --version "$VERSION" --namespace "$NS" --plain-http \
  --set-string "driverConfig.reservedCPUs=$RESERVED" "${extra[@]}" --wait --timeout 5m

for ((i = 1; i <= 60; i++)); do
  slices=$("$KUBECTL" get resourceslices --field-selector spec.driver=dra.cpu -o name | wc -l)
  nodes=$("$KUBECTL" get nodes -o name | wc -l)
  if [ "$slices" -ge "$nodes" ]; then
    "$KUBECTL" get deviceclass dra.cpu
    "$KUBECTL" get pods -n "$NS" -o wide
    "$KUBECTL" get resourceslices --field-selector spec.driver=dra.cpu
    exit 0
  fi
  sleep 5
done
"$KUBECTL" get resourceslices -o yaml
"$KUBECTL" logs -n "$NS" -l "app.kubernetes.io/name=dra-driver-cpu" --tail=100 || true
exit 1
