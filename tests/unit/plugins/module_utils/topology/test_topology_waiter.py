# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import Clock
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import driver_pods as dp
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import pod_diagnostics as diag
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import waiter as w
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.topology.fact_helpers import build_topology


def _raise(exc):
    raise exc


class FakeApi(object):
    """Scripted API: lists and watches are consumed in order.

    A watch script is a list of events; an Exception item is raised at that
    point; ("advance", s) moves the clock (and yields None, time passing without an event).
    """

    def __init__(self, clock, lists, watches, nodes=None, pods=None, logs=None):
        self.clock = clock
        self.lists = list(lists)
        self.watches = list(watches)
        self.nodes = set(nodes or [])
        self.pods = pods or []
        self.logs = logs or {}
        self.calls = []

    def get_json(self, path, query=None, timeout=None):
        self.calls.append(("list", path, dict(query or {})))
        item = self.lists.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def watch(self, path, query=None, timeout=None):
        self.calls.append(("watch", path, dict(query or {})))
        script = self.watches.pop(0) if self.watches else [("advance", 1000)]
        for item in script:
            if isinstance(item, Exception):
                _raise(item)
            if isinstance(item, tuple) and item[0] == "advance":
                self.clock.now += item[1]
                yield None   # time passed without an event: the inline pump's "nothing yet"
                continue
            yield item

    def node_exists(self, node):
        self.calls.append(("node", node))
        return node in self.nodes

    def list_pods(self, namespace, selector=None):
        self.calls.append(("pods", namespace, selector))
        return self.pods

    def pod_log(self, namespace, pod, container=None, tail_lines=20, previous=False):
        self.calls.append(("log", pod, tail_lines))
        if isinstance(self.logs.get(pod), Exception):
            raise self.logs[pod]
        return self.logs.get(pod, "")


def listing(items, rv="100"):
    return {"metadata": {"resourceVersion": rv}, "items": copy.deepcopy(items)}


def event(kind, obj, rv=None):
    obj = copy.deepcopy(obj)
    if rv:
        obj["metadata"]["resourceVersion"] = rv
    return {"type": kind, "object": obj}


def make(clock, api):
    return w.SliceWaiter(api, "dra.cpu", clock=clock, sleep=clock.sleep)


def kinds(api):
    return [c[0] for c in api.calls]


def test_already_complete_is_one_list(slices):
    clock = Clock()
    api = FakeApi(clock, [listing(slices("v010_names_two_nodes.yaml"))], [])
    result = make(clock, api).wait(["node01", "node02"], 60)
    assert result["complete"] is True
    assert kinds(api) == ["list"]
    assert api.calls[0][2] == {"fieldSelector": "spec.driver=dra.cpu"}
    assert result["stats"]["lists"] == 1 and result["stats"]["watches"] == 0
    assert len(result["slices"]) == 2  # a slice of another driver is dropped even if the server returned it


def test_list_then_watch_until_complete(slices):
    s1, s2 = slices("individual_smt_chunks.yaml")
    clock = Clock()
    api = FakeApi(clock, [listing([s1], rv="100")],
                  [[{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "105"}}},
                    ("advance", 3), event("ADDED", s2, rv="106")]])
    result = make(clock, api).wait(["node01"], 60)
    assert result["complete"] is True
    assert kinds(api) == ["list", "watch"]
    watch_query = api.calls[1][2]
    assert watch_query["resourceVersion"] == "100"
    assert watch_query["fieldSelector"] == "spec.driver=dra.cpu"
    assert watch_query["allowWatchBookmarks"] == "true"
    assert watch_query["timeoutSeconds"] == 60  # the whole wait: the ticks are judged while it stays open
    assert result["resource_version"] == "106"
    assert result["elapsed"] == 3


def test_relist_on_410_event_and_status(slices):
    s1, s2 = slices("individual_smt_chunks.yaml")
    clock = Clock()
    gone_event = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}
    api = FakeApi(clock, [listing([s1], "100"), listing([s1], "200"), listing([s1, s2], "300")],
                  [[gone_event], [KubeRequestError("gone", status=410)]])
    result = make(clock, api).wait(["node01"], 60)
    assert result["complete"] is True
    assert kinds(api) == ["list", "watch", "list", "watch", "list"]
    assert api.calls[3][2]["resourceVersion"] == "200"
    assert result["stats"]["relists"] == 2


