"""A real node's directory (tests/cluster/cluster_real_node_config.py node_config): what its kubelet,
runtime and run.sh are told. The cgroups and the CPU hardware's mounts are left out (they need the host)."""
import json
import os
import sys

import pytest
import yaml

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
for d in (CLUSTER_DIR, os.path.join(CLUSTER_DIR, "sim")):
    if d not in sys.path:
        sys.path.insert(0, d)

import cluster_node_hw  # noqa: E402  pylint: disable=wrong-import-position
import cluster_real_node_config as rnc  # noqa: E402  pylint: disable=wrong-import-position
import cluster_state  # noqa: E402  pylint: disable=wrong-import-position

DIRS = {k: f"/b/{k}" for k in ("kubelet", "containerd", "runc", "cni", "crane", "driver", "crio")}


@pytest.fixture(name="configure")
def fixture_configure(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster_state, "STATE", str(tmp_path))
    monkeypatch.setattr(rnc, "STATE", str(tmp_path))
    ports = iter(range(42000, 42100))
    monkeypatch.setattr(rnc, "free_port", lambda: next(ports))
    monkeypatch.setattr(rnc, "_make_cgroups", lambda name: f"/dracpu-test-{name}")
    monkeypatch.setattr(rnc, "real_cpus", lambda: "0-1")
    monkeypatch.setattr(rnc, "kubeconfig", lambda server, token, user: f"{server} {user}\n")
    monkeypatch.setattr(rnc, "lay_out", lambda nd, spec: (cluster_node_hw.topology(spec), "# hw mounts\n"))

    def configure(sim_nodes="0", overrides=None, gates="", index=0, shared_netns=False):
        settings = dict(cluster_state.KNOBS, CLUSTER_NODES=sim_nodes, CLUSTER_FEATURE_GATES=gates,
                        CLUSTER_REAL_NODE_OVERRIDES=json.dumps(overrides or {}))
        info = {"host_ip": "10.213.0.1", "ports": {"registry": 5000, "apiserver": 6443},
                "node_cidr": "10.213.0.0/16", "settings": settings, "apiserver": "https://127.0.0.1:6443"}
        name = f"real{index + 1:02d}"
        node = rnc.node_config(name, index, DIRS, info, "token", cluster_node_hw.node_spec(settings, name),
                               shared_netns=shared_netns)
        return node, tmp_path / "real-nodes" / name
    return configure


def test_a_containerd_node_alone_in_a_cluster_of_real_nodes(configure):
    node, nd = configure()
    assert {k: node[k] for k in ("ip", "subnet", "runtime", "cpus", "cells", "registry")} == {
        "ip": "10.213.249.1", "subnet": "10.213.250.0/24", "runtime": "containerd", "cpus": 12, "cells": 2,
        "registry": "10.213.0.1:5000"}
    kubelet = yaml.safe_load((nd / "kubelet.yaml").read_text())
    assert kubelet["registerWithTaints"] == []   # no simulated nodes: every pod may land here
    assert "featureGates" not in kubelet
    assert (kubelet["address"], kubelet["podCIDR"], kubelet["cgroupRoot"]) == ("10.213.249.1", "10.213.250.0/24",
                                                                               "/dracpu-test-real01")
    assert kubelet["containerRuntimeEndpoint"] == "unix:///run/containerd/containerd.sock"
    assert 'config_path = "%s/certs.d"' % nd in (nd / "containerd.toml").read_text()
    assert "--driver-bind-host" not in (nd / "runc-cpumap").read_text()
    assert not (nd / "crio.conf").exists()
    cni = json.loads((nd / "cni/net.d/10-bridge.conflist").read_text())
    assert cni["plugins"][0]["bridge"] == node["bridge"]
    run_sh = (nd / "run.sh").read_text()
    assert "--hostname-override=real01 --node-ip=10.213.249.1" in run_sh
    assert f"containerd --config {nd}/containerd.toml" in run_sh and "# hw mounts\n" in run_sh
    assert f"-ge {rnc.SOCKET_WAIT * 10} ]" in run_sh
    assert os.stat(nd / "run.sh").st_mode & 0o777 == 0o755


def test_beside_simulated_nodes_the_real_node_taint_and_the_feature_gates(configure):
    _unused, nd = configure(sim_nodes="2", gates="A=true, B=false", index=1, shared_netns=True)
    kubelet = yaml.safe_load((nd / "kubelet.yaml").read_text())
    assert kubelet["registerWithTaints"] == [rnc.TAINT]
    assert kubelet["featureGates"] == {"A": True, "B": False}
    assert kubelet["address"] == "10.213.249.2" and kubelet["podCIDR"] == "10.213.251.0/24"
    assert "--driver-bind-host 10.213.249.2 " in (nd / "runc-cpumap").read_text()


def test_a_cri_o_node_gets_its_own_files_and_socket(configure):
    node, nd = configure(overrides={"real01": {"runtime": "cri-o"}})
    assert node["runtime"] == "cri-o"
    for f in ("crio.conf", "registries.conf", "storage.conf", "crio/policy.json"):
        assert (nd / f).exists(), f
    assert "--restrict-oom-score-adj true --drop-hugepage-limits true" in (nd / "runc-cpumap").read_text()
    run_sh = (nd / "run.sh").read_text()
    assert f"crio --config {nd}/crio.conf" in run_sh and "mkdir -p /run/crio/ns" in run_sh
    kubelet = yaml.safe_load((nd / "kubelet.yaml").read_text())
    assert kubelet["containerRuntimeEndpoint"] == f"unix://{rnc.CRIO_SOCK}"
