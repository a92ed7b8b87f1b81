#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
# The preflight module: its documentation and exit. Its options and one run are in
# module_utils/preflight/run.py (shared with plugins/action/preflight.py, which runs it in the
# controller on a local connection); what it reads and in which order in preflight/gather.py; the
# rules in preflight/rules.py and preflight/nodes.py; the report text in preflight/report.py.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: preflight
short_description: Check that a cluster can run dra-driver-cpu
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - Reads the cluster and reports one finding per check, with the node (where relevant), the observed
    and the required value and a hint how to fix it.
  - "Checks: C(server_version) (every mode needs Kubernetes >= 1.34; grouped mode >= O(min_version), or
    1.34/1.35 with the feature gate shown on), C(resource_api) (C(resource.k8s.io/v1) served),
    C(feature_gate) (grouped mode: O(feature_gate) enabled, from the API server's
    C(kubernetes_feature_enabled) metric, unreadable metrics give a warning, not a pass; individual
    mode does not need the gate and only reports its state),
    C(eligible_nodes) (the nodes the driver DaemonSet will run on, from O(node_selector) and the taints
    O(tolerations) do not cover), and per eligible node C(container_runtime) (CRI-O >= 1.30 or
    containerd >= 2.0), C(cpu_manager_policy) (kubelet C(cpuManagerPolicy) must be C(none), read
    through C(/api/v1/nodes/<node>/proxy/configz) with a 15 s timeout) and C(reserved_cpus) (the reserved
    CPU ids exist). A node whose C(Ready) condition is not C(True) gets a C(node_ready) warning instead of
    the C(/configz) read (its kubelet cannot answer); a Ready node gets no C(node_ready) finding."
  - Fails, listing every error finding, when an error remains after O(ignore) and
    O(skip_incompatible_nodes). Only reads; never reports a change.
  - "A missing permission gives a message naming the verb and the resource, for example
    C(permission denied: cannot get nodes/proxy)."
  - With O(namespace), also reports what is installed already (RV(installed)), that is whether the
    namespace exists with the Pod Security labels, and the newest revision of helm release
    O(release_name) (status, chart version and a digest of its values, read from helm's release Secret;
    the release's values are never returned). The role uses it to skip the lookups and writes a re-run does not need.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - kubevirtci.dra_cpu.read_only
  - kubevirtci.dra_cpu.read_only.cluster
options:
  checks:
    description:
      - Run the checks. V(false) runs none of them and only reads what a caller needs anyway, in the
        same one call, that is RV(cluster) (after asking the API server for its version) and, with
        O(namespace), RV(installed); then RV(passed) is V(true), RV(findings) empty and RV(summary) one
        line saying preflight did not run. No report file is written then.
    type: bool
    default: true
  cpu_device_mode:
    description:
      - The driver's device mode; it decides the version and feature-gate requirements (upstream's
        compatibility table). V(grouped) uses consumable capacity and needs O(feature_gate) (alpha in
        Kubernetes 1.34/1.35, on by default from 1.36); V(individual) runs on 1.34 and newer without it.
    type: str
    default: grouped
    choices: [grouped, individual]
  min_version:
    description:
      - In grouped mode, the oldest Kubernetes version accepted without the feature gate shown on.
        Every mode needs 1.34 (C(resource.k8s.io/v1)).
    type: str
    default: '1.36'
  feature_gate:
    description: The feature gate grouped CPU devices need (individual mode does not).
    type: str
    default: DRAConsumableCapacity
  node_allocatable_mapping:
    description:
      - KEP-5517 mappings are asked for (C(dra_cpu_node_allocatable_mapping)). Adds the C(node_allocatable_gate)
        check, an error unless C(DRANodeAllocatableResources) is enabled on the API server (its
        C(kubernetes_feature_enabled) metric) and in the C(featureGates) of every checked node's kubelet
        (C(/configz)); one finding for the API server and one per node, naming what is missing and where.
    type: bool
    default: false
  expose_pcie_roots:
    description:
      - PCIe roots are asked for (C(dra_cpu_expose_pcie_roots)). Adds the C(list_attributes_gate) check, an error
        unless C(DRAListTypeAttributes) (KEP-5491) is enabled on the API server (its C(kubernetes_feature_enabled)
        metric); without it the API server drops the driver's C(resource.kubernetes.io/pcieRoot) list value and
        refuses the ResourceSlice that carried it.
      - Adds the C(list_attributes_scheduler) check too, a warning on Kubernetes older than 1.37, whose
        kube-scheduler does not match list attributes, so a claim aligned on the PCIe root is not allocated.
    type: bool
    default: false
  node_selector:
    description: The chart's C(nodeSelector); only matching nodes are checked.
    type: dict
    default: {}
  tolerations:
    description:
      - The chart's tolerations; a node with a C(NoSchedule)/C(NoExecute) taint they do not tolerate
        is not checked (the tolerations the DaemonSet controller adds itself are taken into account).
      - Defaults to the chart's default.
    type: list
    elements: dict
    default: [{operator: Exists, effect: NoSchedule}]
  reserved_cpus:
    description: The CPUs the driver reserves (cpuset syntax); each must exist on every checked node.
    type: str
    default: ''
  ignore:
    description: Check names whose errors become warnings.
    type: list
    elements: str
    default: []
    choices: [server_version, resource_api, feature_gate, node_allocatable_gate, list_attributes_gate,
              list_attributes_scheduler, container_runtime, cpu_manager_policy, reserved_cpus, eligible_nodes]
  skip_incompatible_nodes:
    description:
      - Instead of failing on per-node errors (C(container_runtime), C(cpu_manager_policy), C(reserved_cpus)),
        keep the driver off those nodes through a node affinity (chart 0.3.0 and newer) returned as
        RV(node_affinity). With an older chart it fails saying so.
    type: bool
    default: false
  chart_version:
    description: The chart version to be installed; decides whether a node affinity can be set. Empty means the newest.
    type: str
    default: ''
  chart_affinity:
    description:
      - Whether the chart has an C(affinity) value, as the role read it from the chart itself. When unset, decided by
        O(chart_version) (0.3.0 and newer).
    type: bool
  check_configz:
    description: Read each node's kubelet configuration through the API server's node proxy.
    type: bool
    default: true
  namespace:
    description: The driver's namespace; when set, RV(installed) reports what is installed there. Empty skips that.
    type: str
    default: ''
  namespace_labels:
    description: The labels O(namespace) must carry (the role passes its Pod Security labels); see RV(installed.namespace).
    type: dict
    default: {}
  release_name:
    description: The helm release to look up in O(namespace).
    type: str
    default: ''
  chart:
    description:
      - Ignored, and deprecated (to be removed in 1.0.0). It decided C(installed.chart_fetch_needed), which
        nothing read and which is no longer returned.
    type: str
  report_dir:
    description:
      - A directory (made when missing) where the findings are also written as C(dra-cpu-preflight.json)
        (RV(findings), RV(passed), RV(report), RV(cluster)), whether preflight passes or not; for CI
        artifacts. Not written in check mode, nor when preflight could not check at all. Empty writes nothing.
    type: path
    default: ''