def test_reconnect_on_connection_error_resumes_from_last_rv(slices):
    s1, s2 = slices("individual_smt_chunks.yaml")
    clock = Clock()
    api = FakeApi(clock, [listing([s1], "100")],
                  [[event("MODIFIED", s1, rv="150"), KubeRequestError("reset", status=None)],
                   [event("ADDED", s2, rv="160")]])
    result = make(clock, api).wait(["node01"], 60)
    assert result["complete"] is True
    assert kinds(api) == ["list", "watch", "watch"]
    assert api.calls[2][2]["resourceVersion"] == "150"
    assert result["stats"]["reconnects"] == 1
    assert clock.now == 0.5  # one backoff


def test_server_watch_timeout_reopens(slices):
    s1, s2 = slices("individual_smt_chunks.yaml")
    clock = Clock()
    api = FakeApi(clock, [listing([s1], "100")], [[("advance", 10)] * 5 + [("advance", 9)],
                                                  [event("ADDED", s2, rv="101")]], nodes=["node01"])
    result = make(clock, api).wait(["node01"], 60)
    assert result["complete"] is True
    watches = [c for c in api.calls if c[0] == "watch"]
    # the first asked for the whole wait and the server ended it at 59 s: reopened for the last second,
    # from its version; the pending node was checked at each tick (every 10 s) while it stayed open
    assert [w[2]["timeoutSeconds"] for w in watches] == [60, 1] and watches[1][2]["resourceVersion"] == "100"
    assert kinds(api) == ["list", "watch"] + ["node"] * 5 + ["watch"]


def test_missing_node_deleted_without_slices_is_dropped_at_the_node_check(slices):
    s1, s2 = slices("individual_smt_chunks.yaml")
    clock = Clock()
    complete = [s for s in slices("v010_names_two_nodes.yaml") if s["spec"]["nodeName"] == "node01"]

    class Lister(FakeApi):
        def node_names(self):
            self.calls.append(("nodes",))
            return set(self.nodes)

    api = Lister(clock, [listing(complete, "100")], [[("advance", 16)]], nodes=["node01"])
    result = make(clock, api).wait(["node01", "node09"], 300)
    assert result["complete"] is True
    assert result["dropped_nodes"] == ["node09"]
    assert clock.now < 20
    assert kinds(api) == ["list", "watch", "nodes"]


def test_old_generation_does_not_satisfy(slices):
    items = slices("two_generations.yaml")
    node02_new = [s for s in items if s["spec"]["nodeName"] == "node02" and s["spec"]["pool"]["generation"] == 3][0]
    second = copy.deepcopy(node02_new)
    second["metadata"]["name"] = "00001-dra.cpu-node02-new1"
    second["metadata"]["uid"] = "uid-second"
    clock = Clock()
    api = FakeApi(clock, [listing(items)], [[event("ADDED", second, rv="120")]])
    result = make(clock, api).wait(["node01", "node02"], 60)
    assert result["complete"] is True
    assert kinds(api) == ["list", "watch"]


def test_timeout_reports_pending(slices):
    clock = Clock()
    api = FakeApi(clock, [listing(slices("two_generations.yaml"))], [[("advance", 61)]],
                  nodes={"node01", "node02", "node03"})
    result = make(clock, api).wait(["node01", "node02", "node03"], 60)
    assert result["complete"] is False
    assert result["progress"] == {"complete": ["node01"], "missing": ["node03"],
                                  "incomplete": {"node02": "1 of 2 slices published at generation 3"}}
    assert result["dropped_nodes"] == []
    # the 61 s pass in one step: the tick then the deadline each check the two pending nodes
    assert kinds(api) == ["list", "watch", "node", "node", "node", "node"]


def test_deleted_node_is_dropped(slices):
    items = slices("v010_names_two_nodes.yaml")
    node02 = [s for s in items if s["spec"].get("nodeName") == "node02" and s["spec"]["driver"] == "dra.cpu"][0]
    node01 = [s for s in items if s["spec"].get("nodeName") == "node01" and s["spec"]["driver"] == "dra.cpu"][0]
    partial = copy.deepcopy(node02)
    partial["spec"]["pool"]["resourceSliceCount"] = 2
    clock = Clock()
    # node02 incomplete; its slice is deleted (node gone, GC) -> dropped; node01 complete -> done
    api = FakeApi(clock, [listing([node01, partial])], [[event("DELETED", partial, rv="130")]],
                  nodes={"node01"})
    result = make(clock, api).wait(["node01", "node02"], 60)
    assert result["complete"] is True
    assert result["dropped_nodes"] == ["node02"]
    assert result["targets"] == ["node01"]
    assert kinds(api) == ["list", "watch", "node"]


