# SPDX-License-Identifier: Apache-2.0
"""pod_diagnostics.DriverHealth: a driver that cannot run ends the waits early. The pods and events are
shaped as the API server returns them for a kubelet that cannot pull an image (containerd: not found)
and for a container that exits at start (CrashLoopBackOff after its restarts)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import itertools
import json

from ansible_collections.kubevirtci.dra_cpu.plugins.modules import cpu_topology
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import pod_diagnostics as diag
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as topology_run
from ansible_collections.kubevirtci.dra_cpu.tests.unit.conftest import load_slices
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import (
    Clock,
    FakeCluster,
    Response,
    node,
    passing_time,
)
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.test_cpu_topology import PODS, SLICES, listing

IMAGE = "registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v9.9.9"
EVENTS = "/api/v1/namespaces/dra-driver-cpu/events"
NOT_FOUND = ('rpc error: code = NotFound desc = failed to pull and unpack image "%s": failed to resolve reference '
             '"%s": %s: not found' % (IMAGE, IMAGE, IMAGE))


def driver_pod(name="dra-driver-cpu-x7k2p", node="node-a"):
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "dra-driver-cpu", "uid": "6f1c-" + name,
                     "creationTimestamp": "2026-12-07T10:00:00Z",
                     "labels": {"app.kubernetes.io/name": "dra-driver-cpu"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "dra-driver-cpu",
                                          "controller": True}]},
        "spec": {"nodeName": node, "containers": [{"name": "dracpu", "image": IMAGE}]},
        "status": {"phase": "Pending", "hostIP": "10.0.0.2", "startTime": "2026-12-07T10:00:00Z",
                   "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]},
    }


def pulling(reason="ImagePullBackOff", **kw):
    pod = driver_pod(**kw)
    message = ('Back-off pulling image "%s": ErrImagePull: %s' % (IMAGE, NOT_FOUND) if reason == "ImagePullBackOff"
               else NOT_FOUND)
    pod["status"]["containerStatuses"] = [{
        "name": "dracpu", "image": IMAGE, "imageID": "", "lastState": {}, "ready": False, "restartCount": 0,
        "started": False, "state": {"waiting": {"reason": reason, "message": message}}}]
    return pod


def running(**kw):
    pod = driver_pod(**kw)
    pod["status"]["phase"] = "Running"
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    pod["status"]["containerStatuses"] = [{
        "name": "dracpu", "image": IMAGE, "ready": True, "restartCount": 0, "started": True,
        "state": {"running": {"startedAt": "2026-12-07T10:00:20Z"}}}]
    return pod


def crashing(restarts=3, **kw):
    pod = driver_pod(**kw)
    pod["status"]["phase"] = "Running"
    pod["status"]["containerStatuses"] = [{
        "name": "dracpu", "image": IMAGE, "imageID": IMAGE + "@sha256:ab12", "ready": False,
        "restartCount": restarts, "started": False,
        "state": {"waiting": {"reason": "CrashLoopBackOff",
                              "message": "back-off 40s restarting failed container=dracpu pod=%s_dra-driver-cpu(6f1c)"
                              % pod["metadata"]["name"]}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-12-07T10:01:00Z",
                                     "finishedAt": "2026-12-07T10:01:01Z", "containerID": "containerd://9a"}}}]
    return pod


def pull_event(count=1, reason="Failed", message=None, pod="dra-driver-cpu-x7k2p"):
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": pod + ".181f0a", "namespace": "dra-driver-cpu"},
            "involvedObject": {"kind": "Pod", "namespace": "dra-driver-cpu", "name": pod, "apiVersion": "v1",
                               "fieldPath": "spec.containers{dracpu}"},
            "reason": reason, "message": message or 'Failed to pull image "%s": %s' % (IMAGE, NOT_FOUND),
            "source": {"component": "kubelet", "host": "node-a"}, "count": count, "type": "Warning",
            "firstTimestamp": "2026-12-07T10:00:02Z", "lastTimestamp": "2026-12-07T10:00:14Z"}


def error_event():
    return pull_event(message="Error: ErrImagePull")


def health(clock, pods, events=(), logs=""):
    cluster = FakeCluster({PODS: {"items": pods}, EVENTS: {"items": list(events)},
                           PODS + "/dra-driver-cpu-x7k2p/log": Response(logs)})
    return diag.DriverHealth(RawApi(cluster), "dra-driver-cpu", ["app.kubernetes.io/name=dra-driver-cpu"], clock,
                             log_lines=2), cluster


def test_one_failed_pull_waits_for_the_window_then_names_node_pod_image_and_reason():
    clock = Clock()
    check, unused = health(clock, [pulling()], [pull_event(), error_event()])
    assert check.check(["node-a"]) is None
    clock.now = 29
    assert check.check(["node-a"]) is None
    clock.now = 30
    got = check.check(["node-a"])
    assert got == ('driver pod dra-driver-cpu-x7k2p on node node-a cannot pull its image %s: ImagePullBackOff: '
                   'Back-off pulling image "%s": ErrImagePull: %s (kubelet: Failed to pull image "%s": %s)'
                   % (IMAGE, IMAGE, NOT_FOUND, IMAGE, NOT_FOUND))


def test_two_failed_pulls_end_it_at_once_and_the_error_events_do_not_count():
    clock = Clock()
    check, unused = health(clock, [pulling("ErrImagePull")], [pull_event(count=2)])
    assert check.check(["node-a"]).startswith(
        "driver pod dra-driver-cpu-x7k2p on node node-a cannot pull its image %s: ErrImagePull: rpc error" % IMAGE)
    backoff = pull_event(reason="BackOff", message='Back-off pulling image "%s"' % IMAGE)
    check, unused = health(clock, [pulling("ErrImagePull")], [pull_event(), error_event(), backoff])
    assert check.check(["node-a"]) is None


def test_a_pull_that_recovers_inside_the_window_is_forgotten():
    clock = Clock()
    check, cluster = health(clock, [pulling()], [pull_event()])
    assert check.check(["node-a"]) is None
    clock.now = 20
    cluster.routes[PODS] = {"items": [running()]}
    assert check.check(["node-a"]) is None and check.pulling == {}
    clock.now = 40   # pulling again (a new image): the window starts again
    cluster.routes[PODS] = {"items": [pulling()]}
    assert check.check(["node-a"]) is None


def test_a_third_restart_ends_it_with_the_last_log_lines():
    clock = Clock()
    check, cluster = health(clock, [crashing(restarts=2)], logs="I1207 start\nE1207 failed to get online CPUs\n")
    assert check.check(["node-a"]) is None
    cluster.routes[PODS] = {"items": [crashing(restarts=3)]}
    assert check.check(["node-a"]).splitlines() == [
        "driver pod dra-driver-cpu-x7k2p on node node-a keeps crashing: container dracpu restarted 3 times "
        "(CrashLoopBackOff, last Error, exit code 1)",
        "  last log lines of dra-driver-cpu-x7k2p:",
        "    I1207 start",
        "    E1207 failed to get online CPUs"]
    # only the nodes asked about count
    assert check.check(["node-b"]) is None


def params(**extra):
    out = dict((k, v.get("default")) for k, v in cpu_topology.argument_spec().items())
    out.update(not_ready_nodes=[])
    out.update(extra)
    return out


class Timed(FakeCluster):
    """Pods by the clock (``phases``: (from time, pods)); every watch lasts its timeoutSeconds, a second at a
    time."""

    def __init__(self, clock, phases, routes):
        FakeCluster.__init__(self, dict(routes, **{"/api/v1/nodes": {"items": [node("node-a")]}}))
        self.clock, self.phases = clock, phases

    def request(self, method, path, **params):
        self.routes[PODS] = {"items": [p for p in self.phases if p[0] <= self.clock.now][-1][1]}
        query = dict(params.get("query_params") or [])
        if query.get("watch") == "true":
            self.calls.append((path, query))
            return Response(chunks=passing_time(self.clock, int(query["timeoutSeconds"])))
        return FakeCluster.request(self, method, path, **params)


def test_an_image_that_cannot_be_pulled_ends_the_pool_wait_within_60_s():
    clock = Clock()
    cluster = Timed(clock, [(0, [pulling()])], {SLICES: listing([]), EVENTS: {"items": [pull_event()]}})
    result, message = topology_run.run(RawApi(cluster), params(timeout=300), [], clock=clock, sleep=clock.sleep)
    assert clock.now <= 60
    assert message.splitlines()[0] == (
        "driver dra.cpu cannot run, so the wait ended before its timeout: driver pod dra-driver-cpu-x7k2p on node "
        "node-a cannot pull its image %s: ImagePullBackOff: Back-off pulling image \"%s\": ErrImagePull: %s "
        "(kubelet: Failed to pull image \"%s\": %s)" % (IMAGE, IMAGE, NOT_FOUND, IMAGE, NOT_FOUND))
    assert [e["node"] for e in result["pending_nodes"]] == ["node-a"]


def test_a_pull_that_recovers_inside_the_window_still_installs():
    clock = Clock()
    slices = load_slices("reference_grouped_numanode.yaml")
    published = copy.deepcopy(listing(slices, "200"))

    class Recovering(Timed):
        """The pod runs at 15 s; its pool arrives as watch events at 20 s, in the slices' one watch."""

        def request(self, method, path, **params):
            query = dict(params.get("query_params") or [])
            if path == SLICES and query.get("watch") == "true":
                self.calls.append((path, query))
                added = [(json.dumps({"type": "ADDED", "object": s}) + "\n").encode() for s in published["items"]]
                return Response(chunks=itertools.chain(passing_time(self.clock, 20 - self.clock.now), added))
            return Timed.request(self, method, path, **params)

    cluster = Recovering(clock, [(0, [pulling()]), (15, [running()])],
                         {SLICES: listing([]), EVENTS: {"items": [pull_event()]}})
    result, message = topology_run.run(RawApi(cluster), params(timeout=300), [], clock=clock, sleep=clock.sleep)
    assert message is None, message
    assert "node-a" in result["ansible_facts"]["dra_cpu_topology"]["nodes"] and 20 <= clock.now <= 30


def test_a_crash_looping_driver_ends_the_rollout_wait():
    clock = Clock()
    cluster = Timed(clock, [(0, [crashing(restarts=3)])],
                    {SLICES: listing(load_slices("reference_grouped_numanode.yaml")),
                     PODS + "/dra-driver-cpu-x7k2p/log": Response("E1207 failed to get online CPUs\n")})
    result, message = topology_run.run(RawApi(cluster), params(timeout=300), [], clock=clock, sleep=clock.sleep)
    assert clock.now <= 10
    assert message.splitlines() == [
        "driver dra.cpu cannot run, so the wait ended before its timeout: driver pod dra-driver-cpu-x7k2p on node "
        "node-a keeps crashing: container dracpu restarted 3 times (CrashLoopBackOff, last Error, exit code 1)",
        "  last log lines of dra-driver-cpu-x7k2p:",
        "    E1207 failed to get online CPUs"]
    assert "ansible_facts" not in result and result["pending_nodes"][0]["node"] == "node-a"
