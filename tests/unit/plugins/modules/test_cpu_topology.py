# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import Clock
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import cpu_topology
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as topology_run
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import RawApi
from ansible_collections.kubevirtci.dra_cpu.tests.unit.conftest import load_slices
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import (
    FakeCluster,
    HTTPError,
    Response,
    node as fake_node,
    pod,
    run_module,
)

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
NODES = "/api/v1/nodes"
PODS = "/api/v1/namespaces/dra-driver-cpu/pods"


def listing(items, rv="100"):
    return {"kind": "ResourceSliceList", "metadata": {"resourceVersion": rv}, "items": copy.deepcopy(items)}


def test_complete_at_list_time_sets_facts():
    cluster = FakeCluster({PODS: {"items": [pod("drv-a", "node-a")]},
                           SLICES: listing(load_slices("reference_grouped_numanode.yaml"))})
    # the role passes preflight's not-Ready nodes: no Node is read again
    result, failed = run_module(cpu_topology, {"expected_cpus_per_node": 12, "expected_cells_per_node": 2,
                                               "reserved_cpus": "0-1", "min_cell_cpus": 6,
                                               "not_ready_nodes": []}, cluster)
    assert failed is False, result.get("msg")
    facts = result["ansible_facts"]["dra_cpu_topology"]
    # per node: its total, Ready, generation and cell id -> allocatable CPUs (the devices are in the table)
    assert facts["nodes"]["node-a"] == {"allocatable_cpus": 10, "ready": True, "pool_generation": 1,
                                        "cells": {"0": 4, "1": 6}}
    assert facts["max_vm_host_cpus"] == 6
    assert result["summary"][1] == "node-a     0  cpudevnuma000         4"
    assert result["targets"] == ["node-a"]
    assert result["sizing_problems"] == []
    assert result["wait_stats"]["lists"] == 1 and result["wait_stats"]["watches"] == 0
    assert cluster.calls[0] == (PODS, {"labelSelector": "app.kubernetes.io/name=dra-driver-cpu"})
    assert cluster.calls[1] == (SLICES, {"fieldSelector": "spec.driver=dra.cpu"})
    # the pool complete, one more look at the pods: the driver pod on node-a is Ready (rollout.py)
    assert cluster.calls[2] == cluster.calls[0]
    assert len(cluster.calls) == 3 and result["wait_stats"]["rollout_passes"] == 1


def test_watch_completes_pool_one_list_one_watch():
    first, second = load_slices("individual_smt_chunks.yaml")
    cluster = FakeCluster({PODS: {"items": [pod("drv-1", "node01")]}, SLICES: listing([first], rv="100")},
                          watches=[[{"type": "ADDED", "object": second}]])
    result, failed = run_module(cpu_topology, {"timeout": 30}, cluster)
    assert failed is False, result.get("msg")
    facts = result["ansible_facts"]["dra_cpu_topology"]
    assert facts["mode"] == "individual"
    assert facts["nodes"]["node01"]["cells"] == {"0": 78, "1": 80}
    # without not_ready_nodes the Nodes are listed once, after the pool completed, then the pods again
    assert cluster.paths() == [PODS, SLICES, SLICES, NODES, PODS]
    assert cluster.calls[2][1]["watch"] == "true"
    assert cluster.calls[2][1]["resourceVersion"] == "100"


def test_explicit_nodes_skip_pod_lookup():
    cluster = FakeCluster({SLICES: listing(load_slices("v010_names_two_nodes.yaml"))})
    result, failed = run_module(cpu_topology, {"nodes": ["node02"]}, cluster)
    assert failed is False
    assert list(result["ansible_facts"]["dra_cpu_topology"]["nodes"]) == ["node02"]
    assert cluster.paths() == [SLICES, NODES]


def test_sizing_mismatch_fails_with_numbers():
    cluster = FakeCluster({PODS: {"items": [pod("drv-a", "node-a")]},
                           SLICES: listing(load_slices("reference_grouped_numanode.yaml"))})
    result, failed = run_module(cpu_topology, {"expected_cpus_per_node": 12, "expected_cells_per_node": 2,
                                               "reserved_cpus": "0-3"}, cluster)
    assert failed is True
    assert result["msg"] == (
        "the published CPU topology does not match: node node-a publishes 10 allocatable CPUs, expected 8 "
        "(12 CPUs - 4 reserved); node node-a cell 0 has 4 allocatable CPUs, expected 2 (CPUs 0-5 minus reserved 0-3)")
    assert result["topology"]["max_vm_host_cpus"] == 6
    assert "ansible_facts" not in result