def test_missing_node_deleted_before_deadline_is_dropped(slices):
    clock = Clock()
    api = FakeApi(clock, [listing(slices("reference_grouped_numanode.yaml"))], [[("advance", 100)]],
                  nodes={"node-a"})
    result = make(clock, api).wait(["node-a", "gone"], 30)
    assert result["complete"] is True
    assert result["dropped_nodes"] == ["gone"]


def test_forbidden_watch_raises():
    clock = Clock()
    api = FakeApi(clock, [listing([])], [[KubeRequestError("permission denied: cannot watch x", status=403)]])
    with pytest.raises(KubeRequestError) as exc:
        make(clock, api).wait(["n"], 10)
    assert exc.value.forbidden


def test_list_retries_connection_errors_until_deadline():
    clock = Clock()
    errors = [KubeRequestError("down", status=None)] * 10
    api = FakeApi(clock, errors, [])
    result = make(clock, api).wait(["n"], 3)
    assert result["complete"] is False and result["failure"] is None
    assert result["last_error"] == "down"
    assert clock.now == 3


def test_snapshot_is_one_list(slices):
    clock = Clock()
    api = FakeApi(clock, [listing(slices("two_generations.yaml"))], [])
    result = make(clock, api).snapshot(["node01", "node02"])
    assert result["complete"] is False
    assert kinds(api) == ["list"]


# ------------------------------------------------------------------ pods and report


def pod(name, node=None, phase="Running", container_state=None, restarts=0, affinity_node=None, deleting=False):
    obj = {"metadata": {"name": name}, "spec": {}, "status": {"phase": phase}}
    if node:
        obj["spec"]["nodeName"] = node
    if affinity_node:
        obj["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                    "values": [affinity_node]}]}]}}}
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if container_state:
        obj["status"]["containerStatuses"] = [{"name": "dracpu", "ready": False, "restartCount": restarts,
                                               "state": container_state,
                                               "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}}]
    return obj


def test_driver_nodes():
    pods = [pod("a", "node01"), pod("b", affinity_node="node02", phase="Pending"), pod("c", "node03", phase="Failed"),
            pod("d", "node04", deleting=True), pod("e")]
    assert dp.driver_nodes(pods) == ["node01", "node02"]


def test_pending_report_and_message(slices):
    clock = Clock()
    crash = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}
    api = FakeApi(clock, [listing(slices("two_generations.yaml"))], [[("advance", 61)]],
                  nodes={"node01", "node02", "node03"},
                  pods=[pod("drv-1", "node01"), pod("drv-2", "node02", container_state=crash, restarts=5),
                        pod("drv-3", affinity_node="node03", phase="Pending")],
                  logs={"drv-2": "a\nb\nE0101 failed to read /var/lib/kubelet\n"})
    result = make(clock, api).wait(["node01", "node02", "node03"], 60)
    entries = diag.pending_report(api, result, "dra-driver-cpu", "app.kubernetes.io/name=dra-driver-cpu", log_lines=2)
    assert [e["node"] for e in entries] == ["node02", "node03"]
    assert entries[0]["state"] == "incomplete"
    assert entries[0]["logs"] == ["b", "E0101 failed to read /var/lib/kubelet"]
    assert entries[0]["pod"]["containers"][0]["reason"] == "CrashLoopBackOff"
    assert entries[1]["state"] == "missing"
    assert entries[1]["logs"] == []  # pending pod: no log request
    assert ("log", "drv-3", 2) not in api.calls
    message = diag.timeout_message("dra.cpu", 60, entries)
    assert message.splitlines() == [
        "timed out after 60s waiting for the ResourceSlices of driver dra.cpu on 2 node(s):",
        "- node02: 1 of 2 slices published at generation 3; pod drv-2 Running; container dracpu waiting "
        "CrashLoopBackOff, 5 restarts, last Error (exit 1)",
        "  last log lines of drv-2:",
        "    b",
        "    E0101 failed to read /var/lib/kubelet",
        "- node03: no ResourceSlice published; pod drv-3 Pending",
    ]


def test_pending_report_without_pods_or_permission():
    result = {"progress": {"complete": [], "missing": ["n1"], "incomplete": {}}}
    clock = Clock()
    api = FakeApi(clock, [], [], pods=[])
    entries = diag.pending_report(api, result, "ns", "sel")
    assert entries[0]["pod_error"] == "no driver pod on this node (namespace ns, selector sel)"

    class Denied(FakeApi):
        def list_pods(self, namespace, selector=None):
            raise KubeRequestError("permission denied: cannot list pods in namespace ns", status=403)
    entries = diag.pending_report(Denied(clock, [], []), result, "ns", "sel")
    assert entries[0]["pod_error"] == "permission denied: cannot list pods in namespace ns"


def _node_slice(node, uid):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "00000-dra.cpu-%s-x" % node, "uid": uid},
            "spec": {"driver": "dra.cpu", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "cpudevnuma000", "capacity": {"dra.cpu/cpu": {"value": "4"}}}]}}


