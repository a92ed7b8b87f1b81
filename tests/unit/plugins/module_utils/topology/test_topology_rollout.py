# SPDX-License-Identifier: Apache-2.0
"""topology/rollout.py: after the pools, the driver's rollout. Upstream behaviour mirrored:
kubectl's DaemonSetStatusViewer (rollout status: observedGeneration >= generation, then
updatedNumberScheduled and numberAvailable >= desiredNumberScheduled), helm's daemonSetReady (--wait
accepts up to maxUnavailable pods not Ready: a one-node DaemonSet as soon as its new pod is
scheduled), and the ResourceSlice controller of k8s.io/dynamic-resource-allocation (after a
version-only upgrade the old driver's pool stays complete, same generation, until the new driver
publishes). The run-level cases replay the upgrade that test_real_driver saw on a real kubelet: the
old pod going, the new one ContainerCreating, the old pool complete."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.modules import cpu_topology
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import rollout
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as topology_run
from ansible_collections.kubevirtci.dra_cpu.tests.unit.conftest import load_slices
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import (
    Clock,
    FakeCluster,
    HTTPError,
    Response,
    passing_time,
    pod,
)
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.test_cpu_topology import PODS, SLICES, listing

DAEMONSETS = "/apis/apps/v1/namespaces/dra-driver-cpu/daemonsets"
CREATING = {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{"name": "dracpu", "ready": False, "restartCount": 0,
                                   "state": {"waiting": {"reason": "ContainerCreating"}}}]}


def creating(name, node):
    obj = pod(name, node)
    obj["status"] = dict(CREATING)
    return obj


def going(name, node):
    obj = pod(name, node)
    obj["metadata"]["deletionTimestamp"] = "2026-12-06T16:27:00Z"
    return obj


def daemonset(generation=2, observed=2, desired=1, updated=1, available=0):
    return {"metadata": {"name": "dra-driver-cpu", "generation": generation,
                         "annotations": {"meta.helm.sh/release-name": "dra-driver-cpu",
                                         "meta.helm.sh/release-namespace": "dra-driver-cpu"}},
            "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "dra-driver-cpu"}}},
            "status": {"observedGeneration": observed, "desiredNumberScheduled": desired,
                       "updatedNumberScheduled": updated, "numberAvailable": available}}


def test_daemonsets_behind_reads_kubectls_first_two_conditions():
    assert rollout.daemonsets_behind([daemonset()]) == []
    assert rollout.daemonsets_behind([daemonset(generation=3)]) == [
        "DaemonSet dra-driver-cpu: generation 3 not yet observed by its controller (observed 2)"]
    assert rollout.daemonsets_behind([daemonset(desired=5, updated=3)]) == [
        "DaemonSet dra-driver-cpu: 3 of 5 pods run its current template (the rollout is in progress)"]


def test_a_node_serves_with_a_ready_pod_beside_its_old_one_going():
    pods = [going("old", "n1"), pod("new", "n1"), creating("c", "n2"), pod("done", "n3", phase="Failed")]
    assert rollout.nodes_not_serving(pods, ["n1", "n2", "n3"]) == {
        "n2": "its pool is published but driver pod c is not Ready",
        "n3": "its pool is published but no driver pod runs on it"}
    assert rollout.nodes_not_serving([going("old", "n1")], ["n1"]) == {
        "n1": "its pool is published but no driver pod runs on it"}


class Rollout(FakeCluster):
    """The pods (and the DaemonSets) by the clock: ``phases`` is a list of (from time, pods[, daemonset]);
    ``scripts`` one list per watch request of ("advance", s) and events (the current phase's objects
    as ``MODIFIED`` at the moment given by ("event",)); without a script a watch lasts its timeoutSeconds."""

    def __init__(self, clock, phases, routes=None, scripts=None):
        FakeCluster.__init__(self, routes)
        self.clock, self.phases, self.scripts = clock, phases, list(scripts or [])

    def _current(self):
        return [p for p in self.phases if p[0] <= self.clock.now][-1]

    def _stream(self, path, seconds):
        for step in self.scripts.pop(0) if self.scripts else [("advance", seconds)]:
            if step[0] == "advance":
                yield from passing_time(self.clock, step[1])
                continue
            current = self._current()
            obj = current[2] if path == DAEMONSETS else current[1][0]
            yield (json.dumps({"type": "MODIFIED", "object": obj}) + "\n").encode()

    def request(self, method, path, **params):
        current = self._current()
        self.routes[PODS] = {"items": current[1]}
        if len(current) > 2:
            self.routes[DAEMONSETS] = {"items": [current[2]]}
        query = dict(params.get("query_params") or [])
        if query.get("watch") == "true":
            self.calls.append((path, query))
            return Response(chunks=self._stream(path, int(query["timeoutSeconds"])))
        return FakeCluster.request(self, method, path, **params)


def test_wait_serving_ends_at_the_daemonset_event_that_follows_the_new_pod():
    """The DaemonSet's status changes when its pod turns Ready: that event ends the wait, at once."""
    clock = Clock()
    cluster = Rollout(clock, [(0, [going("old", "n1"), creating("new", "n1")], daemonset()),
                              (2, [pod("new", "n1")], daemonset())],
                      scripts=[[("advance", 2), ("event",)]])
    got = rollout.wait_serving(RawApi(cluster), "dra-driver-cpu", ["app.kubernetes.io/name=dra-driver-cpu"],
                               "dra-driver-cpu", ["n1"], 30.0, clock, clock.sleep)
    assert got["done"] is True and got["passes"] == 2 and clock.now == 2.0
    assert cluster.paths() == [DAEMONSETS, PODS, DAEMONSETS, PODS]
    # one watch, asked for the whole wait: the tick (every 10 s) is judged while it stays open
    assert cluster.calls[2][1]["watch"] == "true" and cluster.calls[2][1]["timeoutSeconds"] == 30


