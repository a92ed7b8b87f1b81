# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""How many CPUs verify's test claim asks for, and why, in one line of the report (pure; no cluster).

Owns the three ways a size is given and their precedence: a VM (``vm_vcpus`` > 0, sized by KubeVirt's
formula, ``common/kubevirt_sizes.host_cpus``: vCPUs + IO threads + emulator-thread CPUs), else an
explicit ``cpus`` (> 0), else the topology's largest NUMA-aligned claim (``max_vm_host_cpus``: one
device in grouped mode, at most 32 CPU devices of one cell in individual mode). Both a VM and
``cpus`` is a contradiction and refused, naming both. The claim's size is what KubeVirt's
virt-controller would ask for that VM; verify proves that claim, not a guess of it.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.kubevirt_sizes import (
    emulator_thread_cpus,
    host_cpus,
)

# option -> the role variable that sets it (messages name both)
VARIABLES = {
    "cpus": "dra_cpu_verify_cpus",
    "vm_vcpus": "dra_cpu_verify_vm_vcpus",
    "vm_io_threads": "dra_cpu_verify_vm_io_threads",
    "vm_isolate_emulator_thread": "dra_cpu_verify_vm_isolate_emulator_thread",
    "vm_even_parity": "dra_cpu_verify_vm_even_parity",
    "timeout": "dra_cpu_verify_timeout",
}


def _named(option: str) -> str:
    return "%s (%s)" % (option, VARIABLES[option]) if option in VARIABLES else option


def check_size_params(params: dict[str, Any]) -> list[str]:
    """Problems with the size options, each naming the option, its role variable and the value."""
    problems = []
    for option in ("cpus", "vm_vcpus", "vm_io_threads"):
        value = params.get(option) or 0
        if value < 0:
            problems.append("%s: %s is negative" % (_named(option), value))
    if (params.get("timeout") or 0) <= 0:
        problems.append("%s: %s is not positive" % (_named("timeout"), params.get("timeout")))
    vcpus = params.get("vm_vcpus") or 0
    if vcpus > 0 and (params.get("cpus") or 0) > 0:
        problems.append("%s: %s and %s: %s both size the claim: give the VM or the CPUs, not both"
                        % (_named("cpus"), params["cpus"], _named("vm_vcpus"), vcpus))
    if vcpus <= 0:
        for option in ("vm_io_threads", "vm_isolate_emulator_thread", "vm_even_parity"):
            if params.get(option):
                problems.append("%s: %s needs %s > 0 (a VM to size)" % (_named(option), params[option],
                                                                        _named("vm_vcpus")))
    return problems


def claim_size(params: dict[str, Any], topology: dict[str, Any]) -> tuple[int, str]:
    """``(CPUs of the claim, the report's sizing line)``; 0 CPUs when the topology has none to give."""
    vcpus = params.get("vm_vcpus") or 0
    if vcpus > 0:
        io_threads = params.get("vm_io_threads") or 0
        isolate = bool(params.get("vm_isolate_emulator_thread"))
        even = bool(params.get("vm_even_parity"))
        cpus = host_cpus(vcpus, io_threads, isolate, even)
        parts = ["%d vCPUs" % vcpus]
        if io_threads:
            parts.append("%d IO threads" % io_threads)
        emulator = emulator_thread_cpus(vcpus, io_threads, isolate, even)
        if isolate:
            parts.append("%d for the isolated emulator thread%s" % (emulator, " (even parity)" if even else ""))
        return cpus, ("claim sized for a VM by KubeVirt's formula (hostCPUs = vCPUs + IO threads + "
                      "emulator-thread CPUs): %s = %d host CPUs" % (" + ".join(parts), cpus))
    if (params.get("cpus") or 0) > 0:
        return int(params["cpus"]), "claim of %d CPUs (dra_cpu_verify_cpus)" % params["cpus"]
    largest = int(topology.get("max_vm_host_cpus") or 0)
    return largest, ("claim of %d CPUs, the largest NUMA-aligned claim the driver publishes "
                     "(max_vm_host_cpus)" % largest)


NO_CPUS = ("the driver publishes no allocatable CPUs (max_vm_host_cpus is 0): check dra_cpu_reserved_cpus "
           "against the nodes' CPUs")