def test_each_event_judges_only_its_node(monkeypatch):
    """1,000 nodes publishing one by one: the work per event stays constant (no O(N^2) re-judging)."""
    nodes = ["node%04d" % i for i in range(1000)]
    judged = []
    real = w.group_pools

    def counting(slices, driver=w.DEFAULT_DRIVER):
        judged.append(len(slices))
        return real(slices, driver)

    monkeypatch.setattr(w, "group_pools", counting)
    clock = Clock()
    events = [event("ADDED", _node_slice(n, "uid-%s" % n), rv=str(101 + i)) for i, n in enumerate(nodes)]
    api = FakeApi(clock, [listing([], "100")], [events])
    waiter = make(clock, api)
    result = waiter.wait(nodes, 60)
    assert result["complete"] is True
    assert kinds(api) == ["list", "watch"]
    assert len(judged) == 2 * len(nodes)  # the list judges every node once, each event one node
    assert max(judged) <= 1, "an event re-judged more than its own node's slices"
    # each node's topology was built when its pool completed
    assert sorted(result["node_facts"]) == nodes


def test_pending_follows_deletes_and_new_generations(slices):
    s1, s2 = slices("individual_smt_chunks.yaml")
    clock = Clock()
    gen2 = [copy.deepcopy(s) for s in (s1, s2)]
    for i, s in enumerate(gen2):
        s["metadata"]["uid"] = "gen2-%d" % i
        s["spec"]["pool"]["generation"] += 1
    api = FakeApi(clock, [listing([s1, s2], "100")], [[
        event("ADDED", gen2[0], rv="101"),   # newer generation, 1 of 2 chunks: incomplete again
        event("DELETED", s1, rv="102"),
        event("ADDED", gen2[1], rv="103"),   # new generation complete
    ]], nodes=["node01"])
    waiter = make(clock, api)
    waiter._set_targets(["node01"])
    waiter._list()
    assert waiter.pending == set()
    api.lists.append(listing([s1, s2], "100"))
    result = waiter.wait(["node01"], 60)
    assert result["complete"] is True


def test_node_facts_are_built_when_the_pool_completes_and_dropped_when_it_is_not(slices):
    s1, s2 = slices("individual_smt_chunks.yaml")
    gen2 = copy.deepcopy(s1)
    gen2["metadata"]["uid"] = "gen2-0"
    gen2["spec"]["pool"]["generation"] += 1
    clock = Clock()
    api = FakeApi(clock, [listing([s1], "100")], [], nodes=["node01"])
    waiter = make(clock, api)
    waiter._set_targets(["node01"])
    waiter._list()
    assert waiter.node_facts == {}
    waiter.apply("ADDED", event("ADDED", s2, rv="101")["object"])
    assert waiter.node_facts == build_topology([s1, s2])["nodes"]
    waiter.apply("ADDED", event("ADDED", gen2, rv="102")["object"])  # a newer generation, 1 of 2 chunks: not complete any more
    assert waiter.node_facts == {} and waiter.pending == {"node01"}


def test_a_driver_that_cannot_run_ends_the_wait_at_a_tick():
    clock = Clock()
    api = FakeApi(clock, [listing([])], [[("advance", 10), ("advance", 10)]], nodes=["node01"])
    asked = []

    def check(pending):
        asked.append((clock.now, list(pending)))
        return "driver pod p on node node01 cannot pull its image x: ErrImagePull" if clock.now >= 20 else None

    result = w.SliceWaiter(api, "dra.cpu", clock=clock, sleep=clock.sleep, driver_check=check).wait(["node01"], 300)
    assert result["failure"] == "driver pod p on node node01 cannot pull its image x: ErrImagePull"
    assert result["complete"] is False and clock.now == 20 and asked == [(10, ["node01"]), (20, ["node01"])]
