#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: verify
short_description: Prove that a KubeVirt-shaped dra.cpu claim is allocatable and gives virt-launcher what it reads
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - The verify stage in one call (C(playbooks/verify.yml)). Waits, as the role's topology stage does,
    until every node running the driver (the pods of the DaemonSets of helm release O(release_name) in
    O(driver_namespace)) has published a complete pool of C(dra.cpu) ResourceSlices.
  - "Sizes the claim: for a VM (O(vm_vcpus) > 0) by KubeVirt's formula, C(hostCPUs = vCPUs + IO threads +
    emulator-thread CPUs) (1 with O(vm_isolate_emulator_thread), 2 with O(vm_even_parity) when vCPUs + IO
    threads is even); else O(cpus); else the largest NUMA-aligned claim the driver publishes
    (C(max_vm_host_cpus))."
  - "Creates a ResourceClaim shaped as KubeVirt's (request C(req-cpu), device class C(dra.cpu)): in grouped
    mode one device with a C(dra.cpu/cpu) capacity request; in individual mode a C(count) of CPU devices
    kept on one NUMA node by a C(matchAttribute) constraint on C(resource.kubernetes.io/numaNode), or on
    C(dra.cpu/numaNodeID) when the published devices do not all carry the standard attribute. Then a pod
    shaped as a VM's launcher pod: its container C(compute) holds the claim, with CPU requests = limits =
    the claim's CPUs (Guaranteed QoS), and no tolerations but O(tolerations)."
  - "The container prints what KubeVirt's virt-launcher reads: the KEP-5304 device metadata file
    (C(/var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/req-cpu/dra.cpu-metadata.json)),
    the CPUs the kernel confines it to (C(Cpus_allowed_list)), the online CPUs and the C(DRA_CPUSET_*)
    variable the driver passes; it is read from the pod's log. The driver's own pinning is read from its
    log (as M(kubevirtci.dra_cpu.pinned_cpus))."
  - "It fails unless the metadata names the claim's allocated devices, one NUMA node and the claim's CPUs
    (C(dra.cpu/allocatedNumCPUs) in grouped mode, one device per CPU in individual mode);
    C(DRA_CPUSET_<claim uid>) holds the claim's CPUs and, when the driver logged its pinning, those CPUs;
    and the container runs on exactly those CPUs. When those CPUs are not CPUs of the kernel (the driver
    reads a sysfs overlay or simulated hardware) the container's CPUs are reported, not compared."
  - "A driver that writes no metadata (dra-driver-cpu v0.2.0) fails: KubeVirt's virt-launcher fails such
    a VM. O(allow_missing_metadata) accepts it."
  - Test objects of an earlier run are deleted first; the pod and the claim are deleted at the end whatever
    happened, and their deletion is waited for. Nothing is left, so it never reports a change. In check mode
    it only reads the topology and says what it would create.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - kubevirtci.dra_cpu.read_only.cluster
options:
  name:
    description: Name of the test claim and pod.
    type: str
    default: dra-cpu-verify
  namespace:
    description: Namespace of the test claim and pod.
    type: str
    default: default
  driver_namespace:
    description: The namespace the driver is installed in.
    type: str
    default: dra-driver-cpu
  release_name:
    description: The driver's helm release; its DaemonSets' pods are the driver pods.
    type: str
    default: dra-driver-cpu
  cpus:
    description: CPUs of the claim; 0 lets O(vm_vcpus) or the topology decide. Not with O(vm_vcpus).
    type: int
    default: 0
  vm_vcpus:
    description: Size the claim for a VM of this many vCPUs (cores x sockets x threads); 0 = no VM.
    type: int
    default: 0
  vm_io_threads:
    description: The VM's C(ioThreads.supplementalPoolThreadCount); needs O(vm_vcpus).
    type: int
    default: 0
  vm_isolate_emulator_thread:
    description: The VM's C(isolateEmulatorThread); needs O(vm_vcpus).
    type: bool
    default: false
  vm_even_parity:
    description: The KubeVirt CR asks for even parity (C(AlignCPUs), C(alpha.kubevirt.io/EmulatorThreadCompleteToEvenParity)); needs O(vm_vcpus).
    type: bool
    default: false
  image:
    description:
      - Image of the test pod; it needs a POSIX shell with C(cat), C(grep), C(tr) and C(sleep).
      - The default is the busybox image of Kubernetes' own e2e tests (k8s.io/kubernetes
        C(test/utils/image/manifest.go), C(BusyBox)).
    type: str
    default: registry.k8s.io/e2e-test-images/busybox:1.37.0-1
  tolerations:
    description: Tolerations of the test pod.
    type: list
    elements: dict
    default: []
  allow_missing_metadata:
    description: Accept a driver that writes no KEP-5304 device metadata (reported, not failed).
    type: bool
    default: false
  timeout:
    description: Seconds to wait for the allocation, for the pod's readout, and for each deletion.
    type: int
    default: 120
  topology_timeout:
    description: Seconds to wait for every driver node's complete pool.
    type: int
    default: 300
