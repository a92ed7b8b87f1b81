#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: verify
short_description: Prove that the claim KubeVirt synthesizes for a VM is allocated, prepared and pinned as virt-launcher reads it
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - The verify stage in one call (C(playbooks/verify.yml)), per KubeVirt's C(CPUsWithDRA) design as merged
    (VEP 152). Waits, as the role's topology stage does, until every node running the driver (the pods of the
    DaemonSets of helm release O(release_name) in O(driver_namespace)) has published a complete pool of
    C(dra.cpu) ResourceSlices.
  - "Stands for a VMI O(name) with C(dedicatedCpuPlacement: true): its CPU fields are O(vm_cores),
    O(vm_sockets), O(vm_threads), O(vm_io_threads), O(vm_isolate_emulator_thread) and O(vm_even_parity);
    without O(vm_cores) (or O(cpus)) it is the largest VM of that shape that fits the largest claim the driver
    publishes (C(max_vm_host_cpus)). Its claim holds KubeVirt's C(hostCPUs = cores x sockets x threads + IO
    threads + emulator-thread CPUs) (1 with O(vm_isolate_emulator_thread), 2 with O(vm_even_parity) when
    vCPUs + IO threads is even)."
  - "Renders what virt-controller renders: ResourceClaim C(<name>-cpu) with one request C(cpu) of device
    class C(dra.cpu) asking for C(dra.cpu/cpu: <hostCPUs>) (no selector, no count), and pod
    C(virt-launcher-<name>) whose container C(compute) holds it as pod claim C(cpu-dra), with CPU requests =
    limits = hostCPUs (alpha, Guaranteed QoS), no tolerations but O(tolerations). When the driver publishes
    KEP-5517 node-allocatable mappings (C(dra_cpu_topology.node_allocatable_mapping)), the pod is claim-only
    (a C(1m) CPU request = limit for the QoS class): verify then checks that
    C(status.nodeAllocatableResourceClaimStatuses) names the claim with its CPUs, that a pod asking for
    one CPU more than the node has left beside the claim stays Unschedulable for insufficient CPU (its
    C(PodScheduled) condition or C(FailedScheduling) event says C(Insufficient cpu)), and that a control
    pod one CPU smaller is scheduled."
  - "Reads from inside C(compute) what virt-launcher reads: C(DRA_CPUSET_<claim uid>), the CPUs the kernel
    confines the container to (C(Cpus_allowed_list), the cgroup's effective cpuset), each NUMA node's CPUs
    and each CPU's socket as the container sees them, and the KEP-5304 device metadata file where the driver
    writes one. The driver's own pinning is read from its log (as M(kubevirtci.dra_cpu.pinned_cpus))."
  - "Fails unless C(DRA_CPUSET_<claim uid>) is a CPU list of hostCPUs (and, when the driver logged its
    pinning, those CPUs); wherever those CPUs are the kernel's, the container runs on exactly them, inside the
    allocated device's NUMA node (or socket). When they are not the kernel's (a sysfs overlay, simulated
    hardware) the container's CPUs are reported, not compared. A driver without C(DRA_CPUSET_*) fails:
    virt-launcher would run the VM on the container's cgroup cpuset without C(vcpupin);
    O(allow_missing_dra_cpuset) accepts it."
  - "The KEP-5304 metadata is not part of KubeVirt's CPU contract: it is reported when present (device, NUMA
    node, C(dra.cpu/allocatedNumCPUs)), never required unless O(require_metadata)."
  - "In individual mode it fails before creating anything: KubeVirt synthesizes grouped claims only, and
    upstream is deprecating individual mode. O(individual_claim) proves instead a count of CPU devices kept
    on one NUMA node (C(matchAttribute) on C(resource.kubernetes.io/numaNode), or C(dra.cpu/numaNodeID) when
    the published devices do not all carry the standard attribute): what a VMI's C(spec.resourceClaims)
    escape hatch would reference."
  - "With O(aligned_device_class) it renders the claim a provisioner writes for a VM with a device (VEP 300's
    shape): the C(cpu) request plus a request C(device) for one device of that DeviceClass, and a
    C(matchAttribute) constraint on O(aligned_attribute) over both. Refused before anything is created when
    the class does not exist or no C(dra.cpu) device carries the attribute. Once allocated, the CPU device's
    values of the attribute (its PCIe roots, a string list in grouped mode) must contain the device's, both
    read from the published ResourceSlices; O(aligned_allocation_only) stops there."
  - Test objects of an earlier run are deleted first; the pods and the claim are deleted at the end whatever
    happened, and their deletion is waited for. Nothing is left, so it never reports a change. In check mode
    it only reads the topology and says what it would create.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - kubevirtci.dra_cpu.read_only.cluster
