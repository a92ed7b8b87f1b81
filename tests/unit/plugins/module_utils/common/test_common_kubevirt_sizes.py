# SPDX-License-Identifier: Apache-2.0
"""KubeVirt's claim size (hostCPUs = vCPUs + IO threads + emulator-thread CPUs) and the largest VM a
claim holds, with the numbers of VEP 152 and of kubevirt/kubevirt's own tests of the rule."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common import kubevirt_sizes as k


@pytest.mark.parametrize("vcpus, io_threads, isolate, parity, host", [
    (4, 0, False, False, 4),
    (4, 0, True, False, 5),
    # VEP 152: 8 cores + an isolated emulator thread + 2 supplemental IO threads = a claim of 11
    (8, 2, True, False, 11),
    # kubevirt's renderresources tests: 5 vCPUs + 2 IO threads, even parity, odd total -> 8
    (5, 2, True, True, 8),
    # ... 6 vCPUs + 2 IO threads, even parity, even total -> 10
    (6, 2, True, True, 10),
    (4, 0, True, True, 6),
    (3, 0, True, True, 4),
    # even parity without isolateEmulatorThread: no emulator CPU at all
    (4, 0, False, True, 4),
])
def test_host_cpus(vcpus, io_threads, isolate, parity, host):
    assert k.host_cpus(vcpus, io_threads, isolate, parity) == host


@pytest.mark.parametrize("vcpus, io_threads", [(0, 0), (-1, 0), (2, -1)])
def test_host_cpus_refuses_a_vm_of_no_vcpu(vcpus, io_threads):
    with pytest.raises(ValueError):
        k.host_cpus(vcpus, io_threads)


@pytest.mark.parametrize("cpus, expected", [
    # (vcpus, isolated_emulator_thread, even_parity)
    (0, (0, 0, 0)),
    (1, (1, 0, 0)),
    (2, (2, 1, 1)),
    (3, (3, 2, 1)),
    (4, (4, 3, 3)),
    (5, (5, 4, 3)),
    (6, (6, 5, 5)),     # kubevirtci's default node: cell 1 of 12 CPUs over 2 cells, 0-1 reserved
    (10, (10, 9, 9)),
    (11, (11, 10, 9)),
    (32, (32, 31, 31)),
])
def test_vm_sizes(cpus, expected):
    sizes = k.vm_sizes(cpus)
    assert (sizes["vcpus"], sizes["isolated_emulator_thread"], sizes["even_parity"]) == expected


def test_largest_vm_is_the_inverse_of_host_cpus():
    for cpus in range(0, 40):
        for io_threads in range(0, 4):
            for isolate in (False, True):
                for parity in (False, True):
                    v = k.largest_vm(cpus, io_threads, isolate, parity)
                    if v:
                        assert k.host_cpus(v, io_threads, isolate, parity) <= cpus
                    assert k.host_cpus(v + 1, io_threads, isolate, parity) > cpus


def test_io_threads_take_one_host_cpu_each():
    assert k.largest_vm(11, io_threads=2, isolate_emulator_thread=True) == 8
    # 7 vCPUs + 2 IO threads is odd: 1 emulator CPU makes 10 (8 + 2 would be even and take 2, 12)
    assert k.largest_vm(10, io_threads=2, isolate_emulator_thread=True, even_parity=True) == 7
    assert k.largest_vm(2, io_threads=2) == 0


def test_emulator_thread_cpus():
    assert k.emulator_thread_cpus(4) == 0
    assert k.emulator_thread_cpus(4, isolate_emulator_thread=True) == 1
    assert k.emulator_thread_cpus(4, isolate_emulator_thread=True, even_parity=True) == 2
    assert k.emulator_thread_cpus(5, isolate_emulator_thread=True, even_parity=True) == 1
    assert k.emulator_thread_cpus(5, 1, isolate_emulator_thread=True, even_parity=True) == 2