attributes:
  check_mode:
    support: full
    description: Reads the topology and says what it would create; creates nothing.
  diff_mode:
    support: none
    description: Nothing to diff.
"""

EXAMPLES = r"""
- name: Prove a claim for a 4-vCPU VM with an isolated emulator thread
  kubevirtci.dra_cpu.verify:
    vm_vcpus: 4
    vm_isolate_emulator_thread: true
  register: verified

- name: Show the report
  ansible.builtin.debug:
    msg: "{{ verified.report }}"
"""

RETURN = r"""
cpus:
  description: CPUs of the claim.
  returned: always
  type: int
  sample: 5
sizing:
  description: How the size was decided (a VM by KubeVirt's formula, O(cpus), or the topology's largest claim).
  returned: always
  type: str
  sample: "claim sized for a VM by KubeVirt's formula (...): 4 vCPUs + 1 for the isolated emulator thread = 5 host CPUs"
mode:
  description: The driver's device mode (grouped or individual).
  returned: always
  type: str
  sample: grouped
numa_attribute:
  description: Individual mode, the attribute of the C(matchAttribute) constraint (null when none).
  returned: always
  type: str
  sample: resource.kubernetes.io/numaNode
metadata_file:
  description: Where the container reads the device metadata (KubeVirt's path).
  returned: always
  type: str
  sample: /var/run/kubernetes.io/dra-device-attributes/resourceclaims/dra-cpu-verify/req-cpu/dra.cpu-metadata.json
passed:
  description: Whether the claim was proven.
  returned: always
  type: bool
  sample: true
report:
  description: The lines the role prints.
  returned: always
  type: list
  elements: str
node:
  description: The node the test pod ran on.
  returned: when the pod ran
  type: str
  sample: real01
readout:
  description:
    - What the container saw and the findings, C({complete, metadata, dra_cpuset, dra_cpuset_lines,
      container_cpus, cgroup_cpus, online_cpus, cpuset_compared, pinned, problems, notes}).
  returned: when the pod ran
  type: dict
claim:
  description: The ResourceClaim as last read (with its allocation).
  returned: when it was created
  type: dict
pod:
  description: The pod as last read.
  returned: when it was created
  type: dict
claim_manifest:
  description: The ResourceClaim created.
  returned: unless in check mode
  type: dict
pod_manifest:
  description: The pod created.
  returned: unless in check mode
  type: dict
pinned:
  description: The driver's pinning from its log (M(kubevirtci.dra_cpu.pinned_cpus)'s result).
  returned: when the pod ran
  type: dict
cleanup:
  description: C([deleted]) once both test objects are gone, else the problems.
  returned: unless in check mode
  type: list
  elements: str
ansible_facts:
  description: C(dra_cpu_topology), as M(kubevirtci.dra_cpu.cpu_topology) sets it.
  returned: when the topology was read
  type: dict
"""

from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import RedactingModule
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.runner import exit_module
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.run import argument_spec, run_verify


def main():
    # the run is module_utils/verify/run.py, shared with the action plugin (plugins/action/verify.py)
    module = AnsibleK8SModule(module_class=RedactingModule, argument_spec=argument_spec(), supports_check_mode=True)
    exit_module(module, run_verify(module.params, module.check_mode, module, get_api_client))


if __name__ == "__main__":
    main()