def test_a_daemonset_rolled_out_as_kubectl_reads_it_needs_no_pod_list():
    """At 1,000 nodes the pods are a list of 1,000: when every desired pod is updated and available
    (kubectl rollout status: done) one list of the release's DaemonSets is the whole look."""
    clock = Clock()
    cluster = Rollout(clock, [(0, [], daemonset(desired=1000, updated=1000, available=1000))])
    got = rollout.wait_serving(RawApi(cluster), "dra-driver-cpu", ["a=b"], "dra-driver-cpu", ["n1"], 30.0,
                               clock, clock.sleep)
    assert got["done"] is True and cluster.paths() == [DAEMONSETS]
    # one of them not available: the pods are read, and the node without one is named
    cluster = Rollout(clock, [(0, [], daemonset(desired=1000, updated=1000, available=999))])
    got = rollout.wait_serving(RawApi(cluster), "dra-driver-cpu", ["a=b"], "dra-driver-cpu", ["n1"], 1.0,
                               clock, clock.sleep)
    assert got["done"] is False and got["nodes"] == {"n1": "its pool is published but no driver pod runs on it"}


def test_wait_serving_without_a_release_watches_the_pods_and_stops_at_the_deadline():
    clock = Clock()
    cluster = Rollout(clock, [(0, [creating("new", "n1")])])
    got = rollout.wait_serving(RawApi(cluster), "dra-driver-cpu", ["a=b"], "", ["n1"], 25.0, clock, clock.sleep)
    assert got["done"] is False and got["nodes"] == {"n1": "its pool is published but driver pod new is not Ready"}
    # one list, then one watch for the whole wait (the ticks judged while it stays open): no more lists
    assert set(cluster.paths()) == {PODS} and clock.now == 25.0
    assert [q.get("timeoutSeconds") for unused, q in cluster.calls] == [None, 25]
    assert cluster.calls[0][1] == {"labelSelector": "a=b"}


def test_wait_serving_without_a_release_ends_at_the_pod_event():
    clock = Clock()
    cluster = Rollout(clock, [(0, [creating("new", "n1")]), (4, [pod("new", "n1")])],
                      scripts=[[("advance", 4), ("event",)]])
    got = rollout.wait_serving(RawApi(cluster), "dra-driver-cpu", ["a=b"], "", ["n1"], 60.0, clock, clock.sleep)
    assert got["done"] is True and clock.now == 4.0


