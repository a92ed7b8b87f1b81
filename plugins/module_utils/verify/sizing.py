# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The VMI verify stands for, and the host CPUs its claim asks for (pure; no cluster).

Owns the VM's CPU fields, KubeVirt's claim size for them (``common/kubevirt_sizes.host_cpus``) and the
three ways a size is given, in this order: ``vm_cores`` (or the deprecated ``vm_vcpus``), else ``cpus``
(a VM of that many cores), else the largest VM that fits ``max_vm_host_cpus``. ``cpus`` with a VM
field, a negative count or a socket/thread count below 1 is refused, naming both. The result's shape
is ``VmSizing``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Mapping
from typing import Any, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.kubevirt_sizes import (
    emulator_thread_cpus,
    host_cpus,
    largest_vm,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams


class VmSizing(TypedDict):
    """The VMI verify stands for (``vmi``) and its claim's ``host_cpus`` (0: no VM of that shape fits);
    ``sized_by`` says which of the three ways sized it."""

    cores: int
    sockets: int
    threads: int
    vcpus: int
    io_threads: int
    isolate_emulator_thread: bool
    even_parity: bool
    sized_by: str
    emulator_thread_cpus: int
    host_cpus: int


# option -> the role variable that sets it (messages name both)
VARIABLES = {
    "cpus": "dra_cpu_verify_cpus",
    "vm_cores": "dra_cpu_verify_vm_cores",
    "vm_sockets": "dra_cpu_verify_vm_sockets",
    "vm_threads": "dra_cpu_verify_vm_threads",
    "vm_vcpus": "dra_cpu_verify_vm_vcpus",
    "vm_io_threads": "dra_cpu_verify_vm_io_threads",
    "vm_isolate_emulator_thread": "dra_cpu_verify_vm_isolate_emulator_thread",
    "vm_even_parity": "dra_cpu_verify_vm_even_parity",
    "timeout": "dra_cpu_verify_timeout",
}
VM_FIELDS = ("vm_cores", "vm_vcpus", "vm_io_threads", "vm_isolate_emulator_thread", "vm_even_parity")


def named(option: str) -> str:
    """``option (role variable)``, as every message of verify names an input."""
    return "%s (%s)" % (option, VARIABLES[option]) if option in VARIABLES else option


def _int(params: ModuleParams, option: str, default: int = 0) -> int:
    value = params.get(option)
    return default if value is None else int(value)


def check_size_params(params: ModuleParams) -> list[str]:
    """Problems with the size options, each naming the option, its role variable and the value."""
    problems = []
    for option in ("cpus", "vm_cores", "vm_vcpus", "vm_io_threads"):
        if _int(params, option) < 0:
            problems.append("%s: %s is negative" % (named(option), params[option]))
    for option in ("vm_sockets", "vm_threads"):
        if _int(params, option, 1) < 1:
            problems.append("%s: %s is below 1" % (named(option), params[option]))
    if (params.get("timeout") or 0) <= 0:
        problems.append("%s: %s is not positive" % (named("timeout"), params.get("timeout")))
    if _int(params, "vm_cores") > 0 and _int(params, "vm_vcpus") > 0:
        problems.append("%s: %s and %s: %s both give the VM's cores: give vm_cores only (vm_vcpus is deprecated)"
                        % (named("vm_cores"), params["vm_cores"], named("vm_vcpus"), params["vm_vcpus"]))
    if _int(params, "vm_vcpus") > 0 and (_int(params, "vm_sockets", 1) > 1 or _int(params, "vm_threads", 1) > 1):
        problems.append("%s: %s counts every vCPU on one socket and thread: give %s with %s/%s instead"
                        % (named("vm_vcpus"), params["vm_vcpus"], named("vm_cores"), "vm_sockets", "vm_threads"))
    if _int(params, "cpus") > 0:
        given = [o for o in VM_FIELDS + ("vm_sockets", "vm_threads")
                 if params.get(o) and (o not in ("vm_sockets", "vm_threads") or _int(params, o, 1) > 1)]
        if given:
            problems.append("%s: %s and %s: %s both size the claim: give the VM or the CPUs, not both"
                            % (named("cpus"), params["cpus"], named(given[0]), params[given[0]]))
    return problems


def vmi(params: ModuleParams, topology: Mapping[str, Any]) -> VmSizing:
    """The VMI's CPU fields and its claim size, from the ``dra_cpu_topology`` fact (a ``TopologyFact``;
    ``{}`` when there is none)."""
    sockets, threads = _int(params, "vm_sockets", 1), _int(params, "vm_threads", 1)
    io_threads = _int(params, "vm_io_threads")
    isolate, even = bool(params.get("vm_isolate_emulator_thread")), bool(params.get("vm_even_parity"))
    cores = _int(params, "vm_cores") or _int(params, "vm_vcpus")
    largest = int(topology.get("max_vm_host_cpus") or 0)
    if cores > 0:
        sized_by = "as given (%s)" % ("dra_cpu_verify_vm_cores" if params.get("vm_cores") else "dra_cpu_verify_vm_vcpus")
    elif _int(params, "cpus") > 0:
        cores, sized_by = _int(params, "cpus"), "a VM of dra_cpu_verify_cpus cores"
    else:
        per_core = sockets * threads
        cores = largest_vm(largest, io_threads, isolate, even) // per_core
        # fewer cores can leave room for the even-parity CPU the larger VM lacked
        while cores > 0 and host_cpus(cores * per_core, io_threads, isolate, even) > largest:
            cores -= 1
        sized_by = "the largest VM that fits the largest claim the driver publishes (max_vm_host_cpus %d)" % largest
    vcpus = cores * sockets * threads
    out: VmSizing = {"cores": cores, "sockets": sockets, "threads": threads, "vcpus": vcpus, "io_threads": io_threads,
                     "isolate_emulator_thread": isolate, "even_parity": even, "sized_by": sized_by,
                     "emulator_thread_cpus": emulator_thread_cpus(vcpus, io_threads, isolate, even) if vcpus else 0,
                     "host_cpus": host_cpus(vcpus, io_threads, isolate, even) if vcpus else 0}
    return out


def sizing_line(name: str, vm: VmSizing) -> str:
    """The report's line: the VMI verify stands for and hostCPUs' breakdown."""
    parts = ["%d vCPUs (cores %d x sockets %d x threads %d)" % (vm["vcpus"], vm["cores"], vm["sockets"], vm["threads"])]
    if vm["io_threads"]:
        parts.append("%d supplemental IO threads" % vm["io_threads"])
    if vm["isolate_emulator_thread"]:
        parts.append("%d for the isolated emulator thread%s" % (vm["emulator_thread_cpus"],
                                                                " (even parity)" if vm["emulator_thread_cpus"] == 2 else ""))
    return ("VMI %s (dedicatedCpuPlacement), %s: hostCPUs = %s = %d" % (name, vm["sized_by"], " + ".join(parts),
                                                                        vm["host_cpus"]))


NO_CPUS = ("no VM of that shape fits the largest claim the driver publishes (max_vm_host_cpus %d): check "
           "dra_cpu_reserved_cpus against the nodes' CPUs, or the VM's dra_cpu_verify_vm_* fields")
