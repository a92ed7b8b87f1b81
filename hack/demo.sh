#!/usr/bin/env bash
# The main job. With a cluster configured (KUBECONFIG, K8S_AUTH_KUBECONFIG, the kubevirtci
# kubeconfig or ~/.kube/config) it installs the driver there. With none it brings up the local
# hermetic test cluster (12 vCPUs, 2 NUMA cells, 1 node unless told otherwise), installs the chart
# from its local registry, shows the per-cell table and proves a claim is allocatable.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export PATH="$top/.venv/bin:$PATH" ANSIBLE_CONFIG="$top/ansible.cfg"
export KUBEVIRT_USE_DRA_CPU=${KUBEVIRT_USE_DRA_CPU:-true}

kubevirtci_kubeconfig=""
if [ -n "${KUBEVIRTCI_CONFIG_PATH:-}" ] && [ -n "${KUBEVIRT_PROVIDER:-}" ]; then
  kubevirtci_kubeconfig="$KUBEVIRTCI_CONFIG_PATH/$KUBEVIRT_PROVIDER/.kubeconfig"
fi
configured=""
for k in "${K8S_AUTH_KUBECONFIG:-}" "${KUBECONFIG:-}" "$kubevirtci_kubeconfig" "$HOME/.kube/config"; do
  if [ -n "$k" ] && [ -f "$k" ]; then configured=$k; break; fi
done

if [ -n "$configured" ]; then
  echo "== installing dra-driver-cpu into the cluster of $configured"
  ansible-playbook playbooks/install.yml "$@"
  exit 0
fi

echo "== no cluster configured: bringing up the local test cluster (binaries are built once and cached)"
tests/cluster/build.sh all >/dev/null
# its stdout is the env file (with the admin token): keep it out of the output
.venv/bin/python tests/cluster/cluster.py up >/dev/null
# shellcheck disable=SC1091
source "${CLUSTER_STATE_DIR:-$top/.cluster}/env"
export DRA_CPU_CHART
echo "== ansible-playbook playbooks/install.yml  (chart $DRA_CPU_CHART)"
# the chart comes from the cluster's local OCI registry (plain HTTP on loopback), and helm, when
# missing from PATH, from its local mirror of the release tarballs (checksum verified)
local_vars=(-e dra_cpu_chart_plain_http=true -e "dra_cpu_helm_mirror=$CLUSTER_HELM_MIRROR"
            -e dra_cpu_helm_mirror_allow_http=true)
ansible-playbook playbooks/install.yml "${local_vars[@]}" "$@"
echo "== ansible-playbook playbooks/verify.yml  (a ResourceClaim shaped like KubeVirt's)"
ansible-playbook playbooks/verify.yml "${local_vars[@]}"
cat <<MSG
== done. The cluster keeps running:
   export KUBECONFIG=$KUBECONFIG
   kubectl get resourceslices -o wide
   make cluster-down        # tear it down
MSG
