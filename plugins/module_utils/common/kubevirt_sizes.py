# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""A VM's size in KubeVirt's terms (pure): KubeVirt's claim-size rule for ``CPUsWithDRA``,
``hostCPUs = vCPUs + IO threads + emulator-thread CPUs``, and the largest VM a number of host CPUs
holds. The rule and its sources: docs/upstream.md ("KubeVirt's CPUsWithDRA design as merged") and
docs/internals.md ("Why the settings and the chart values are as they are").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type


def emulator_thread_cpus(vcpus: int, io_threads: int = 0, isolate_emulator_thread: bool = False,
                         even_parity: bool = False) -> int:
    """The host CPUs KubeVirt adds for the emulator thread: 0 without ``isolateEmulatorThread``,
    else 1, or 2 with even parity when ``vcpus + io_threads`` is even (the claim then stays even)."""
    if not isolate_emulator_thread:
        return 0
    if even_parity and (vcpus + io_threads) % 2 == 0:
        return 2
    return 1


def host_cpus(vcpus: int, io_threads: int = 0, isolate_emulator_thread: bool = False,
              even_parity: bool = False) -> int:
    """``hostCPUs = vCPUs + IO threads + emulator-thread CPUs``: the fewest CPUs a claim for this VM
    must hold (virt-controller refuses a smaller one). ``vcpus`` is cores x sockets x threads,
    ``io_threads`` the ``ioThreads.supplementalPoolThreadCount``. Raises ValueError on a negative
    count or a VM of no vCPU."""
    if vcpus < 1 or io_threads < 0:
        raise ValueError("a VM has at least 1 vCPU and no negative IO threads (got %d vCPUs, %d IO threads)"
                         % (vcpus, io_threads))
    return vcpus + io_threads + emulator_thread_cpus(vcpus, io_threads, isolate_emulator_thread, even_parity)


def largest_vm(cpus: int, io_threads: int = 0, isolate_emulator_thread: bool = False,
               even_parity: bool = False) -> int:
    """The most vCPUs of a VM whose claim fits in ``cpus`` host CPUs (``host_cpus(v, ...) <= cpus``);
    0 when not even a 1-vCPU VM fits."""
    # host_cpus(v) >= v + io_threads, and the emulator thread adds at most 2: three tries at most
    vcpus = cpus - io_threads
    while vcpus >= 1:
        if host_cpus(vcpus, io_threads, isolate_emulator_thread, even_parity) <= cpus:
            return vcpus
        vcpus -= 1
    return 0


def vm_sizes(cpus: int) -> dict[str, int]:
    """The largest VM (vCPUs, no IO threads) a claim of ``cpus`` host CPUs holds, three ways:
    ``vcpus`` (the emulator thread shares the vCPUs' CPUs), ``isolated_emulator_thread``
    (``isolateEmulatorThread``) and ``even_parity`` (``isolateEmulatorThread`` with the even-parity
    annotation). Each supplemental IO thread takes one host CPU off each."""
    return {
        "vcpus": largest_vm(cpus),
        "isolated_emulator_thread": largest_vm(cpus, isolate_emulator_thread=True),
        "even_parity": largest_vm(cpus, isolate_emulator_thread=True, even_parity=True),
    }
