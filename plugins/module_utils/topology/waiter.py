# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Wait for the driver's ResourceSlices: one list, then one watch.

``SliceWaiter.wait`` lists ResourceSlices with the field selector
``spec.driver=<driver>`` and watches from the list's resourceVersion until
every target node has a complete pool (see slice_pools.pool_progress). It
re-lists only when the server says the resourceVersion is too old (410 Gone)
and reconnects the watch (from the last resourceVersion seen) after a
connection error or a server-side watch timeout, all within the deadline.
A target node that is deleted during the wait is dropped: its existence is
checked when its last slice disappears, after a re-list, at the deadline and,
while some target is still missing or incomplete, every NODE_CHECK_INTERVAL
seconds (one list of node names: a node whose driver never published anything
has no slice whose deletion would tell).

Owns the list/watch loop only. Which nodes run a driver pod is in
driver_pods.py; the timeout report (pod phase, container states, last log
lines) in pod_diagnostics.py.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import time
from collections.abc import Callable
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.slice_pools import (
    DEFAULT_DRIVER,
    group_pools,
    pool_progress,
    pools_by_node,
    slice_node,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.fact import node_topology
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import NodeTopology, PoolProgress


SLICES_PATH = "/apis/resource.k8s.io/v1/resourceslices"
NODE_CHECK_INTERVAL = 15.0


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return (obj or {}).get("metadata") or {}


def _key(obj: dict[str, Any]) -> str | None:
    meta = _meta(obj)
    # bookkeeping key for the local cache; the logic never interprets names
    return meta.get("uid") or meta.get("name")


class SliceWaiter(object):
    """List + watch ResourceSlices of one driver until the targets are complete."""

    def __init__(self, api: RawApi, driver: str = DEFAULT_DRIVER, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, max_backoff: float = 5.0,
                 node_check_interval: float = NODE_CHECK_INTERVAL) -> None:
        self.api = api
        self.driver = driver
        self.clock = clock
        self.sleep = sleep
        self.max_backoff = max_backoff
        self.node_check_interval = node_check_interval
        self.slices: dict[str | None, dict[str, Any]] = {}
        self.resource_version: str | None = None
        self.stats = {"lists": 0, "watches": 0, "relists": 0, "reconnects": 0, "node_checks": 0,
                      "events": 0}
        self.targets: list[str] = []
        self.targets_set: set[str] = set()
        self.dropped: list[str] = []
        self.last_error: str | None = None
        # incremental bookkeeping, so a watch event costs O(slices of one node), not O(all slices):
        # slices per node, and the target nodes whose pool is not complete yet
        self.by_node: dict[str | None, dict[str | None, dict[str, Any]]] = {}
        self.pending: set[str] = set()
        # each target's topology, built when its pool completes (during the wait, not after it)
        self.node_facts: dict[str, NodeTopology] = {}

    # ------------------------------------------------------------------ helpers

    def _selector(self) -> str:
        return "spec.driver=%s" % self.driver

    def _list(self) -> None:
        data = self.api.get_json(SLICES_PATH, {"fieldSelector": self._selector()})
        self.stats["lists"] += 1
        self.slices = {}
        for item in data.get("items") or []:
            if (item.get("spec") or {}).get("driver") in (None, self.driver):
                self.slices[_key(item)] = item
        self.resource_version = _meta(data).get("resourceVersion")
        self._index()

    def _set_targets(self, targets: list[str]) -> None:
        self.targets = sorted(set(targets))
        self.targets_set = set(self.targets)

    def _index(self) -> None:
        """Rebuild the per-node index and the pending set from ``slices`` (after a list)."""
        self.by_node = {}
        for key, item in self.slices.items():
            self.by_node.setdefault(slice_node(item), {})[key] = item
        self.pending = set(node for node in self.targets if not self._complete(node))

    def _complete(self, node: str) -> bool:
        """Judge one node's pool; keep its topology (``node_facts``) while the pool is complete."""
        slices = list(self.by_node.get(node, {}).values())
        pool = pools_by_node(group_pools(slices, self.driver)).get(node)
        if pool is None or not pool["complete"]:
            self.node_facts.pop(node, None)
            return False
        self.node_facts[node] = node_topology(pool, self.driver)
        return True

    def _judge(self, node: str | None) -> None:
        """Re-judge one target node after its slices changed."""
        if node not in self.targets_set:
            return
        if self._complete(node):
            self.pending.discard(node)
        else:
            self.pending.add(node)

    def _drop_target(self, node: str) -> None:
        self.targets.remove(node)
        self.targets_set.discard(node)
        self.pending.discard(node)
        self.dropped.append(node)

    def _progress(self) -> PoolProgress:
        return pool_progress(list(self.slices.values()), self.targets, self.driver)

    def _done(self) -> bool:
        return not self.pending

    def _drop_deleted(self, candidates: list[str] | set[str]) -> None:
        """Drop target nodes among ``candidates`` that no longer exist."""
        for node in sorted(candidates):
            if node not in self.targets_set:
                continue
            self.stats["node_checks"] += 1
            try:
                exists = self.api.node_exists(node)
            except KubeRequestError as exc:
                if exc.forbidden:
                    raise
                continue
            if not exists:
                self._drop_target(node)

    def _check_pending_nodes(self) -> None:
        """Drop pending targets that no longer exist, with one list of node names."""
        pending = set(self.pending)
        if not pending:
            return
        lister = getattr(self.api, "node_names", None)
        if lister is None:
            self._drop_deleted(pending)
            return
        self.stats["node_checks"] += 1
        try:
            names = lister()
        except KubeRequestError as exc:
            if exc.forbidden:
                self._drop_deleted(pending)
            return
        for node in sorted(pending):
            if node in self.targets_set and node not in names:
                self._drop_target(node)

    def _backoff(self, attempt: int, deadline: float) -> None:
        delay = min(self.max_backoff, 0.5 * (2 ** attempt))
        delay = max(0.0, min(delay, deadline - self.clock()))
        if delay:
            self.sleep(delay)

    def _list_with_retry(self, deadline: float) -> bool:
        attempt = 0
        while True:
            try:
                self._list()
                return True
            except KubeRequestError as exc:
                if not exc.connection_error and not (exc.status and exc.status >= 500):
                    raise
                self.last_error = exc.message
                if self.clock() >= deadline:
                    return False
                self._backoff(attempt, deadline)
                attempt += 1

    def _apply(self, event: dict[str, Any]) -> str | None:
        """Apply one watch event. Returns 'relist', 'check:<node>' or None."""
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code")
            if code == 410:
                return "relist"
            self.last_error = "watch error %s: %s" % (code, obj.get("message", ""))
            return "reconnect"
        version = _meta(obj).get("resourceVersion")
        if version:
            self.resource_version = version
        if kind == "BOOKMARK":
            return None
        self.stats["events"] += 1
        spec = obj.get("spec") or {}
        if spec.get("driver") not in (None, self.driver):
            return None
        key = _key(obj)
        node = slice_node(obj)
        if kind in ("ADDED", "MODIFIED"):
            self.slices[key] = obj
            self.by_node.setdefault(node, {})[key] = obj
            self._judge(node)
        elif kind == "DELETED":
            self.slices.pop(key, None)
            self.by_node.get(node, {}).pop(key, None)
            self._judge(node)
            if node in self.targets_set and not self.by_node.get(node):
                return "check:%s" % node
        return None

    # ------------------------------------------------------------------ wait

    def snapshot(self, targets: list[str]) -> dict[str, Any]:
        """One list, no wait: the current slices and the progress."""
        self._set_targets(targets)
        self._list()
        return self.result(waited=False)

    def wait(self, targets: list[str], timeout: int) -> dict[str, Any]:
        """Wait until every node in ``targets`` has a complete pool.

        Returns ``result()`` with ``complete`` True, or False at the deadline.
        Raises KubeRequestError on permission problems.
        """
        self._set_targets(targets)
        start = self.clock()
        deadline = start + float(timeout)
        if not self._list_with_retry(deadline):
            return self.result(start=start)
        if self._done():
            return self.result(start=start)

        attempt = 0
        next_check = self.clock() + self.node_check_interval
        while self.clock() < deadline:
            if self.clock() >= next_check:
                self._check_pending_nodes()
                next_check = self.clock() + self.node_check_interval
                if self._done():
                    return self.result(start=start)
            remaining = deadline - self.clock()
            # the server ends the watch at the next node check (or the deadline)
            watch_for = min(remaining, max(1.0, next_check - self.clock()))
            query = {
                "fieldSelector": self._selector(),
                "resourceVersion": self.resource_version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": max(1, int(watch_for + 0.999)),
            }
            if not self.resource_version:
                query.pop("resourceVersion")
            action = None
            self.stats["watches"] += 1
            try:
                for event in self.api.watch(SLICES_PATH, query, timeout=remaining + 10):
                    attempt = 0
                    action = self._apply(event)
                    if action and action.startswith("check:"):
                        self._drop_deleted([action.split(":", 1)[1]])
                        action = None
                    if action in ("relist", "reconnect"):
                        break
                    if self._done():
                        return self.result(start=start)
                    if self.clock() >= deadline:
                        break
            except KubeRequestError as exc:
                if exc.gone:
                    action = "relist"
                elif exc.connection_error or (exc.status and exc.status >= 500):
                    self.last_error = exc.message
                    self.stats["reconnects"] += 1
                    self._backoff(attempt, deadline)
                    attempt += 1
                    continue
                else:
                    raise
            if action == "relist":
                self.stats["relists"] += 1
                if not self._list_with_retry(deadline):
                    break
                self._drop_deleted(set(n for n in self.pending if not self.by_node.get(n)))
                if self._done():
                    return self.result(start=start)
            elif action == "reconnect":
                self.stats["reconnects"] += 1
                self._backoff(attempt, deadline)
                attempt += 1
            # else: the server ended the watch (timeoutSeconds); reconnect from resourceVersion

        # deadline: nodes deleted meanwhile do not count
        if self.pending:
            self._drop_deleted(set(self.pending))
        return self.result(start=start)

    def result(self, start: float | None = None, waited: bool = True) -> dict[str, Any]:
        progress = self._progress()
        out = {
            "complete": not progress["missing"] and not progress["incomplete"],
            "slices": sorted(self.slices.values(), key=lambda s: _meta(s).get("name") or ""),
            "targets": list(self.targets),
            "dropped_nodes": sorted(self.dropped),
            "progress": progress,
            "node_facts": dict((n, self.node_facts[n]) for n in self.targets if n in self.node_facts),
            "stats": dict(self.stats),
            "resource_version": self.resource_version,
            "last_error": self.last_error,
        }
        if start is not None:
            out["elapsed"] = round(self.clock() - start, 3)
        return out
