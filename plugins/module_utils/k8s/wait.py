# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The collection's one wait: list, then watch from the list's resourceVersion, until a predicate is done.

Owns ``Wait`` (the loop: deadline, re-list on 410 Gone or a watch closed early, reconnect with bounded
backoff on connection errors and 5xx, bookmarks, stats), ``Verdict`` (what a predicate says it saw),
the sources (``WatchSource`` for an API path, ``PollSource`` for a read repeated every interval where no
watch can be had: an action plugin reading through modules) and ``Snapshot`` (a predicate over the
current objects as a list). One watch drives a wait; a second kind of object is read by the predicate
when it is judged (rollout.py watches the DaemonSets and reads the pods). ``tick`` judges at least that
often, for what no event announces (a node deleted, a driver pod stuck pulling its image), without
ending the watch (k8s/pump.py reads its events).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypedDict, TypeVar

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.pump import EndOfWatch, InlinePump, Pump, ThreadedPump
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject

DONE, WAITING, IMPOSSIBLE = "done", "waiting", "impossible"
# the moments a predicate is judged at
LISTED, RELISTED, EVENT, TICK, DEADLINE, UNREAD = "listed", "relisted", "event", "tick", "deadline", "unread"

S = TypeVar("S")


class WaitStats(TypedDict, total=False):
    """What a wait did, as ``wait_stats`` reports it (the role, the bench and the tests read these keys)."""
    lists: int
    watches: int
    relists: int
    reconnects: int
    node_checks: int
    events: int
    elapsed: float
    rollout_passes: int


def new_stats() -> WaitStats:
    return WaitStats(lists=0, watches=0, relists=0, reconnects=0, node_checks=0, events=0)


@dataclass
class Verdict(Generic[S]):
    """``state`` done, waiting (``waiting_for`` says for what) or impossible (``reason``); ``seen`` the
    state judged; ``timed_out`` when the deadline came first (the last verdict, for the report)."""
    state: str
    seen: S
    waiting_for: list[str] = field(default_factory=list)
    reason: str = ""
    timed_out: bool = False

    @property
    def done(self) -> bool:
        return self.state == DONE

    @property
    def final(self) -> bool:
        return self.state in (DONE, IMPOSSIBLE)


class Predicate(Protocol[S]):
    """Keeps the current objects (``replace`` after a list, ``apply`` per watch event) and judges them."""

    def replace(self, items: list[K8sObject]) -> None: ...

    def apply(self, kind: str, obj: K8sObject) -> None: ...

    def judge(self, moment: str) -> Verdict[S]: ...


class Source(Protocol):
    """Where the objects come from: ``list`` -> (items, resourceVersion); ``watch`` its events."""
    watchable: bool
    interval: float

    def list(self) -> tuple[list[K8sObject], str | None]: ...

    def watch(self, resource_version: str | None, seconds: int, timeout: float) -> Iterator[K8sObject]: ...


def _meta(obj: K8sObject) -> K8sObject:
    return (obj or {}).get("metadata") or {}


def object_key(obj: K8sObject) -> str:
    """The cache key of an object: its uid, else its namespace/name."""
    meta = _meta(obj)
    return str(meta.get("uid") or "%s/%s" % (meta.get("namespace") or "", meta.get("name") or ""))


class WatchSource(object):
    """List and watch one API path (``query``: its selectors)."""
    watchable = True
    interval = 0.0

    def __init__(self, api: RawApi, path: str, query: dict[str, Any] | None = None) -> None:
        self.api, self.path, self.query = api, path, dict(query or {})

    def list(self) -> tuple[list[K8sObject], str | None]:
        data = self.api.get_json(self.path, dict(self.query) or None)
        return list(data.get("items") or []), _meta(data).get("resourceVersion")

    def watch(self, resource_version: str | None, seconds: int, timeout: float) -> Iterator[K8sObject]:
        query = dict(self.query, allowWatchBookmarks="true", timeoutSeconds=seconds)
        if resource_version:
            query["resourceVersion"] = resource_version
        return self.api.watch(self.path, query, timeout=timeout)


