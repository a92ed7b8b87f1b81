# SPDX-License-Identifier: Apache-2.0
"""k8s/wait.py: the one wait primitive, against a scripted source (lists and watches in order)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import wait as w
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import Clock, FakeCluster


def _raise(exc):
    raise exc


def obj(name, rv="1", ready=False):
    return {"metadata": {"name": name, "uid": "uid-" + name, "resourceVersion": rv}, "status": {"ready": ready}}


class Script(object):
    """Lists (or exceptions) and watches (lists of events, exceptions, ("advance", s)) consumed in order."""
    watchable = True
    interval = 0.0

    def __init__(self, clock, lists, watches):
        self.clock, self.lists, self.watches, self.calls = clock, list(lists), list(watches), []

    def list(self):
        self.calls.append(("list",))
        item = self.lists.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def watch(self, resource_version, seconds, timeout):
        self.calls.append(("watch", resource_version, seconds))
        for item in self.watches.pop(0) if self.watches else [("advance", seconds)]:
            if isinstance(item, Exception):
                _raise(item)
            elif isinstance(item, tuple):
                self.clock.now += item[1]
                yield None   # time passed without an event: the inline pump's "nothing yet"
            else:
                yield item

    def kinds(self):
        return [c[0] for c in self.calls]


def all_ready(items):
    waiting = sorted(i["metadata"]["name"] for i in items if not i["status"]["ready"])
    if any(i["status"].get("broken") for i in items):
        return w.Verdict(w.IMPOSSIBLE, items, reason="broken")
    return w.Verdict(w.WAITING if waiting or not items else w.DONE, items, waiting_for=waiting)


def run(source, clock, timeout=60, tick=None):
    wait = w.Wait(source, w.Snapshot(all_ready), clock=clock, sleep=clock.sleep, tick=tick)
    return wait.run(timeout), wait


def ev(kind, item):
    return {"type": kind, "object": item}


def test_done_at_once_is_one_list():
    clock = Clock()
    src = Script(clock, [([obj("a", ready=True)], "10")], [])
    verdict, wait = run(src, clock)
    assert verdict.done and not verdict.timed_out and src.kinds() == ["list"]
    assert wait.stats == {"lists": 1, "watches": 0, "relists": 0, "reconnects": 0, "node_checks": 0, "events": 0}


def test_done_after_events_watches_from_the_lists_version_and_honours_bookmarks():
    clock = Clock()
    src = Script(clock, [([obj("a")], "10")],
                 [[ev("BOOKMARK", {"metadata": {"resourceVersion": "15"}}), ("advance", 2),
                   ev("MODIFIED", obj("a", "16", ready=True))]])
    verdict, wait = run(src, clock)
    assert verdict.done and src.calls[1] == ("watch", "10", 60)
    assert wait.resource_version == "16" and wait.stats["events"] == 1 and wait.elapsed == 2


@pytest.mark.parametrize("gone", [ev("ERROR", {"kind": "Status", "code": 410, "message": "too old"}),
                                  KubeRequestError("gone", status=410)])
def test_410_relists(gone):
    clock = Clock()
    src = Script(clock, [([obj("a")], "10"), ([obj("a", "30", ready=True)], "30")], [[gone]])
    verdict, wait = run(src, clock)
    assert verdict.done and src.kinds() == ["list", "watch", "list"] and wait.stats["relists"] == 1


def test_a_watch_closed_before_its_time_relists_one_ended_by_the_server_reopens():
    clock = Clock()
    src = Script(clock, [([obj("a")], "10"), ([obj("a", "20")], "20")],
                 [[], [("advance", 59)], [ev("MODIFIED", obj("a", "21", ready=True))]])
    verdict, wait = run(src, clock, timeout=60, tick=5)
    assert verdict.done and src.kinds() == ["list", "watch", "list", "watch", "watch"]
    # the second watch asked for what was left of the wait (59.5 s, rounded up) and the server ended it
    # then: reopened from its version for the last half second, no list
    assert src.calls[3][1:] == ("20", 60) and src.calls[4][1:] == ("20", 1)
    assert wait.stats["relists"] == 1


def test_the_tick_is_judged_while_the_watch_stays_open():
    clock = Clock()
    moments = []

    class Counting(w.Snapshot):
        def judge(self, moment):
            moments.append(moment)
            return w.Verdict(w.DONE if moment == w.EVENT else w.WAITING, None)

    src = Script(clock, [([], "1")], [[("advance", 10), ("advance", 10), ev("ADDED", obj("a", "2"))]])
    verdict = w.Wait(src, Counting(all_ready), clock=clock, sleep=clock.sleep, tick=10).run(60)
    assert verdict.done and moments == ["listed", "tick", "tick", "event"]
    # one watch, asked for the whole wait: the ticks did not end it
    assert src.kinds() == ["list", "watch"] and src.calls[1][2] == 60


def test_a_threaded_pump_wakes_for_the_tick_and_hands_on_events_and_errors():
    import threading

    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import pump as p

    release = threading.Event()

    def events():
        yield ev("ADDED", obj("a"))
        release.wait(5)
        raise KubeRequestError("reset", status=None)

    pump = p.ThreadedPump(events())
    assert pump.next(5)["type"] == "ADDED"
    assert pump.next(0.05) is None   # nothing within the timeout: the caller judges its tick
    release.set()
    with pytest.raises(KubeRequestError):
        pump.next(5)
    done = p.ThreadedPump(iter([]))
    with pytest.raises(p.EndOfWatch):
        done.next(5)
    pump.close()


def test_connection_errors_reconnect_with_a_growing_bounded_backoff():
    clock = Clock()
    down = KubeRequestError("reset", status=None)
    src = Script(clock, [([obj("a")], "10")],
                 [[ev("MODIFIED", obj("a", "11")), down], [down], [KubeRequestError("boom", status=503)], [down],
                  [down], [down], [ev("MODIFIED", obj("a", "12", ready=True))]])
    verdict, wait = run(src, clock)
    assert verdict.done and wait.stats["reconnects"] == 6
    # 0.5 after the event reset the count, then 1, 2, 4, 5, 5 (bounded)
    assert clock.now == 0.5 + 1 + 2 + 4 + 5 + 5
    assert [c[1] for c in src.calls if c[0] == "watch"][-1] == "11" and wait.last_error == "reset"


def test_a_list_failing_with_connection_errors_is_retried():
    clock = Clock()
    src = Script(clock, [KubeRequestError("down", status=None), ([obj("a", ready=True)], "10")], [])
    verdict, wait = run(src, clock)
    assert verdict.done and clock.now == 0.5 and wait.last_error == "down"


@pytest.mark.parametrize("where", ["list", "watch"])
def test_forbidden_is_raised(where):
    clock = Clock()
    denied = KubeRequestError("permission denied: cannot watch x", status=403)
    src = Script(clock, [denied] if where == "list" else [([obj("a")], "1")], [[denied]])
    with pytest.raises(KubeRequestError) as exc:
        run(src, clock)
    assert exc.value.forbidden


def test_time_running_out_returns_the_last_state_seen():
    clock = Clock()
    src = Script(clock, [([obj("a"), obj("b")], "10")], [[ev("MODIFIED", obj("a", "11", ready=True)), ("advance", 61)]])
    verdict, wait = run(src, clock)
    assert verdict.state == w.WAITING and verdict.timed_out and verdict.waiting_for == ["b"]
    assert [i["metadata"]["name"] for i in verdict.seen] == ["b", "a"] and wait.elapsed == 61


def test_a_list_that_never_works_times_out_with_the_error():
    clock = Clock()
    src = Script(clock, [KubeRequestError("down", status=None)] * 20, [])
    verdict, wait = run(src, clock, timeout=3)
    assert verdict.timed_out and wait.last_error == "down" and clock.now == 3


def test_impossible_ends_the_wait_at_once():
    clock = Clock()
    broken = obj("a", "11")
    broken["status"]["broken"] = True
    src = Script(clock, [([obj("a")], "10")], [[ev("MODIFIED", broken), ("advance", 100)]])
    verdict, wait = run(src, clock, timeout=300)
    assert verdict.state == w.IMPOSSIBLE and verdict.reason == "broken" and not verdict.timed_out
    assert clock.now == 0


def test_deleted_objects_leave_the_snapshot():
    clock = Clock()
    src = Script(clock, [([obj("a", ready=True), obj("b")], "10")], [[ev("DELETED", obj("b", "11"))]])
    verdict, unused = run(src, clock)
    assert verdict.done and [i["metadata"]["name"] for i in verdict.seen] == ["a"]


def test_a_watch_source_over_the_api():
    cluster = FakeCluster({"/api/v1/pods": {"metadata": {"resourceVersion": "5"}, "items": [obj("a")]}},
                          watches=[[ev("MODIFIED", obj("a", "6", ready=True))]])
    clock = Clock()
    verdict, unused = run(w.WatchSource(RawApi(cluster), "/api/v1/pods", {"labelSelector": "x=y"}), clock)
    assert verdict.done
    assert cluster.calls[0] == ("/api/v1/pods", {"labelSelector": "x=y"})
    assert cluster.calls[1][1] == {"labelSelector": "x=y", "allowWatchBookmarks": "true", "timeoutSeconds": 60,
                                   "resourceVersion": "5", "watch": "true"}


def test_poll_until_reads_every_interval_and_reports_the_last_read():
    clock = Clock()
    reads = iter([None, None, {"gone": False}])
    got = w.poll_until(lambda: next(reads, {"gone": False}), lambda seen: seen is None, 10, 3, clock, clock.sleep,
                       initial={"gone": False})
    assert got.done and clock.now == 3
    clock = Clock()
    got = w.poll_until(lambda: "there", lambda seen: seen is None, 5, 2, clock, clock.sleep)
    assert got.timed_out and got.seen == "there" and clock.now == 5
