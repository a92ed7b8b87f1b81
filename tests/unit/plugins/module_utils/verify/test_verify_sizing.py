# SPDX-License-Identifier: Apache-2.0
"""verify's claim size: a VM by KubeVirt's formula (VEP 152: hostCPUs = vCPUs + IO threads + emulator-thread
CPUs), an explicit size, or the topology's largest NUMA-aligned claim; contradictions refused naming the
option, its role variable and the value."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import sizing as S

BASE = dict(cpus=0, vm_vcpus=0, vm_io_threads=0, vm_isolate_emulator_thread=False, vm_even_parity=False, timeout=120)
TOPO = {"max_vm_host_cpus": 6}


def p(**kw):
    return dict(BASE, **kw)


def test_default_is_the_largest_numa_aligned_claim():
    cpus, line = S.claim_size(p(), TOPO)
    assert cpus == 6 and "largest NUMA-aligned claim" in line and "max_vm_host_cpus" in line


def test_explicit_cpus():
    assert S.claim_size(p(cpus=3), TOPO) == (3, "claim of 3 CPUs (dra_cpu_verify_cpus)")


@pytest.mark.parametrize("vm, want", [
    # the VEP's example: 8 cores + isolated emulator thread + 2 supplemental IO threads = 11
    (dict(vm_vcpus=8, vm_isolate_emulator_thread=True, vm_io_threads=2), 11),
    (dict(vm_vcpus=4), 4),
    (dict(vm_vcpus=4, vm_isolate_emulator_thread=True), 5),
    # KubeVirt's own tests: 6 vCPUs + 2 IO threads + even parity = 10, 5 + 2 + even parity = 8
    (dict(vm_vcpus=6, vm_io_threads=2, vm_isolate_emulator_thread=True, vm_even_parity=True), 10),
    (dict(vm_vcpus=5, vm_io_threads=2, vm_isolate_emulator_thread=True, vm_even_parity=True), 8),
])
def test_a_vm_is_sized_by_kubevirts_formula(vm, want):
    cpus, line = S.claim_size(p(**vm), TOPO)
    assert cpus == want
    assert line.startswith("claim sized for a VM by KubeVirt's formula") and line.endswith("= %d host CPUs" % want)


def test_vm_line_names_each_part():
    line = S.claim_size(p(vm_vcpus=8, vm_isolate_emulator_thread=True, vm_io_threads=2), TOPO)[1]
    assert "8 vCPUs + 2 IO threads + 1 for the isolated emulator thread = 11 host CPUs" in line


def test_no_cpus_published():
    assert S.claim_size(p(), {"max_vm_host_cpus": 0})[0] == 0
    assert "max_vm_host_cpus is 0" in S.NO_CPUS


@pytest.mark.parametrize("kw, words", [
    (dict(cpus=-1), "cpus (dra_cpu_verify_cpus): -1 is negative"),
    (dict(vm_vcpus=-2), "vm_vcpus (dra_cpu_verify_vm_vcpus): -2 is negative"),
    (dict(timeout=0), "timeout (dra_cpu_verify_timeout): 0 is not positive"),
    (dict(cpus=3, vm_vcpus=2), "cpus (dra_cpu_verify_cpus): 3 and vm_vcpus (dra_cpu_verify_vm_vcpus): 2 both size"),
    (dict(vm_io_threads=2), "vm_io_threads (dra_cpu_verify_vm_io_threads): 2 needs vm_vcpus"),
    (dict(vm_isolate_emulator_thread=True), "vm_isolate_emulator_thread (dra_cpu_verify_vm_isolate_emulator_thread): True needs"),
])
def test_bad_sizes_are_refused_naming_the_variable_and_value(kw, words):
    problems = S.check_size_params(p(**kw))
    assert any(words in m for m in problems), problems


def test_good_sizes_pass():
    assert S.check_size_params(p()) == []
    assert S.check_size_params(p(vm_vcpus=4, vm_io_threads=1, vm_isolate_emulator_thread=True)) == []
