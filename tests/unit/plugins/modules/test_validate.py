# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.modules import validate

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import run_module

ARGS = {
    "reserved_cpus": "0-1",
    "chart": "oci://127.0.0.1:5000/dra-driver-cpu/charts/dra-driver-cpu",
    "chart_version": "0.2.0",
    "namespace": "dra-driver-cpu",
    "release_name": "dra-driver-cpu",
    "helm_timeout": "5m",
    "topology_timeout": "300",
    "uninstall_timeout": 120,
    "helm_version": "v3.16.4",
    "helm_mirror": "https://get.helm.sh",
    "num_vcpu": "12",
    "num_numa_nodes": "2",
    "group_by": "numanode",
    "chart_values": {"args": {"logLevel": 6}},
    "preflight_ignore": [],
}


def test_valid_inputs():
    result, failed = run_module(validate, ARGS)
    assert failed is False
    assert result["changed"] is False
    # only what later stages read: the run and the settings
    assert set(result) - {"invocation"} == {"changed", "run", "settings"}
    assert result["settings"]["chart_values"] == {"args": {"logLevel": 6}}
    assert result["settings"]["helm_timeout"] == "5m0s"
    assert result["settings"]["topology_timeout"] == 300
    assert result["settings"]["num_vcpu"] == 12


def test_defaults_only():
    result, failed = run_module(validate, {})
    assert failed is False
    assert result["settings"]["reserved_cpus"] == "" and result["settings"]["cpu_device_mode"] == "grouped"
    assert result["settings"]["state"] == "present"


def test_all_errors_reported():
    args = dict(ARGS, reserved_cpus="3-1", namespace="Bad_NS", topology_timeout="0", chart_version="0.3")
    result, failed = run_module(validate, args)
    assert failed is True
    assert result["msg"].startswith("4 invalid input(s): dra_cpu_reserved_cpus: '3-1' is not a valid cpuset "
                                    "(range 3-1 is descending); expected a list like 0-1,4,6-7; ")
    assert [e.split(":")[0] for e in result["errors"]] == [
        "dra_cpu_reserved_cpus", "dra_cpu_chart_version", "dra_cpu_namespace", "dra_cpu_topology_timeout"]


def test_check_mode_same_result():
    result, failed = run_module(validate, dict(ARGS, _ansible_check_mode=True))
    assert failed is False
    assert result == run_module(validate, ARGS)[0]


def test_the_gate_off_skips_everything_else_and_says_why():
    # enabled=false (dra_cpu_enabled, KUBEVIRT_USE_DRA_CPU not 'true'): even bad inputs are not looked at
    result, failed = run_module(validate, dict(ARGS, enabled=False, reserved_cpus="3-1", namespace="Bad_NS"))
    assert failed is False
    assert result["skipped"] is True and result["run"] == "skip" and result["changed"] is False
    assert result["msg"] == "KUBEVIRT_USE_DRA_CPU is not 'true': skipping dra-driver-cpu"
    assert "settings" not in result


def test_run_is_the_state_when_the_gate_is_on():
    assert run_module(validate, ARGS)[0]["run"] == "present"
    assert run_module(validate, dict(ARGS, state="ABSENT"))[0]["run"] == "absent"