class PollSource(object):
    """``read()`` every ``interval`` seconds (``initial``: the first read's answer, already had)."""
    watchable = False

    def __init__(self, read: Callable[[], list[Any]], interval: float, initial: list[Any] | None = None) -> None:
        self.read, self.interval, self.initial = read, float(interval), initial

    def list(self) -> tuple[list[K8sObject], str | None]:
        if self.initial is not None:
            items, self.initial = self.initial, None
            return items, None
        return self.read(), None

    def watch(self, resource_version: str | None, seconds: int, timeout: float) -> Iterator[K8sObject]:
        raise NotImplementedError("a PollSource has no watch")


class Snapshot(Generic[S]):
    """A predicate judging the current objects as one list: ``judge_items(items) -> Verdict``."""

    def __init__(self, judge_items: Callable[[list[Any]], Verdict[S]]) -> None:
        self.judge_items = judge_items
        self.objects: list[Any] = []

    def replace(self, items: list[K8sObject]) -> None:
        self.objects = list(items)

    def apply(self, kind: str, obj: K8sObject) -> None:
        key = object_key(obj)
        kept = [o for o in self.objects if object_key(o) != key]
        self.objects = kept if kind == "DELETED" else kept + [obj]

    def judge(self, moment: str) -> Verdict[S]:
        return self.judge_items(list(self.objects))


def retryable(exc: KubeRequestError) -> bool:
    """A connection error or a 5xx: worth another try within the deadline."""
    return exc.connection_error or bool(exc.status and exc.status >= 500)