def test_wait_serving_retries_a_lost_connection_and_raises_on_forbidden():
    clock = Clock()

    class Flaky(FakeCluster):
        def request(self, method, path, **params):
            if clock.now < 1:
                raise HTTPError(503, "unavailable")
            return FakeCluster.request(self, method, path, **params)

    got = rollout.wait_serving(RawApi(Flaky({PODS: {"items": [pod("p", "n1")]}})), "dra-driver-cpu", ["a=b"], "",
                               ["n1"], 10.0, clock, clock.sleep)
    # the list retried after 0.5 and 1 s of backoff
    assert got["done"] is True and got["passes"] == 1 and got["last_error"] is None and clock.now == 1.5
    denied = FakeCluster({PODS: HTTPError(403, "forbidden")})
    with pytest.raises(KubeRequestError):
        rollout.wait_serving(RawApi(denied), "dra-driver-cpu", ["a=b"], "", ["n1"], 10.0, clock, clock.sleep)


def params(**extra):
    out = dict((k, v.get("default")) for k, v in cpu_topology.argument_spec().items())
    out.update(release_name="dra-driver-cpu", not_ready_nodes=[])
    out.update(extra)
    return out


def pool(node):
    slices = load_slices("reference_grouped_numanode.yaml")
    assert slices[0]["spec"]["nodeName"] == node
    return listing(slices)


def test_the_upgrade_race_the_install_now_waits_out():
    """The old pool complete at once; the new pod ContainerCreating while the old one goes, Ready at 3 s."""
    clock = Clock()
    cluster = Rollout(clock, [(0, [going("old", "node-a"), creating("new", "node-a")], daemonset()),
                              (3, [pod("new", "node-a")], daemonset(available=1))], {SLICES: pool("node-a")},
                      scripts=[[("advance", 3), ("event",)]])
    result, message = topology_run.run(RawApi(cluster), params(timeout=60), [], clock=clock, sleep=clock.sleep)
    assert message is None, message
    assert result["ansible_facts"]["dra_cpu_topology"]["nodes"]["node-a"]["allocatable_cpus"] == 10
    # the DaemonSet's event at 3 s ends the wait then, not at the next poll
    assert result["wait_stats"]["rollout_passes"] == 2 and clock.now == 3.0


def test_a_new_pod_that_never_turns_ready_fails_naming_node_pod_and_rollout():
    clock = Clock()
    cluster = Rollout(clock, [(0, [creating("new", "node-a")], daemonset(desired=2, updated=1))],
                      {SLICES: pool("node-a")})
    result, message = topology_run.run(RawApi(cluster), params(timeout=20), [], clock=clock, sleep=clock.sleep)
    assert message.splitlines() == [
        "timed out after 20s waiting for driver dra.cpu to roll out: every pool is complete, but the driver that "
        "published them may not be the one running (after an upgrade the old driver's pool stays until the new "
        "one publishes)",
        "- DaemonSet dra-driver-cpu: 1 of 2 pods run its current template (the rollout is in progress)",
        "- node-a: its pool is published but driver pod new is not Ready; pod new Pending; container dracpu "
        "waiting ContainerCreating"]
    assert [(e["node"], e["state"]) for e in result["pending_nodes"]] == [("node-a", "not serving")]
    # the topology is returned for the record, not set as a fact
    assert "ansible_facts" not in result and result["topology"]["nodes"]["node-a"]["allocatable_cpus"] == 10
    assert clock.now <= 20.0


def test_a_not_ready_nodes_pod_is_not_waited_for():
    clock = Clock()
    cluster = Rollout(clock, [(0, [creating("p", "node-a")], daemonset())], {SLICES: pool("node-a")})
    result, message = topology_run.run(RawApi(cluster), params(timeout=20, not_ready_nodes=["node-a"]), [],
                                       clock=clock, sleep=clock.sleep)
    assert message is None and result["wait_stats"]["rollout_passes"] == 1 and clock.now == 0.0


def test_named_nodes_and_check_mode_do_not_look_at_the_pods():
    for extra in ({"nodes": ["node-a"]}, {"wait": False}):
        clock = Clock()
        cluster = Rollout(clock, [(0, [creating("p", "node-a")], daemonset())], {SLICES: pool("node-a")})
        result, message = topology_run.run(RawApi(cluster), params(**extra), [], clock=clock, sleep=clock.sleep)
        assert message is None and "rollout_passes" not in result["wait_stats"], extra