options:
  name:
    description: Name of the VMI verify stands for; the claim is C(<name>-cpu), the pod C(virt-launcher-<name>).
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
    description:
      - Host CPUs of the claim (a VMI of that many cores and nothing else); 0 lets the VM's fields or the
        topology decide. Not with any O(vm_cores) etc.
    type: int
    default: 0
  vm_cores:
    description: The VM's C(spec.domain.cpu.cores); 0 sizes the VM as the largest that fits.
    type: int
    default: 0
  vm_sockets:
    description: The VM's C(spec.domain.cpu.sockets).
    type: int
    default: 1
  vm_threads:
    description: The VM's C(spec.domain.cpu.threads).
    type: int
    default: 1
  vm_vcpus:
    description: Deprecated, use O(vm_cores) (the same on one socket and thread).
    type: int
  vm_io_threads:
    description: The VM's C(ioThreads.supplementalPoolThreadCount), one host CPU each.
    type: int
    default: 0
  vm_isolate_emulator_thread:
    description: The VM's C(isolateEmulatorThread).
    type: bool
    default: false
  vm_even_parity:
    description: The KubeVirt CR asks for even parity (C(AlignCPUs), C(alpha.kubevirt.io/EmulatorThreadCompleteToEvenParity)).
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
    description: Tolerations of the test pods.
    type: list
    elements: dict
    default: []
  require_metadata:
    description:
      - Fail unless the driver writes KEP-5304 device metadata that names the claim's device, one NUMA node
        and its CPUs (for consumers that read it, such as KubeVirt's GPU/host-device paths).
    type: bool
    default: false
  allow_missing_metadata:
    description: Deprecated and without effect; verify no longer requires the metadata (see O(require_metadata)).
    type: bool
  allow_missing_dra_cpuset:
    description: Accept a driver that injects no C(DRA_CPUSET_<claim uid>) (reported, not failed).
    type: bool
    default: false
  individual_claim:
    description: In individual mode, prove a NUMA-aligned count claim (the C(spec.resourceClaims) escape hatch) instead of failing.
    type: bool
    default: false
  aligned_device_class:
    description:
      - The DeviceClass of a second device the claim asks for, aligned with the CPU device (VEP 300). Empty is off.
    type: str
    default: ""
  aligned_attribute:
    description:
      - The attribute of the C(matchAttribute) constraint, by its short or full name.
    type: str
    default: pcieRoot
    choices: [numaNode, pcieRoot, resource.kubernetes.io/numaNode, resource.kubernetes.io/pcieRoot]
  aligned_allocation_only:
    description:
      - Prove the aligned claim up to its allocation; the pod is not waited for (a device no driver prepares).
    type: bool
    default: false
  timeout:
    description: Seconds to wait for the allocation, for the pod's readout, for each of the probe and control pods, and for each deletion.
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
- name: Prove the claim of a 4-core VM with an isolated emulator thread
  kubevirtci.dra_cpu.verify:
    vm_cores: 4
    vm_isolate_emulator_thread: true
  register: verified

- name: Show the report
  ansible.builtin.debug:
    msg: "{{ verified.report }}"
"""

RETURN = r"""
cpus:
  description: Host CPUs of the claim (KubeVirt's hostCPUs).
  returned: always
  type: int
  sample: 5
vmi:
  description:
    - The VMI verify stands for, C({name, cores, sockets, threads, vcpus, io_threads, isolate_emulator_thread,
      even_parity, emulator_thread_cpus, host_cpus, sized_by}).
  returned: after the topology was read
  type: dict
sizing:
  description: The report's line for the VMI and hostCPUs' breakdown.
  returned: after the topology was read
  type: str
  sample: >-
    VMI default/dra-cpu-verify (dedicatedCpuPlacement), as given (dra_cpu_verify_vm_cores): hostCPUs = 4 vCPUs
    (cores 4 x sockets 1 x threads 1) + 1 for the isolated emulator thread = 5
claim_name:
  description: The claim's name, C(<name>-cpu).
  returned: after the topology was read
  type: str
  sample: dra-cpu-verify-cpu
pod_name:
  description: The launcher pod's name, C(virt-launcher-<name>).
  returned: after the topology was read
  type: str
  sample: virt-launcher-dra-cpu-verify
claim_only:
  description: Whether the pod is claim-only (KEP-5517 node-allocatable mappings published).
  returned: after the topology was read
  type: bool
mode:
  description: The driver's device mode (grouped or individual).
  returned: after the topology was read
  type: str
  sample: grouped
numa_attribute:
  description: Individual mode's escape hatch, the attribute of the C(matchAttribute) constraint (null otherwise).
  returned: after the topology was read
  type: str
  sample: resource.kubernetes.io/numaNode
metadata_file:
  description: Where the container reads the KEP-5304 device metadata.
  returned: after the topology was read
  type: str
  sample: /var/run/kubernetes.io/dra-device-attributes/resourceclaims/dra-cpu-verify-cpu/cpu/dra.cpu-metadata.json
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
      container_cpus, cgroup_cpus, online_cpus, cpuset_compared, placement, pinned, problems, notes}).
  returned: when the pod ran
  type: dict
aligned:
  description:
    - The aligned claim's proof, C({attribute, device_class, cpu, device, common, problems}); C(cpu) and
      C(device) are C({request, driver, pool, device, values}).
  returned: in aligned mode, once the claim was allocated
  type: dict
locality:
  description:
    - Where the allocated device sits as its ResourceSlice publishes it, C({pcie_roots, numa_node}) (the union of
      its C(resource.kubernetes.io/pcieRoot), empty when not published, with C(dra_cpu_expose_pcie_roots); its
      C(resource.kubernetes.io/numaNode), null when not published); null when the device is not among the newest
      slices. The report gives it beside C(DRA_CPUSET_*).
  returned: when the pod ran
  type: dict
  sample: {pcie_roots: ['pci0000:00'], numa_node: null}
node_allocatable:
  description:
    - "KEP-5517, C({claim_status, probe, control}) (the pod's status entry for the claim; the probe and
      control pods, each C({name, cpu_millis, outcome, message}): the CPU asked for, what the scheduler
      decided, its words)."
  returned: when the pod ran claim-only
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
  description: C([deleted]) once every test object is gone, else the problems.
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