def test_min_cell_cpus_fails():
    cluster = FakeCluster({PODS: {"items": [pod("drv-a", "node-a")]},
                           SLICES: listing(load_slices("reference_grouped_numanode.yaml"))})
    result, failed = run_module(cpu_topology, {"min_cell_cpus": 8}, cluster)
    assert failed is True
    assert result["msg"].endswith("no cell can hold a VM of 8 host CPUs: the largest cell is node node-a cell 1 "
                                  "with 6 allocatable CPUs (nodes: node-a cells 0=4, 1=6); min_cell_cpus 0 "
                                  "(role variable dra_cpu_min_cell_cpus: 0) turns this check off")


def test_no_driver_pods():
    cluster = FakeCluster({PODS: {"items": []}})
    result, failed = run_module(cpu_topology, {}, cluster)
    assert failed is True
    assert result["msg"].startswith("no driver pod found in namespace dra-driver-cpu with selector "
                                    "app.kubernetes.io/name=dra-driver-cpu")


def test_forbidden_watch_names_verb_and_resource():
    first = load_slices("individual_smt_chunks.yaml")[0]
    cluster = FakeCluster({PODS: {"items": [pod("drv-1", "node01")]}, SLICES: listing([first])},
                          watches=[HTTPError(403, "resourceslices.resource.k8s.io is forbidden")])
    result, failed = run_module(cpu_topology, {"timeout": 5}, cluster)
    assert failed is True
    assert result["msg"] == ("cannot read the driver's CPU topology: permission denied: cannot watch "
                             "resourceslices.resource.k8s.io (GET /apis/resource.k8s.io/v1/resourceslices): "
                             "resourceslices.resource.k8s.io is forbidden; grant apiGroups [\"resource.k8s.io\"] "
                             "resources [\"resourceslices\"] verbs [\"watch\"] in a ClusterRole (docs/rbac.md)")


def test_wait_false_reports_pending_without_failing():
    items = load_slices("two_generations.yaml")
    cluster = FakeCluster({PODS: {"items": [pod("drv-1", "node01"), pod("drv-2", "node02")]},
                           SLICES: listing(items),
                           "/api/v1/namespaces/dra-driver-cpu/pods/drv-2/log": Response(b"starting\n")})
    result, failed = run_module(cpu_topology, {"wait": False, "_ansible_check_mode": True}, cluster)
    assert failed is False
    assert list(result["ansible_facts"]["dra_cpu_topology"]["nodes"]) == ["node01"]
    assert [p["node"] for p in result["pending_nodes"]] == ["node02"]
    assert result["pending_nodes"][0]["logs"] == ["starting"]


