"""A real node's spec and address (tests/cluster): cluster_node_hw.node_spec reads
CLUSTER_REAL_NODE_OVERRIDES, including the labels the kubelet registers the node with
(kubelet_flags: --node-labels, which molecule's multinode scenario selects the driver by) and its own
taints (register_taints: the kubelet's registerWithTaints), and refuses
what it cannot use, naming the node and the key; cluster_real_node_config.node_ip puts node i at 10.N.249.i
in the cluster's network namespace, apart from the simulated nodes' 10.N.1.x (sim_node_specs) and the
veth's two ends 10.N.0.1 and 10.N.0.2 (cluster_netns: what netns_up configures and ns_ip reads)."""
import json
import os
import sys

import pytest

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
for d in (CLUSTER_DIR, os.path.join(CLUSTER_DIR, "sim")):
    if d not in sys.path:
        sys.path.insert(0, d)

import cluster_netns  # noqa: E402  pylint: disable=wrong-import-position
import cluster_node_hw  # noqa: E402  pylint: disable=wrong-import-position
import cluster_crio  # noqa: E402  pylint: disable=wrong-import-position
import cluster_real_node_config  # noqa: E402  pylint: disable=wrong-import-position
import sim_node_specs  # noqa: E402  pylint: disable=wrong-import-position


def spec(overrides, name="real01"):
    return cluster_node_hw.node_spec({"CLUSTER_REAL_NODE_OVERRIDES": json.dumps(overrides)}, name)


def test_labels_become_the_kubelets_node_labels_flag():
    s = spec({"real01": {"labels": {"example.com/dra-cpu": "true", "a.example/b": "x"}}})
    assert cluster_node_hw.kubelet_flags(s) == ["--node-labels=a.example/b=x,example.com/dra-cpu=true"]


def test_no_labels_no_flag_and_the_defaults():
    s = spec({})
    assert cluster_node_hw.kubelet_flags(s) == []
    assert (s["cpus"], s["numa_nodes"], s["cpu_manager_policy"], s["labels"]) == (12, 2, "none", {})


@pytest.mark.parametrize("labels", [["x"], {"k": 1}, {"k": "a,b"}, {"": "v"}, {"k=v": "w"}])
def test_labels_that_are_not_names_to_strings_are_refused_naming_the_node(labels):
    with pytest.raises(cluster_node_hw.SpecError, match="real01: labels must be an object"):
        spec({"real01": {"labels": labels}})


def test_an_unknown_key_is_refused_naming_it_and_the_known_ones():
    with pytest.raises(cluster_node_hw.SpecError, match=r"real02: unknown key\(s\) gpus; known: .*labels"):
        spec({"real02": {"gpus": []}}, "real02")


def test_taints_are_registered_by_the_kubelet_as_given():
    taint = {"key": "dedicated", "value": "db", "effect": "NoExecute"}
    assert cluster_node_hw.register_taints(spec({"real01": {"taints": [taint]}})) == [taint]
    assert cluster_node_hw.register_taints(spec({})) == []


@pytest.mark.parametrize("taints", [{"key": "k"}, [{"key": "k"}], [{"key": "k", "effect": "NoRun"}],
                                    [{"key": "", "effect": "NoSchedule"}], [{"key": "k", "value": 1,
                                                                             "effect": "NoSchedule"}],
                                    [{"key": "k", "effect": "NoSchedule", "operator": "Exists"}]])
def test_taints_that_are_not_core_v1_taints_are_refused_naming_the_node(taints):
    with pytest.raises(cluster_node_hw.SpecError, match="real01: taints must be a list"):
        spec({"real01": {"taints": taints}})


def test_real_node_addresses_are_apart_from_the_simulated_ones():
    info = {"node_cidr": "10.213.0.0/16"}
    assert [cluster_real_node_config.node_ip(info, i) for i in range(3)] == ["10.213.249.1", "10.213.249.2", "10.213.249.3"]
    assert sim_node_specs.node_address("10.213.0.0/16", 1) == "10.213.1.1"


def test_the_veth_ends_are_the_node_networks_first_two_addresses_for_netns_up_and_ns_ip():
    host_end, ns_end = cluster_netns.veth_addresses("10.213.0.0/16")
    assert (str(host_end), str(ns_end)) == ("10.213.0.1", "10.213.0.2")
    assert cluster_netns.ns_ip({"node_cidr": "10.213.0.0/16"}) == "10.213.0.2"


def test_the_runtime_is_containerd_unless_the_spec_says_cri_o():
    assert spec({})["runtime"] == "containerd"
    assert spec({"real01": {"runtime": "cri-o"}})["runtime"] == "cri-o"
    with pytest.raises(cluster_node_hw.SpecError, match="real01: runtime 'crio' is not one of containerd, cri-o"):
        spec({"real01": {"runtime": "crio"}})


def test_kubevirtcis_worker_reservations_become_the_kubelets_and_replace_reserved_system_cpus():
    worker = spec({"real02": {"cpu_manager_policy": "static", "kube_reserved_cpu": "500m",
                              "system_reserved_cpu": "500m"}}, "real02")
    assert cluster_node_hw.kubelet_settings(worker) == {
        "cpuManagerPolicy": "static", "kubeReserved": {"cpu": "500m"}, "systemReserved": {"cpu": "500m"}}
    # static without them: CPU 0 reserved, as before
    assert cluster_node_hw.kubelet_settings(spec({"real01": {"cpu_manager_policy": "static"}})) == {
        "cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}
    assert cluster_node_hw.kubelet_settings(spec({})) == {"cpuManagerPolicy": "none"}
    with pytest.raises(cluster_node_hw.SpecError, match="real01: kube_reserved_cpu must be a CPU quantity"):
        spec({"real01": {"kube_reserved_cpu": 1}})


def test_a_cri_o_node_needs_conmon_and_says_how_to_get_it(tmp_path):
    specs = {"real01": spec({}), "real02": spec({"real02": {"runtime": "cri-o"}}, "real02")}
    problem = cluster_crio.crio_problem(specs, conmon=str(tmp_path / "conmon"))
    assert "real02 run CRI-O" in problem and "make deps" in problem and "real01" not in problem
    assert cluster_crio.crio_problem({"real01": spec({})}, conmon=str(tmp_path / "conmon")) is None


def test_a_cri_o_nodes_registries_conf_mirrors_the_chart_and_pause_registries():
    text = cluster_crio.registries_conf("10.213.0.1:5000")
    for name in ("registry.k8s.io", "us-central1-docker.pkg.dev", "docker.io"):
        assert f'prefix = "{name}"' in text
    assert text.count('location = "10.213.0.1:5000"') == len(cluster_crio.MIRRORED)
    assert text.count("insecure = true") == len(cluster_crio.MIRRORED)


def test_a_cri_o_nodes_config_has_nri_and_cdi_as_kubevirtcis(tmp_path):
    conf = cluster_crio.crio_conf(str(tmp_path), {"crio": "/c", "cni": "/cni"}, "/state")
    for line in ('enable_nri = true', 'nri_listen = "/var/run/nri/nri.sock"',
                 'cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]', 'cgroup_manager = "cgroupfs"',
                 'listen = "/run/crio/crio.sock"', 'pinns_path = "/c/pinns"',
                 'pause_image = "registry.k8s.io/pause:3.10.1"', '"DRACPU_CLUSTER_ID=/state"'):
        assert line in conf, line
    import tomllib
    tomllib.loads(conf)