def started(name, node, created="2026-12-06T20:28:27Z", restarts=0, running=True):
    """A driver pod as the kubelet reports it in the seconds between its container's start and its
    first readiness probe (the chart's initialDelaySeconds 5, periodSeconds 10): Running, not Ready."""
    obj = pod(name, node, ready=False)
    obj["metadata"]["creationTimestamp"] = created
    obj["status"]["containerStatuses"] = [{"name": "dracpu", "ready": False, "restartCount": restarts,
                                           "state": {"running": {"startedAt": "2026-12-06T20:28:28Z"}} if running
                                           else {"waiting": {"reason": "CrashLoopBackOff"}}}]
    return obj


def written_at(created, *updates, node="n1"):
    return {"metadata": {"name": node + "-dra.cpu-x", "creationTimestamp": created,
                         "managedFields": [{"manager": "dracpu", "time": t} for t in updates]},
            "spec": {"nodeName": node, "driver": "dra.cpu"}}


def test_pools_written_takes_each_nodes_last_create_or_write():
    got = rollout.pools_written([written_at("2026-12-06T20:00:00Z", "2026-12-06T20:28:29Z"),
                                 written_at("2026-12-06T20:28:30Z", node="n2"),
                                 written_at("2026-12-06T20:28:31Z", node="n1")])
    assert {n: t.isoformat() for n, t in got.items()} == {"n1": "2026-12-06T20:28:31", "n2": "2026-12-06T20:28:30"}


def test_a_pool_the_running_pod_wrote_serves_before_the_readiness_probe():
    """Upstream's /healthz answers once driver.Start returned, and Start publishes: the pool the
    running pod wrote says what its first probe will say, 5 to 15 s later."""
    written = rollout.pools_written([written_at("2026-12-06T20:28:29Z")])
    assert rollout.nodes_not_serving([started("new", "n1")], ["n1"], written) == {}
    # without the pools' times, Ready decides as kubectl rollout status does
    assert rollout.nodes_not_serving([started("new", "n1")], ["n1"]) == {
        "n1": "its pool is published but driver pod new is not Ready"}


@pytest.mark.parametrize("pods, pool, why", [
    # a version-only upgrade: the old driver's pool, written before the new pod was made
    ([started("new", "n1")], written_at("2026-12-06T20:00:00Z", "2026-12-06T20:10:00Z"), "the old pool"),
    # the same second as the pod's creation: the old pod may have written it while it went
    ([started("new", "n1")], written_at("2026-12-06T20:28:27Z"), "the same second"),
    # the old pod still going: its driver may still write
    ([going("old", "n1"), started("new", "n1")], written_at("2026-12-06T20:28:29Z"), "the old pod not gone"),
    # a restarted container: which of its runs wrote the pool is not known
    ([started("new", "n1", restarts=1)], written_at("2026-12-06T20:28:29Z"), "a restart"),
    ([started("new", "n1", running=False)], written_at("2026-12-06T20:28:29Z"), "not running"),
])
def test_a_pool_the_running_pod_may_not_have_written_waits_for_ready(pods, pool, why):
    written = rollout.pools_written([pool])
    assert rollout.nodes_not_serving(pods, ["n1"], written) == {
        "n1": "its pool is published but driver pod new is not Ready"}, why


def test_a_fresh_install_returns_once_the_pool_is_written_not_at_the_probe():
    """The run: the pool written a second after the pod was made, the pod Running, not Ready until 6 s."""
    clock = Clock()
    slices = load_slices("reference_grouped_numanode.yaml")
    for item in slices:
        item["metadata"]["creationTimestamp"] = "2026-12-06T20:28:29Z"
    cluster = Rollout(clock, [(0, [started("new", "node-a")], daemonset()),
                              (6, [pod("new", "node-a")], daemonset(available=1))], {SLICES: listing(slices)})
    result, message = topology_run.run(RawApi(cluster), params(timeout=60), [], clock=clock, sleep=clock.sleep)
    assert message is None, message
    assert result["wait_stats"]["rollout_passes"] == 1 and clock.now == 0.0
