# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Wait for the driver's ResourceSlices: every target node's pool complete.

Owns ``SliceWaiter``, the predicate of that wait (k8s/wait.py runs it: one list, then a watch of the
slices with ``fieldSelector=spec.driver=<driver>``), judged per event on the node the event is about,
and the deleted-node checks: a target node that no longer exists is dropped (checked when its last slice
goes, after a re-list, at each tick while a target is pending, at the deadline). At each tick a
``driver_check`` (pod_diagnostics.DriverHealth) may end the wait early: a driver that cannot run. A
``pool_check`` (pcie_roots.pool_check: the devices carry PCIe roots as the release asks) makes a
complete pool count only when it holds too.
Why it is built so: docs/internals.md, "Why the waits are as they are".
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import time
from collections.abc import Callable
from typing import Dict, List, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import (
    RESOURCE_SLICES_PATH,
    KubeRequestError,
    RawApi,
    driver_field_selector,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.wait import (
    DEADLINE,
    DONE,
    EVENT,
    IMPOSSIBLE,
    RELISTED,
    TICK,
    WAITING,
    Verdict,
    Wait,
    WatchSource,
    WaitStats,
    new_stats,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.slice_pools import (
    DEFAULT_DRIVER,
    group_pools,
    pool_progress,
    pools_by_node,
    slice_node,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.fact import node_topology
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.pcie_roots import PoolCheck
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import NodeTopology, PoolProgress

# how often a pending wait looks at what no slice event says: deleted nodes, a driver pod that cannot run
NODE_CHECK_INTERVAL = 10.0
# ``driver_check(pending nodes)``: why the driver cannot run there, or None
DriverCheck = Callable[[list[str]], "str | None"]


class _WaitOutcomeBase(TypedDict):
    complete: bool
    slices: List[K8sObject]
    targets: List[str]
    dropped_nodes: List[str]
    progress: PoolProgress
    node_facts: Dict[str, NodeTopology]
    stats: WaitStats
    resource_version: Optional[str]
    last_error: Optional[str]
    failure: Optional[str]


class WaitOutcome(_WaitOutcomeBase, total=False):
    """What a wait (or a snapshot) of ``SliceWaiter`` saw: the slices, the targets' progress and node
    topologies, its stats; ``elapsed`` when it waited, ``failure`` why the driver cannot run."""

    elapsed: float


def _meta(obj: K8sObject) -> K8sObject:
    return (obj or {}).get("metadata") or {}


def _key(obj: K8sObject) -> str | None:
    meta = _meta(obj)
    # bookkeeping key for the local cache; the logic never interprets names
    return meta.get("uid") or meta.get("name")


class SliceWaiter(object):
    """The ResourceSlices of one driver until the targets' pools are complete (a k8s/wait.py predicate)."""

    def __init__(self, api: RawApi, driver: str = DEFAULT_DRIVER, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, max_backoff: float = 5.0,
                 node_check_interval: float = NODE_CHECK_INTERVAL, driver_check: DriverCheck | None = None,
                 pool_check: PoolCheck | None = None) -> None:
        self.api = api
        self.driver = driver
        self.clock = clock
        self.sleep = sleep
        self.max_backoff = max_backoff
        self.node_check_interval = node_check_interval
        self.driver_check = driver_check
        self.pool_check = pool_check
        self.slices: dict[str | None, K8sObject] = {}
        self.resource_version: str | None = None
        self.stats = new_stats()
        self.targets: list[str] = []
        self.targets_set: set[str] = set()
        self.dropped: list[str] = []
        self.last_error: str | None = None
        self.failure: str | None = None
        # incremental bookkeeping, so a watch event costs O(slices of one node), not O(all slices):
        # slices per node, and the target nodes whose pool is not complete yet
        self.by_node: dict[str | None, dict[str | None, K8sObject]] = {}
        self.pending: set[str] = set()
        self.gone: list[str] = []   # targets whose last slice an event deleted: does the node still exist?
        # each target's topology, built when its pool completes (during the wait, not after it)
        self.node_facts: dict[str, NodeTopology] = {}

    def _source(self) -> WatchSource:
        return WatchSource(self.api, RESOURCE_SLICES_PATH, {"fieldSelector": driver_field_selector(self.driver)})

    # ------------------------------------------------------------------ the predicate

    def replace(self, items: list[K8sObject]) -> None:
        """After a list: the slices of this driver, the per-node index and the pending set."""
        self.slices = dict((_key(i), i) for i in items if (i.get("spec") or {}).get("driver") in (None, self.driver))
        self.by_node = {}
        for key, item in self.slices.items():
            self.by_node.setdefault(slice_node(item), {})[key] = item
        self.pending = set(node for node in self.targets if not self._complete(node))

    def apply(self, kind: str, obj: K8sObject) -> None:
        """One watch event: re-judge the node it is about."""
        if (obj.get("spec") or {}).get("driver") not in (None, self.driver):
            return
        key, node = _key(obj), slice_node(obj)
        if kind in ("ADDED", "MODIFIED"):
            self.slices[key] = obj
            self.by_node.setdefault(node, {})[key] = obj
        elif kind == "DELETED":
            self.slices.pop(key, None)
            self.by_node.get(node, {}).pop(key, None)
            if node in self.targets_set and not self.by_node.get(node):
                self.gone.append(str(node))
        self._judge(node)

    def judge(self, moment: str) -> Verdict[set[str]]:
        """Done when no target is pending; the deleted-node checks and the driver check by ``moment``."""
        if moment == EVENT and self.gone:
            self._drop_deleted(self.gone)
        elif moment == RELISTED:
            self._drop_deleted(set(n for n in self.pending if not self.by_node.get(n)))
        elif moment == DEADLINE and self.pending:
            self._drop_deleted(set(self.pending))
        elif moment == TICK:
            self._check_pending_nodes()
            if self.pending and self.driver_check:
                self.failure = self.driver_check(sorted(self.pending))
        self.gone = []
        if not self.pending:
            return Verdict(DONE, self.pending)
        if self.failure:
            return Verdict(IMPOSSIBLE, self.pending, reason=self.failure)
        return Verdict(WAITING, self.pending)

    # ------------------------------------------------------------------ helpers

    def _list(self) -> None:
        items, self.resource_version = self._source().list()
        self.stats["lists"] += 1
        self.replace(items)

    def _set_targets(self, targets: list[str]) -> None:
        self.targets = sorted(set(targets))
        self.targets_set = set(self.targets)
        self.pending = set(self.targets)   # until a list says otherwise

    def _complete(self, node: str) -> bool:
        """Judge one node's pool; keep its topology (``node_facts``) while the pool is complete."""
        slices = list(self.by_node.get(node, {}).values())
        pool = pools_by_node(group_pools(slices, self.driver)).get(node)
        if pool is None or not pool["complete"] or (self.pool_check is not None and self.pool_check(pool)):
            self.node_facts.pop(node, None)
            return False
        self.node_facts[node] = node_topology(pool, self.driver)
        return True

    def _judge(self, node: str | None) -> None:
        """Re-judge one target node after its slices changed."""
        if node not in self.targets_set:
            return
        if self._complete(str(node)):
            self.pending.discard(str(node))
        else:
            self.pending.add(str(node))

    def _drop_target(self, node: str) -> None:
        self.targets.remove(node)
        self.targets_set.discard(node)
        self.pending.discard(node)
        self.dropped.append(node)

    def _drop_deleted(self, candidates: list[str] | set[str]) -> None:
        """Drop target nodes among ``candidates`` that no longer exist."""
        for node in sorted(set(candidates)):
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

    # ------------------------------------------------------------------ wait

    def snapshot(self, targets: list[str]) -> WaitOutcome:
        """One list, no wait: the current slices and the progress."""
        self._set_targets(targets)
        self._list()
        return self.result(waited=False)

    def wait(self, targets: list[str], timeout: int) -> WaitOutcome:
        """Until every node in ``targets`` has a complete pool, the driver check fails or ``timeout``.

        Returns ``result()`` (``complete``; ``failure``: why the driver cannot run). Raises
        KubeRequestError on permission problems."""
        self._set_targets(targets)
        wait = Wait(self._source(), self, clock=self.clock, sleep=self.sleep, tick=self.node_check_interval,
                    max_backoff=self.max_backoff, stats=self.stats)
        verdict = wait.run(timeout)
        self.resource_version, self.last_error = wait.resource_version, wait.last_error
        return self.result(elapsed=wait.elapsed, failure=verdict.reason or None)

    def result(self, elapsed: float | None = None, waited: bool = True, failure: str | None = None) -> WaitOutcome:
        progress = pool_progress(list(self.slices.values()), self.targets, self.driver, self.pool_check)
        out: WaitOutcome = {
            "complete": not progress["missing"] and not progress["incomplete"],
            "slices": sorted(self.slices.values(), key=lambda s: _meta(s).get("name") or ""),
            "targets": list(self.targets),
            "dropped_nodes": sorted(self.dropped),
            "progress": progress,
            "node_facts": dict((n, self.node_facts[n]) for n in self.targets if n in self.node_facts),
            "stats": self.stats.copy(),
            "resource_version": self.resource_version,
            "last_error": self.last_error,
            "failure": failure,
        }
        if elapsed is not None:
            out["elapsed"] = elapsed
        return out
