# SPDX-License-Identifier: Apache-2.0
"""cpu_topology's report files (dra_cpu_report_dir): the fact after a complete wait; after a timeout
the message, the pending nodes, every slice of the driver and every driver pod's state."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.kubevirtci.dra_cpu.plugins.modules import cpu_topology
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as topology_run
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.reports import failure_report
from ansible_collections.kubevirtci.dra_cpu.tests.unit.conftest import load_slices
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import (
    Clock,
    FakeCluster,
    HTTPError,
    Response,
    pod,
    run_module,
)
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.test_cpu_topology import PODS, SLICES, listing

CRASH = {"phase": "Running", "containerStatuses": [{
    "name": "dracpu", "ready": False, "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}


def test_complete_wait_writes_the_fact(tmp_path):
    cluster = FakeCluster({PODS: {"items": [pod("drv-a", "node-a")]},
                           SLICES: listing(load_slices("reference_grouped_numanode.yaml"))})
    result, failed = run_module(cpu_topology, {"report_dir": str(tmp_path / "artifacts")}, cluster)
    assert failed is False, result.get("msg")
    written = json.loads((tmp_path / "artifacts" / "dra-cpu-topology.json").read_text())
    details = written.pop("node_details")
    assert written == result["ansible_facts"]["dra_cpu_topology"]
    # the file keeps what the fact leaves out: each cell's devices, the pool, SMT
    assert details["node-a"]["cells"][0]["devices"] == ["cpudevnuma000"]
    assert details["node-a"]["pool"] == "node-a" and details["node-a"]["smt_enabled"] is not None
    assert not (tmp_path / "artifacts" / "dra-cpu-failure.json").exists()


def test_check_mode_writes_nothing(tmp_path):
    cluster = FakeCluster({PODS: {"items": [pod("drv-a", "node-a")]},
                           SLICES: listing(load_slices("reference_grouped_numanode.yaml"))})
    result, failed = run_module(cpu_topology, {"report_dir": str(tmp_path / "artifacts"), "wait": False,
                                               "_ansible_check_mode": True}, cluster)
    assert failed is False, result.get("msg")
    assert not (tmp_path / "artifacts").exists()


def timed_out(tmp_path, extra_routes=None):
    clock = Clock()
    crash = dict(pod("drv-2", "node02"), status=CRASH)

    class Cluster(FakeCluster):
        def request(self, method, path, **params):
            if dict(params.get("query_params") or []).get("watch") == "true":
                clock.now += 100  # the server ends the watch at its timeoutSeconds
            return FakeCluster.request(self, method, path, **params)

    routes = {PODS: {"items": [pod("drv-1", "node01"), crash]},
              SLICES: listing(load_slices("two_generations.yaml")),
              "/api/v1/nodes/node02": {"metadata": {"name": "node02"}},
              "/api/v1/namespaces/dra-driver-cpu/pods/drv-2/log": Response(b"I0101 start\nE0101 no plugins dir\n")}
    routes.update(extra_routes or {})
    params = dict((k, v.get("default")) for k, v in cpu_topology.argument_spec().items())
    params.update(timeout=60, log_lines=5)
    report = tmp_path / "artifacts"
    result, message = topology_run.run(RawApi(Cluster(routes)), params, [], clock=clock, sleep=clock.sleep,
                                       report_dir=str(report))
    return result, message, report


def test_timeout_writes_the_slices_the_pods_and_the_logs(tmp_path):
    result, message, report = timed_out(tmp_path)
    assert message.startswith("timed out after 60s")
    written = json.loads((report / "dra-cpu-failure.json").read_text())
    assert written["message"] == message
    assert [p["node"] for p in written["pending_nodes"]] == ["node02"]
    assert written["pending_nodes"][0]["logs"] == ["I0101 start", "E0101 no plugins dir"]
    assert sorted(s["metadata"]["name"] for s in written["resource_slices"]) == sorted(
        s["metadata"]["name"] for s in load_slices("two_generations.yaml"))
    assert [(p["name"], p["node"], p["phase"]) for p in written["driver_pods"]] == [
        ("drv-1", "node01", "Running"), ("drv-2", "node02", "Running")]
    assert written["driver_pods"][1]["containers"][0]["reason"] == "CrashLoopBackOff"
    assert list(written["topology"]["nodes"]) == ["node01"]       # the node that did complete
    assert "read_errors" not in written
    assert not (report / "dra-cpu-topology.json").exists()


def test_a_failed_read_is_recorded_in_the_report():
    api = RawApi(FakeCluster({PODS: HTTPError(403, "forbidden"), SLICES: listing([])}))
    report = failure_report(api, "dra.cpu", "dra-driver-cpu", ["app=x"], "no driver pod", {})
    assert report["driver_pods"] == [] and report["resource_slices"] == []
    assert len(report["read_errors"]) == 1 and report["read_errors"][0].startswith("cannot read the driver pods: ")
