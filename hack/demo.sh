#!/usr/bin/env bash
# The demo: brings up the local hermetic test cluster in its own state dir, with one real node (a
# real kubelet + containerd; its CPU hardware a fake sysfs tree of 12 vCPUs in 2 NUMA cells) and no
# simulated one unless told otherwise (CLUSTER_NODES, CLUSTER_REAL_NODES, KUBEVIRT_NUM_VCPU, ...),
# installs the chart from its local registry, so the driver runs as a real kubelet plugin, shows the
# per-cell table, and proves a claim is allocated and its pod runs pinned to the CPUs the driver
# handed out (verify.yml). It only ever touches that cluster: the kubeconfig it
# passes to the playbooks is the test cluster's own, and KUBECONFIG, K8S_AUTH_*, the kubevirtci
# path and ~/.kube/config are not read (they are removed from the environment first).
# Installing into a real cluster is `ansible-playbook kubevirtci.dra_cpu.install` (see docs/usage.md).
#   DEMO_STATE_DIR   the test cluster's state dir (default <repo>/.cluster, as `make cluster-up`)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
state=${DEMO_STATE_DIR:-$top/.cluster}
# nothing implicit: no kubeconfig, context or credentials from the caller's environment
for v in $(compgen -e); do
  case $v in K8S_AUTH_*|KUBECONFIG|KUBEVIRTCI_CONFIG_PATH|KUBEVIRT_PROVIDER) unset "$v" ;; esac
done
export PATH="$top/.venv/bin:$PATH" ANSIBLE_CONFIG="$top/ansible.cfg" CLUSTER_STATE_DIR="$state"
export KUBEVIRT_USE_DRA_CPU=true
# the nodes: cluster.py's own defaults (one real node, no simulated one), or what the caller set; a
# cluster already up in the state dir keeps the knobs the caller does not set (cluster.py's rule)

echo "== bringing up the local test cluster in $state (binaries are built once and cached)"
tests/cluster/build.sh all >/dev/null
# its stdout is the env file (with the admin token): keep it out of the output
.venv/bin/python tests/cluster/cluster.py up >/dev/null
# read only what the demo needs from the cluster's env file, without exporting KUBECONFIG
cluster_var() { (set +u; unset KUBECONFIG; source "$state/env" >/dev/null; printf '%s' "${!1}"); }
kubeconfig=$(cluster_var KUBECONFIG)
chart=$(cluster_var DRA_CPU_CHART)
mirror=$(cluster_var CLUSTER_HELM_MIRROR)
[ -f "$kubeconfig" ] || { echo "demo: the test cluster wrote no kubeconfig in $state/env" >&2; exit 1; }

# the chart comes from the cluster's local OCI registry (plain HTTP on loopback), and helm, when
# missing from PATH, from its local mirror of the release tarballs (checksum verified)
local_vars=(-e "dra_cpu_kubeconfig=$kubeconfig" -e dra_cpu_context= -e "dra_cpu_chart=$chart"
            -e dra_cpu_chart_plain_http=true -e "dra_cpu_helm_mirror=$mirror"
            -e dra_cpu_helm_mirror_allow_http=true)
echo "== ansible-playbook playbooks/install.yml  (chart $chart, kubeconfig $kubeconfig)"
ansible-playbook playbooks/install.yml "${local_vars[@]}" "$@"
echo "== ansible-playbook playbooks/verify.yml  (a ResourceClaim shaped like KubeVirt's)"
ansible-playbook playbooks/verify.yml "${local_vars[@]}"
cat <<MSG
== done. The test cluster keeps running:
   export KUBECONFIG=$kubeconfig
   kubectl get resourceslices -o wide
   CLUSTER_STATE_DIR=$state make cluster-down        # tear it down
MSG
