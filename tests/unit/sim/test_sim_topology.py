import json

import pytest

import sim_cpuset as cpuset
from sim_faults import parse_driver_mode, parse_pod_fault
from sim_node_specs import build_node_specs, node_address
from sim_topology import SpecError, build_topology


def test_cpuset_roundtrip():
    assert cpuset.parse("0-1,8,10-11") == [0, 1, 8, 10, 11]
    assert cpuset.parse("") == []
    assert cpuset.format([11, 10, 0, 1, 8]) == "0-1,8,10-11"
    for bad in ("3-1", "a", "1,,2", "-1"):
        with pytest.raises(cpuset.CpusetError):
            cpuset.parse(bad)


def test_kubevirtci_split_12_over_2():
    t = build_topology(cpus=12, numa_nodes=2)
    assert t.cells == {0: [0, 1, 2, 3, 4, 5], 1: [6, 7, 8, 9, 10, 11]}
    assert t.smt_control_text == "notsupported" and t.sockets == 1
    assert all(c.socket == 0 and c.l3 == 0 for c in t.cpus)
    assert [c.core_id for c in t.cpus] == list(range(12))


def test_uneven_split_refused():
    with pytest.raises(SpecError):
        build_topology(cpus=10, numa_nodes=3)


def test_smt_siblings_adjacent_and_sockets():
    t = build_topology(cpus=16, numa_nodes=2, sockets=2, threads_per_core=2)
    by = t.by_id()
    assert t.smt_control_text == "on"
    assert by[0].core == by[1].core == 0 and by[2].core == 1
    assert [by[i].socket for i in (0, 7, 8, 15)] == [0, 0, 1, 1]
    assert by[8].core_id == 0 and by[15].core_id == 3   # core_id restarts per socket
    assert t.cells[1] == list(range(8, 16))
    assert by[9].l3 == 1


def test_core_straddling_cells_refused():
    with pytest.raises(SpecError, match="straddles"):
        build_topology(cpus=6, numa_nodes=2, threads_per_core=2)   # cells 0-2 / 3-5 split core 1


def test_explicit_asymmetric_cells():
    t = build_topology(cells=["0-3", "4-11"])
    assert t.cells == {0: [0, 1, 2, 3], 1: list(range(4, 12))}
    with pytest.raises(SpecError):
        build_topology(cells=["0-3", "3-11"])
    with pytest.raises(SpecError):
        build_topology(cells=["0-3", "5-11"])


def test_fault_parsers():
    assert parse_pod_fault(None) == ("none", 0)
    assert parse_pod_fault("delay:2.5") == ("delay", 2.5)
    assert parse_pod_fault("crashloop") == ("crashloop", 0)
    assert parse_driver_mode("partial:1") == ("partial", 1)
    assert parse_driver_mode("bump:5") == ("bump", 5)
    assert parse_driver_mode("none") == ("none", 0)
    for bad in ("partial:x", "later", "partial:1.5"):
        with pytest.raises(SpecError):
            parse_driver_mode(bad)
    with pytest.raises(SpecError):
        parse_pod_fault("sometimes")


def test_node_specs_defaults_and_overrides():
    env = {"CLUSTER_NODES": "3", "KUBEVIRT_NUM_VCPU": "12", "KUBEVIRT_NUM_NUMA_NODES": "2",
           "CLUSTER_NODE_CIDR": "10.213.0.0/16",
           "CLUSTER_NODE_OVERRIDES": json.dumps({
               "node02": {"cpu_manager_policy": "none", "container_runtime": "containerd://1.7.27",
                          "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}], "pod_fault": "never"},
               "node03": {"cells": ["0-1", "2-7"], "driver_mode": "delay:3"}})}
    s = build_node_specs(env)
    assert [x.name for x in s] == ["node01", "node02", "node03"]
    assert [x.address for x in s] == ["10.213.1.1", "10.213.1.2", "10.213.1.3"]
    assert s[0].cpu_manager_policy == "none" and s[0].kubelet_config()["cpuManagerPolicy"] == "none"
    assert s[0].container_runtime == "cri-o://1.36.1" and s[0].kubelet_version == "v1.36.3"
    assert s[1].container_runtime == "containerd://1.7.27" and s[1].pod_fault == "never"
    # node03 keeps the kubevirtci worker default: static with kube/system reserved 500m each
    assert s[2].cpu_manager_policy == "static"
    cfg = s[2].kubelet_config()
    assert cfg["kubeReserved"] == {"cpu": "500m"} and cfg["systemReserved"] == {"cpu": "500m"}
    assert s[2].allocatable_cpu_millis() == 7000 and s[0].allocatable_cpu_millis() == 12000
    assert s[2].topology.cells == {0: [0, 1], 1: list(range(2, 8))}


def test_node_specs_errors():
    with pytest.raises(SpecError, match="node05"):
        build_node_specs({"CLUSTER_NODES": "2", "CLUSTER_NODE_OVERRIDES": '{"node05": {}}'})
    with pytest.raises(SpecError, match="unknown override"):
        build_node_specs({"CLUSTER_NODE_OVERRIDES": '{"node01": {"cpu": 4}}'})
    with pytest.raises(SpecError, match="node01"):
        build_node_specs({"KUBEVIRT_NUM_VCPU": "7", "KUBEVIRT_NUM_NUMA_NODES": "2"})


def test_node_address_scales():
    assert node_address("10.213.0.0/16", 1000) == "10.213.4.232"