class Wait(Generic[S]):
    """One wait of ``predicate`` over ``source``; ``run(timeout)`` -> the last Verdict.

    Raises KubeRequestError for what another try cannot mend (forbidden, not found, 4xx)."""

    def __init__(self, source: Source, predicate: Predicate[S], clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, tick: float | None = None, max_backoff: float = 5.0,
                 stats: WaitStats | None = None,
                 pump: Callable[[Iterator[K8sObject | None]], Pump] | None = None) -> None:
        self.source, self.predicate, self.clock, self.sleep = source, predicate, clock, sleep
        self.tick, self.max_backoff = tick, max_backoff
        self.stats: WaitStats = stats if stats is not None else new_stats()
        # a tick needs a thread to wake it while the watch is open; threads and a faked sleep (a scripted
        # source under a fake clock) do not mix, so those read inline
        self.pump = pump or (ThreadedPump if tick and sleep is time.sleep else InlinePump)
        self.resource_version: str | None = None
        self.last_error: str | None = None
        self.next_tick: float | None = None
        self.elapsed = 0.0
        self.attempt = 0

    def _backoff(self, deadline: float) -> None:
        delay = min(self.max_backoff, 0.5 * (2 ** self.attempt))
        delay = max(0.0, min(delay, deadline - self.clock()))
        self.attempt += 1
        if delay:
            self.sleep(delay)

    def _list(self, deadline: float) -> bool:
        """List until it works or the deadline passes (False)."""
        while True:
            try:
                items, self.resource_version = self.source.list()
            except KubeRequestError as exc:
                if not retryable(exc):
                    raise
                self.last_error = exc.message
                if self.clock() >= deadline:
                    return False
                self._backoff(deadline)
                continue
            self.stats["lists"] = self.stats.get("lists", 0) + 1
            self.attempt = 0
            self.predicate.replace(items)
            return True

    def _tick(self) -> Verdict[S] | None:
        """The predicate judged at TICK when a tick is due (None when none is)."""
        if self.next_tick is None or self.clock() < self.next_tick:
            return None
        verdict = self.predicate.judge(TICK)
        self.next_tick = self.clock() + float(self.tick or 0)
        return verdict

    def _event(self, event: K8sObject) -> str | None:
        """Apply one watch event: None, or what to do instead of reading on (relist, reconnect, bookmark)."""
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                return "relist"
            self.last_error = "watch error %s: %s" % (obj.get("code"), obj.get("message", ""))
            return "reconnect"
        version = _meta(obj).get("resourceVersion")
        if version:
            self.resource_version = version
        if kind == "BOOKMARK":
            return "bookmark"
        self.stats["events"] = self.stats.get("events", 0) + 1
        self.predicate.apply(str(kind), obj)
        return None

    def _read(self, pump: Pump, deadline: float) -> tuple[Verdict[S] | None, str | None]:
        """Events and ticks until a final verdict, the deadline or what ends the watch:
        (a final verdict or None, done, relist, reconnect, timeout, or None when the stream ended)."""
        while True:
            ticked = self._tick()
            if ticked is not None and ticked.final:
                return ticked, "done"
            now = self.clock()
            if now >= deadline:
                return None, "timeout"
            try:
                event = pump.next((deadline if self.next_tick is None else min(deadline, self.next_tick)) - now)
            except EndOfWatch:
                return None, None
            if event is None:
                continue
            self.attempt = 0
            action = self._event(event)
            if action in ("relist", "reconnect"):
                return None, action
            if action is None:
                verdict = self.predicate.judge(EVENT)
                if verdict.final:
                    return verdict, "done"

    def _watch(self, deadline: float) -> tuple[Verdict[S] | None, str]:
        """One watch, open until the deadline, ticks judged while it is: (a final verdict or None, how it
        ended: done, relist, reconnect, timeout, closed)."""
        opened = self.clock()
        remaining = deadline - opened
        seconds = max(1, int(remaining + 0.999))
        self.stats["watches"] = self.stats.get("watches", 0) + 1
        pump = self.pump(self.source.watch(self.resource_version, seconds, remaining + 10))
        try:
            verdict, how = self._read(pump, deadline)
        except KubeRequestError as exc:
            if exc.gone:
                return None, "relist"
            if not retryable(exc):
                raise
            self.last_error = exc.message
            return None, "reconnect"
        finally:
            pump.close()
        if how is not None:
            return verdict, how
        # the server ends a watch at its timeoutSeconds; one that ends sooner was closed: list again
        lasted = self.clock() - opened
        return None, "timeout" if lasted > 0 and lasted >= seconds - 1 else "closed"

    def _step(self, deadline: float) -> tuple[Verdict[S] | None, bool]:
        """One watch or one poll: (a verdict when one was judged, False when the deadline came in a list)."""
        if not self.source.watchable:
            self.sleep(max(0.0, min(self.source.interval, deadline - self.clock())))
            if not self._list(deadline):
                return None, False
            return self.predicate.judge(LISTED), True
        verdict, how = self._watch(deadline)
        if how == "reconnect":
            self.stats["reconnects"] = self.stats.get("reconnects", 0) + 1
            self._backoff(deadline)
        elif how in ("relist", "closed"):
            self.stats["relists"] = self.stats.get("relists", 0) + 1
            if how == "closed":
                self._backoff(deadline)
            if not self._list(deadline):
                return None, False
            return self.predicate.judge(RELISTED), True
        return verdict, True

    def run(self, timeout: float) -> Verdict[S]:
        """Until the predicate is done or impossible, or ``timeout`` seconds (the last verdict, timed out)."""
        start = self.clock()
        deadline = start + float(timeout)
        if not self._list(deadline):
            return self._end(start, self.predicate.judge(UNREAD))
        verdict = self.predicate.judge(LISTED)
        self.next_tick = self.clock() + self.tick if self.tick else None
        while not verdict.final and self.clock() < deadline:
            ticked = self._tick()
            if ticked is not None:
                verdict = ticked
                continue
            judged, listed = self._step(deadline)
            if not listed:
                return self._end(start, self.predicate.judge(UNREAD))
            verdict = judged or verdict
        if not verdict.final and self.source.watchable:
            verdict = self.predicate.judge(DEADLINE)
        return self._end(start, verdict)

    def _end(self, start: float, verdict: Verdict[S]) -> Verdict[S]:
        self.elapsed = round(self.clock() - start, 3)
        return verdict if verdict.final else replace(verdict, timed_out=True)


def poll_until(read: Callable[[], Any], is_done: Callable[[Any], bool], timeout: float, interval: float,
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
               initial: Any = None) -> Verdict[Any]:
    """``read()`` every ``interval`` seconds until ``is_done(what it read)`` or ``timeout``: the Verdict,
    ``seen`` the last read (``initial``: the first read, already had)."""
    def judge(items: list[Any]) -> Verdict[Any]:
        return Verdict(DONE if is_done(items[0]) else WAITING, items[0])

    source = PollSource(lambda: [read()], interval, None if initial is None else [initial])
    return Wait(source, Snapshot(judge), clock=clock, sleep=sleep).run(timeout)
