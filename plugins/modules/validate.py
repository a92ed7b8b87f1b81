#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: validate
short_description: Validate and normalise the inputs of the dra_cpu role
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - Checks every input of the C(kubevirtci.dra_cpu.dra_cpu) role locally, before anything touches the cluster.
  - Each error names the role variable (C(dra_cpu_...)), the bad value and what is accepted; all errors are
    reported together.
  - Returns the normalised settings (RV(settings)), which M(kubevirtci.dra_cpu.chart_layout) maps onto the
    values the chart really has.
  - Never contacts a cluster and never reports a change.
  - The role's gate comes first. With O(enabled=false) nothing else is checked, and the result is
    skipped with RV(run=skip) and a message that says why (shown without C(-v)).
options:
  enabled:
    description:
      - The gate. V(false) skips everything, as when C(KUBEVIRT_USE_DRA_CPU) is not V(true).
      - Role variable C(dra_cpu_enabled).
    type: bool
    default: true
  reserved_cpus:
    description:
      - CPUs the driver must not hand out, in cpuset syntax (V(0-1,4,6-7)). Empty for none.
      - Role variable C(dra_cpu_reserved_cpus).
    type: str
    default: ''
  group_by:
    description:
      - How grouped-mode devices are formed, V(numanode) or V(socket); empty keeps the chart default (V(numanode)).
      - V(machine), which the driver knows, is refused with O(state=present) (also as a C(groupBy) in
        O(chart_values)) - upstream dra-driver-cpu prepares a claim on the machine device only with an opaque
        cpuset configuration that an external scheduler adds, so a KubeVirt claim fails at NodePrepareResources.
      - Role variable C(dra_cpu_group_by).
    type: str
    default: ''
  cpu_device_mode:
    description:
      - V(grouped) (one device per group with consumable capacity) or V(individual) (one device per CPU).
      - Role variable C(dra_cpu_cpu_device_mode).
    type: str
    default: grouped
  node_allocatable_mapping:
    description:
      - Publish KEP-5517 node-allocatable mappings (the chart's C(driverConfig.publishNodeAllocatableResourceMapping)).
        A bool, or a string of one (V(true)/V(false), blank = false). A
        C(driverConfig.publishNodeAllocatableResourceMapping) in O(chart_values) must agree with it.
      - Role variable C(dra_cpu_node_allocatable_mapping).
    type: raw
    default: false
  expose_pcie_roots:
    description:
      - Have the driver publish the PCIe roots local to each device's CPUs (the chart's C(args.exposePCIeRoots)).
        A bool, or a string of one. An C(args.exposePCIeRoots) in O(chart_values) must agree with it.
      - Role variable C(dra_cpu_expose_pcie_roots).
    type: raw
    default: false
  chart:
    description:
      - Chart reference, V(oci://<registry>/<path>), an http(s) chart repository URL, or a local path.
      - Role variable C(dra_cpu_chart).
    type: str
  chart_version:
    description:
      - Chart version (semver, for example V(0.3.0)); empty for the newest. Decides the values layout.
      - Role variable C(dra_cpu_chart_version).
    type: str
  namespace:
    description:
      - Namespace of the driver (a DNS-1123 label). Role variable C(dra_cpu_namespace).
    type: str
  release_name:
    description:
      - Helm release name (a DNS-1123 label of at most 53 characters). Role variable C(dra_cpu_release_name).
    type: str
  helm_timeout:
    description:
      - Helm wait timeout, seconds or a Go duration such as V(5m). Returned as a Go duration.
      - Role variable C(dra_cpu_helm_timeout).
    type: raw
  topology_timeout:
    description:
      - Seconds to wait for the driver's ResourceSlices (a positive integer).
      - Role variable C(dra_cpu_topology_timeout).
    type: int
  uninstall_timeout:
    description:
      - Seconds to wait for the slices to go on uninstall (a positive integer).
      - Role variable C(dra_cpu_uninstall_timeout).
    type: int
  helm_version:
    description:
      - Helm release to download when no usable helm is found, V(vX.Y.Z). Role variable C(dra_cpu_helm_version).
    type: str
  helm_mirror:
    description:
      - Base URL serving helm release tarballs and their C(.sha256sum) files (https, or http with
        O(helm_mirror_allow_http)). Role variable C(dra_cpu_helm_mirror).
    type: str
  helm_binary:
    description:
      - Path of the helm binary to use (C(~) is expanded); it must be an executable file. Empty means
        helm from PATH, or a download. Role variable C(dra_cpu_helm_binary).
    type: str
    default: ''
  helm_mirror_allow_http:
    description:
      - Accept a plain http O(helm_mirror). Role variable C(dra_cpu_helm_mirror_allow_http).
    type: bool
    default: false
  report_dir:
    description:
      - Directory for the run's JSON reports (C(~) is expanded; made when missing). It must not be an
        existing file. Empty means no reports. Role variable C(dra_cpu_report_dir).
    type: str
    default: ''
  num_vcpu:
    description:
      - vCPUs of a kubevirtci node (C(KUBEVIRT_NUM_VCPU)); an integer, or empty when unknown.
      - Role variable C(dra_cpu_num_vcpu).
    type: raw
  num_numa_nodes:
    description:
      - NUMA cells of a kubevirtci node (C(KUBEVIRT_NUM_NUMA_NODES)); an integer, or empty when unknown.
        O(num_vcpu) must be a multiple of it.
      - Role variable C(dra_cpu_num_numa_nodes).
    type: raw
  chart_values:
    description:
      - Extra helm values, deep-merged last. Role variable C(dra_cpu_chart_values).
    type: raw
    default: {}
  preflight_ignore:
    description:
      - Preflight checks to downgrade to warnings (a list, or a comma-separated string).
      - Role variable C(dra_cpu_preflight_ignore).
    type: list
    elements: str
    default: []
  state:
    description:
      - V(present) or V(absent). Role variable C(dra_cpu_state).
    type: str
    default: present
  min_cell_cpus:
    description:
      - Smallest largest-cell size the install needs, 0 or empty to skip. Role variable C(dra_cpu_min_cell_cpus)
        (1 by default, the role's default).
    type: raw
  kubeconfig:
    description:
      - Kubeconfig path; must exist when set. Role variable C(dra_cpu_kubeconfig). Only context names are read.
    type: str
    default: ''
  context:
    description:
      - Kubeconfig context; must be defined in O(kubeconfig) (or, when that is empty, in the file
        C(K8S_AUTH_KUBECONFIG)/C(KUBECONFIG)/C(~/.kube/config) names, if it exists). Role variable C(dra_cpu_context).
    type: str
    default: ''
extends_documentation_fragment:
  - kubevirtci.dra_cpu.read_only
notes:
  - Runs on the controller's Python; needs no Kubernetes library.
"""

EXAMPLES = r"""
- name: Validate the role inputs
  kubevirtci.dra_cpu.validate:
    reserved_cpus: "0-1"
    chart: oci://registry.k8s.io/dra-driver-cpu/charts/dra-driver-cpu
    chart_version: 0.3.0
    namespace: dra-driver-cpu
    release_name: dra-driver-cpu
    helm_timeout: 5m
    num_vcpu: 12
    num_numa_nodes: 2
  register: validated

- name: Map the settings onto the values of the chart
  kubevirtci.dra_cpu.chart_layout:
    chart: "{{ validated.settings.chart }}"
    chart_version: "{{ validated.settings.chart_version }}"
    helm: helm
    reserved_cpus: "{{ validated.settings.reserved_cpus }}"
    group_by: "{{ validated.settings.group_by }}"
    cpu_device_mode: "{{ validated.settings.cpu_device_mode }}"
    chart_values: "{{ validated.settings.chart_values }}"
  register: chart
"""

RETURN = r"""
run:
  description:
    - What the role's later stages do. V(skip) when O(enabled=false), else the state.
    - V(present) installs or upgrades, V(absent) uninstalls.
  returned: success and when skipped
  type: str
  sample: present
msg:
  description: Why nothing is done, when O(enabled=false).
  returned: when skipped
  type: str
  sample: "KUBEVIRT_USE_DRA_CPU is not 'true': skipping dra-driver-cpu"
settings:
  description:
    - The normalised inputs. Options not given are left out, except those with defaults.
  returned: success
  type: dict
  contains:
    reserved_cpus:
      description: Canonical cpuset string (sorted, ranges merged).
      type: str
      sample: 0-1,4
    reserved_cpu_list:
      description: The reserved CPU ids.
      type: list
      elements: int
      sample: [0, 1, 4]
    group_by:
      description: Lower-cased grouping, '' for the chart default.
      type: str
    cpu_device_mode:
      description: V(grouped) or V(individual).
      type: str
    chart_version:
      description: The chart version ('' for the newest).
      type: str
    helm_timeout:
      description: The helm timeout as a Go duration.
      type: str
      sample: 5m0s
    helm_timeout_seconds:
      description: The helm timeout in seconds.
      type: int
      sample: 300
    helm_version:
      description: The helm version with its leading V(v).
      type: str
    helm_mirror:
      description: The mirror URL without a trailing slash.
      type: str
    helm_binary:
      description: The helm binary path with C(~) expanded, '' when not set.
      type: str
    report_dir:
      description: The absolute report directory, '' when not set.
      type: str
    num_vcpu:
      description: vCPUs per node, or null.
      type: int
    num_numa_nodes:
      description: NUMA cells per node, or null.
      type: int
    preflight_ignore:
      description: Check names to downgrade.
      type: list
      elements: str
  sample:
    reserved_cpus: 0-1
    reserved_cpu_list: [0, 1]
    group_by: ''
    cpu_device_mode: grouped
    chart_version: 0.3.0
    namespace: dra-driver-cpu
    release_name: dra-driver-cpu
    helm_timeout: 5m0s
    helm_timeout_seconds: 300
    topology_timeout: 300
    state: present
errors:
  description: One message per bad variable.
  returned: failure
  type: list
  elements: str
  sample:
    - "dra_cpu_reserved_cpus: '3-1' is not a valid cpuset (range 3-1 is descending); expected a list like 0-1,4,6-7"
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate.settings import (
    argument_spec,
    validation_result,
)


def main():
    # the role's runs on localhost take the action plugin of the same name (no module process);
    # this module runs where the connection is not local
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    result = validation_result(module.params)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