seealso:
  - module: kubevirtci.dra_cpu.cpu_topology
"""

EXAMPLES = r"""
- name: Check the cluster before installing the driver
  kubevirtci.dra_cpu.preflight:
    reserved_cpus: "0-1"
    chart_version: 0.3.0
  register: preflight

- name: Keep the driver off static-CPU-manager workers instead of failing
  kubevirtci.dra_cpu.preflight:
    reserved_cpus: "0-1"
    chart_version: 0.3.0
    skip_incompatible_nodes: true
  register: preflight

- name: Install, excluding the skipped nodes
  kubernetes.core.helm:
    name: dra-driver-cpu
    chart_ref: oci://registry.k8s.io/dra-driver-cpu/charts/dra-driver-cpu
    chart_version: 0.3.0
    release_namespace: dra-driver-cpu
    release_values:
      driverConfig:
        reservedCPUs: "0-1"
      affinity: "{{ preflight.node_affinity }}"
"""

RETURN = r"""
findings:
  description: One entry per check (per node for node checks).
  returned: always
  type: list
  elements: dict
  contains:
    check:
      description: The check name.
      type: str
      sample: cpu_manager_policy
    severity:
      description: V(error), V(warning) or V(ok).
      type: str
      sample: error
    node:
      description: The node, or null for cluster-wide checks.
      type: str
      sample: node02
    observed:
      description: What was found.
      type: raw
      sample: static
    required:
      description: What is needed.
      type: raw
      sample: none
    message:
      description: A sentence saying what was found.
      type: str
    fix:
      description: How to fix it ('' when nothing to fix).
      type: str
error_count:
  description: Number of error findings.
  returned: always
  type: int
  sample: 0
