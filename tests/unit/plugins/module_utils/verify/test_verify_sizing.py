# SPDX-License-Identifier: Apache-2.0
"""The VMI verify stands for and its claim size (VEP 152 as merged: hostCPUs = cores x sockets x threads + IO
threads + emulator-thread CPUs), by default the largest VM that fits the largest published claim;
contradictions refused naming the option, its role variable and the value."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import sizing as S

BASE = dict(cpus=0, vm_cores=0, vm_sockets=1, vm_threads=1, vm_vcpus=0, vm_io_threads=0,
            vm_isolate_emulator_thread=False, vm_even_parity=False, timeout=120)
TOPO = {"max_vm_host_cpus": 6}


def p(**kw):
    return dict(BASE, **kw)


def test_default_is_the_largest_vm_that_fits():
    vm = S.vmi(p(), TOPO)
    assert (vm["cores"], vm["vcpus"], vm["host_cpus"]) == (6, 6, 6)
    line = S.sizing_line("default/dra-cpu-verify", vm)
    assert line == ("VMI default/dra-cpu-verify (dedicatedCpuPlacement), the largest VM that fits the largest claim "
                    "the driver publishes (max_vm_host_cpus 6): hostCPUs = 6 vCPUs (cores 6 x sockets 1 x threads 1) = 6")


def test_the_largest_vm_leaves_room_for_the_extras():
    vm = S.vmi(p(vm_isolate_emulator_thread=True, vm_io_threads=1), TOPO)
    assert (vm["vcpus"], vm["emulator_thread_cpus"], vm["host_cpus"]) == (4, 1, 6)
    # even parity: 5 vCPUs would need 5 + 0 + 1 = 6, and is odd: fine
    vm = S.vmi(p(vm_isolate_emulator_thread=True, vm_even_parity=True), TOPO)
    assert (vm["vcpus"], vm["host_cpus"]) == (5, 6)
    # 2 threads a core: whole cores only; 2 cores x 2 threads + even parity (4 is even: 2) = 6
    vm = S.vmi(p(vm_threads=2, vm_isolate_emulator_thread=True, vm_even_parity=True), TOPO)
    assert (vm["cores"], vm["vcpus"], vm["host_cpus"]) == (2, 4, 6)
    # 5 host CPUs: 5 // 2 = 2 cores x 2 threads would need 4 + 2 = 6; one core less fits (2 + 2 = 4)
    vm = S.vmi(p(vm_threads=2, vm_isolate_emulator_thread=True, vm_even_parity=True), {"max_vm_host_cpus": 5})
    assert (vm["cores"], vm["vcpus"], vm["host_cpus"]) == (1, 2, 4)


def test_explicit_cpus_is_a_vm_of_that_many_cores():
    vm = S.vmi(p(cpus=3), TOPO)
    assert (vm["cores"], vm["host_cpus"], vm["sized_by"]) == (3, 3, "a VM of dra_cpu_verify_cpus cores")


@pytest.mark.parametrize("vm, want", [
    # the VEP's example: 8 cores + isolated emulator thread + 2 supplemental IO threads = 11
    (dict(vm_cores=8, vm_isolate_emulator_thread=True, vm_io_threads=2), 11),
    (dict(vm_cores=4), 4),
    (dict(vm_cores=2, vm_sockets=2, vm_threads=2), 8),
    (dict(vm_cores=4, vm_isolate_emulator_thread=True), 5),
    # KubeVirt's own tests: 6 vCPUs + 2 IO threads + even parity = 10, 5 + 2 + even parity = 8
    (dict(vm_cores=6, vm_io_threads=2, vm_isolate_emulator_thread=True, vm_even_parity=True), 10),
    (dict(vm_cores=5, vm_io_threads=2, vm_isolate_emulator_thread=True, vm_even_parity=True), 8),
    # the deprecated vm_vcpus is cores on one socket and thread
    (dict(vm_vcpus=4, vm_isolate_emulator_thread=True), 5),
])
def test_a_vm_is_sized_by_kubevirts_formula(vm, want):
    got = S.vmi(p(**vm), TOPO)
    assert got["host_cpus"] == want
    assert S.sizing_line("ns/vm", got).endswith("= %d" % want)


def test_the_line_names_each_part():
    line = S.sizing_line("ns/vm", S.vmi(p(vm_cores=8, vm_isolate_emulator_thread=True, vm_io_threads=2), TOPO))
    assert ("as given (dra_cpu_verify_vm_cores): hostCPUs = 8 vCPUs (cores 8 x sockets 1 x threads 1) + 2 supplemental "
            "IO threads + 1 for the isolated emulator thread = 11") in line
    line = S.sizing_line("ns/vm", S.vmi(p(vm_cores=6, vm_isolate_emulator_thread=True, vm_even_parity=True), TOPO))
    assert "+ 2 for the isolated emulator thread (even parity) = 8" in line


def test_nothing_fits():
    assert S.vmi(p(), {"max_vm_host_cpus": 0})["host_cpus"] == 0
    assert S.vmi(p(vm_isolate_emulator_thread=True), {"max_vm_host_cpus": 1})["host_cpus"] == 0
    assert "max_vm_host_cpus 0" in S.NO_CPUS % 0


@pytest.mark.parametrize("kw, words", [
    (dict(cpus=-1), "cpus (dra_cpu_verify_cpus): -1 is negative"),
    (dict(vm_cores=-2), "vm_cores (dra_cpu_verify_vm_cores): -2 is negative"),
    (dict(vm_sockets=0), "vm_sockets (dra_cpu_verify_vm_sockets): 0 is below 1"),
    (dict(vm_threads=0), "vm_threads (dra_cpu_verify_vm_threads): 0 is below 1"),
    (dict(timeout=0), "timeout (dra_cpu_verify_timeout): 0 is not positive"),
    (dict(cpus=3, vm_cores=2), "cpus (dra_cpu_verify_cpus): 3 and vm_cores (dra_cpu_verify_vm_cores): 2 both size"),
    (dict(cpus=3, vm_io_threads=2), "cpus (dra_cpu_verify_cpus): 3 and vm_io_threads (dra_cpu_verify_vm_io_threads): 2"),
    (dict(cpus=3, vm_sockets=2), "and vm_sockets (dra_cpu_verify_vm_sockets): 2 both size"),
    (dict(vm_cores=3, vm_vcpus=2), "vm_cores (dra_cpu_verify_vm_cores): 3 and vm_vcpus (dra_cpu_verify_vm_vcpus): 2 both"),
    (dict(vm_vcpus=4, vm_threads=2), "vm_vcpus (dra_cpu_verify_vm_vcpus): 4 counts every vCPU on one socket"),
])
def test_bad_sizes_are_refused_naming_the_variable_and_value(kw, words):
    problems = S.check_size_params(p(**kw))
    assert any(words in m for m in problems), problems


def test_good_sizes_pass():
    assert S.check_size_params(p()) == []
    assert S.check_size_params(p(vm_cores=4, vm_io_threads=1, vm_isolate_emulator_thread=True)) == []
    assert S.check_size_params(p(vm_io_threads=1, vm_sockets=2)) == []
    assert S.check_size_params(p(cpus=2)) == []


def test_the_sizing_has_the_declared_shape():
    """vmi returns exactly the keys of sizing.VmSizing, with the types it declares."""
    vm = S.vmi(p(vm_isolate_emulator_thread=True), TOPO)
    assert set(vm) == S.VmSizing.__required_keys__
    for key, kind in (("cores", int), ("vcpus", int), ("host_cpus", int), ("sized_by", str),
                      ("isolate_emulator_thread", bool)):
        assert isinstance(vm[key], kind), key