def test_timeout_names_nodes_pod_state_and_logs():
    clock = Clock()
    crash = dict(pod("drv-2", "node02"))
    crash["status"] = {"phase": "Running", "containerStatuses": [{
        "name": "dracpu", "ready": False, "restartCount": 4,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}

    class Cluster(FakeCluster):
        def request(self, method, path, **params):
            if dict(params.get("query_params") or []).get("watch") == "true":
                clock.now += 100  # the server ends the watch at its timeoutSeconds
            return FakeCluster.request(self, method, path, **params)

    cluster = Cluster({PODS: {"items": [pod("drv-1", "node01"), crash]},
                       SLICES: listing(load_slices("two_generations.yaml")),
                       "/api/v1/nodes/node02": {"metadata": {"name": "node02"}},
                       "/api/v1/namespaces/dra-driver-cpu/pods/drv-2/log":
                           Response(b"I0101 start\nE0101 open /var/lib/kubelet/plugins: no such file\n")})
    params = dict((k, v.get("default")) for k, v in cpu_topology.argument_spec().items())
    params.update(timeout=60, log_lines=5)
    result, message = topology_run.run(RawApi(cluster), params, [], clock=clock, sleep=clock.sleep)
    assert message.splitlines() == [
        "timed out after 60s waiting for the ResourceSlices of driver dra.cpu on 1 node(s):",
        "- node02: 1 of 2 slices published at generation 3; pod drv-2 Running; container dracpu waiting "
        "CrashLoopBackOff, 4 restarts",
        "  last log lines of drv-2:",
        "    I0101 start",
        "    E0101 open /var/lib/kubelet/plugins: no such file",
    ]
    assert result["pending_nodes"][0]["pod"]["containers"][0]["restarts"] == 4
    assert result["wait_stats"]["lists"] == 1 and result["wait_stats"]["watches"] == 1


def test_bad_options():
    result, failed = run_module(cpu_topology, {"reserved_cpus": "a", "timeout": 0,
                                               "expected_cpus_per_node": 13, "expected_cells_per_node": 2},
                                FakeCluster())
    assert failed is True
    assert result["msg"] == ("reserved_cpus: 'a' is not a valid cpuset ('a' is not a CPU id or a range a-b); "
                             "timeout: 0 is not positive; expected_cpus_per_node: 13 cannot be split evenly over "
                             "2 cells (expected_cells_per_node)")


def two_nodes_one_down(ready_b="Unknown"):
    a = load_slices("reference_grouped_numanode.yaml")
    b = copy.deepcopy(a)
    for obj in b:
        obj["metadata"]["name"] = obj["metadata"]["name"].replace("node-a", "node-b")
        obj["metadata"]["uid"] = obj["metadata"].get("uid", "") + "-b"
        obj["spec"]["nodeName"] = "node-b"
        obj["spec"]["pool"]["name"] = "node-b"
    # node-b's pool is larger: the figures would come from it, were it counted
    b[0]["spec"]["devices"][1]["capacity"]["dra.cpu/cpu"]["value"] = "9"
    return FakeCluster({PODS: {"items": [pod("drv-a", "node-a"), pod("drv-b", "node-b")]},
                        SLICES: listing(a + b),
                        NODES: {"items": [fake_node("node-a"), fake_node("node-b", ready=ready_b)]}})


def test_a_not_ready_node_keeps_its_pool_but_counts_in_no_figure():
    # the scheduler places no new pod on a node whose Ready condition is not True (the node lifecycle
    # controller taints it node.kubernetes.io/unreachable:NoSchedule); its pool stays, as the kubelet
    # that would delete it does not report
    cluster = two_nodes_one_down()
    result, failed = run_module(cpu_topology, {}, cluster)
    assert failed is False, result.get("msg")
    facts = result["ansible_facts"]["dra_cpu_topology"]
    assert facts["not_ready_nodes"] == ["node-b"]
    assert facts["nodes"]["node-b"]["ready"] is False and facts["nodes"]["node-a"]["ready"] is True
    assert facts["nodes"]["node-b"]["allocatable_cpus"] == 13
    assert facts["max_vm_host_cpus"] == 6 and facts["total_allocatable_cpus"] == 10
    assert facts["largest_cell"] == {"node": "node-a", "id": 1, "allocatable_cpus": 6}
    assert result["summary"][6] == "node-b  total                       13 (node not Ready: counted in no figure below)"
    assert result["summary"][7] == ("largest VM that fits: 6 host CPUs, all from one device (one NUMA cell) = "
                                    "6 vCPUs, 5 with isolateEmulatorThread (5 with even parity)")
    # the same in the fact, from the Ready node's cells only
    assert (facts["max_vm_vcpus"], facts["max_vm_vcpus_isolated_emulator_thread"],
            facts["max_vm_vcpus_even_parity"]) == (6, 5, 5)
    assert cluster.paths().count(NODES) == 1


def test_not_ready_nodes_given_are_not_read_again():
    cluster = two_nodes_one_down(ready_b="True")
    result, failed = run_module(cpu_topology, {"not_ready_nodes": ["node-b", "node-z"]}, cluster)
    assert failed is False, result.get("msg")
    facts = result["ansible_facts"]["dra_cpu_topology"]
    assert facts["not_ready_nodes"] == ["node-b"] and facts["max_vm_host_cpus"] == 6
    assert NODES not in cluster.paths()
    # all Ready: node-b's 9-CPU cell is the largest VM
    result, failed = run_module(cpu_topology, {}, two_nodes_one_down(ready_b="True"))
    facts = result["ansible_facts"]["dra_cpu_topology"]
    assert facts["not_ready_nodes"] == [] and facts["max_vm_host_cpus"] == 9 and facts["total_allocatable_cpus"] == 23
    # 9 host CPUs: 8 vCPUs with an isolated emulator thread; with even parity 8 + 2 is 10, so 7
    assert (facts["max_vm_vcpus"], facts["max_vm_vcpus_isolated_emulator_thread"],
            facts["max_vm_vcpus_even_parity"]) == (9, 8, 7)