warning_count:
  description: Number of warning findings (C(warnings) is Ansible's own key, hence the name).
  returned: always
  type: int
  sample: 1
passed:
  description: True when no error finding remains.
  returned: always
  type: bool
server_version:
  description: The API server's gitVersion.
  returned: when readable
  type: str
  sample: v1.36.3
checked_nodes:
  description: The nodes the driver will run on, which the node checks covered.
  returned: always
  type: list
  elements: str
  sample: [node01, node02]
not_ready_nodes:
  description:
    - The checked nodes whose C(Ready) condition is not C(True) (each has a C(node_ready) warning); null with
      O(checks=false). The role passes it to M(kubevirtci.dra_cpu.cpu_topology).
  returned: always
  type: list
  elements: str
  sample: []
  version_added: 0.1.0
excluded_nodes:
  description: Nodes the DaemonSet will not run on and why (node selector, taints).
  returned: always
  type: list
  elements: dict
skipped_nodes:
  description: With O(skip_incompatible_nodes), the nodes kept off and the checks they failed.
  returned: always
  type: list
  elements: dict
  sample: [{node: node02, reasons: [cpu_manager_policy]}]
node_affinity:
  description:
    - A chart C(affinity) value excluding the skipped nodes
      (C(kubernetes.io/hostname NotIn [...])); {} when none is skipped.
  returned: always
  type: dict
cluster:
  description:
    - The cluster checked, which the role's release task names before it changes anything. C(server) is
      the API server URL, C(context) the kubeconfig context used (null without a kubeconfig),
      C(kubeconfig) the file, C(text) the three in words, C(<server> (context <name>, kubeconfig <file>)).
  returned: when the cluster could be read
  type: dict
  sample: {server: "https://127.0.0.1:6443", context: kind-kind, kubeconfig: /home/user/.kube/config,
           text: "https://127.0.0.1:6443 (context kind-kind, kubeconfig /home/user/.kube/config)"}
report:
  description:
    - The report as lines of text, one per finding after a header line, then one per node the driver is
      kept off; the role prints it. When preflight could not check at all, one line saying why.
  returned: always
  type: list
  elements: str
  sample: ["Preflight: 0 error(s), 0 warning(s); checked nodes: node01", "[OK] server_version: Kubernetes v1.36.3"]
summary:
  description:
    - "The short report, as lines of text. One line C(preflight: <N> checks passed on <nodes> (<E> errors, <W> warnings))
      (at most 3 node names, then C(and <K> more)), then one line per warning and error finding (as in
      RV(report)). With O(checks=false), the one line C(preflight: not run (dra_cpu_preflight=false)); when
      preflight could not check at all, the line of RV(report). When errors remain, C(msg) ends with these lines."
  returned: always
  type: list
  elements: str
  sample: ["preflight: 6 checks passed on node01, node02 (1 errors, 0 warnings)",
           "[ERROR] cpu_manager_policy on node02: node node02: kubelet cpuManagerPolicy is static (observed: static; ..."]
installed:
  description:
    - What is installed in O(namespace) already. V(readable=false) (with V(error)) when it could not be
      read, for example without permission to list Secrets there; the caller should then look itself.
  returned: when O(namespace) is set
  type: dict
  contains:
    readable:
      description: Whether the namespace and the release could be read.
      type: bool
      sample: true
    error:
      description: Why not, when V(readable=false).
      type: str
      returned: when not readable
    namespace:
      description:
        - C(name), C(exists), C(terminating) (being deleted), C(labels), and C(labels_ok) (it carries
          every label of O(namespace_labels) and is not terminating).
      type: dict
      returned: when readable
      sample: {name: dra-driver-cpu, exists: true, terminating: false, labels: {}, labels_ok: false}
    release:
      description: The newest revision of O(release_name) ({} when there is none).
      type: dict
      returned: when readable
      sample: {name: dra-driver-cpu, revision: 1, status: deployed, chart: dra-driver-cpu, chart_version: 0.3.0,
               values_sha256: 3f0a9c1e5b7d2468ace013579bdf2468ace013579bdf2468ace013579bdf2468}
      contains:
        values_sha256:
          description:
            - sha256 (hex) of the canonical JSON (keys sorted, separators C(,) and C(:)) of the values helm
              stored with the release (its C(config), the user-supplied values); '' when the release body
              cannot be decoded. The values themselves are never returned (they may hold secrets). The
              release action compares it with the digest of the values it would give helm.
          type: str
          returned: when there is a release
    other_releases:
      description:
        - The names of the other helm releases whose revisions live in O(namespace) (read in the same
          list as O(release_name)'s). Uninstall leaves a namespace that holds any of them in place.
      type: list
      elements: str
      returned: when readable
      sample: []
"""

import gc

from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import RedactingModule
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.runner import exit_module
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.run import argument_spec, run_preflight


def main():
    # the run is module_utils/preflight/run.py, shared with the action plugin (plugins/action/preflight.py)
    module = AnsibleK8SModule(
        module_class=RedactingModule,  # hides a dict kubeconfig's secrets only
        argument_spec=argument_spec(),
        supports_check_mode=True,
    )
    result = run_preflight(module.params, module.check_mode, module, get_api_client)
    # done with the cluster: exempt the client's large heap from the collector so the interpreter
    # does not spend ~0.5 s tearing it down after the result is written (as cpu_topology does)
    gc.freeze()
    exit_module(module, result)


if __name__ == "__main__":
    main()
