# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Whether the driver that published the pools is the one now running: the rollout after the pools.

Owns the rule (each DaemonSet of the release rolled out as ``kubectl rollout status`` reads it; each
Ready target node's driver pod Ready, or the only one there, running and never restarted, and its node's
pool written after it was created) and the wait for it: ``Rollout``, a k8s/wait.py predicate driven by a
watch of the release's DaemonSets (their status follows their pods; the pods are read when it changes)
or, without a release, of the driver's pods. Why the rule is so: docs/internals.md, "Why the waits are
as they are". The failure's per-node pod state and logs are pod_diagnostics.py's.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections import Counter
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypedDict
from urllib.parse import quote

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.wait import (
    DONE,
    IMPOSSIBLE,
    TICK,
    WAITING,
    Verdict,
    Wait,
    WatchSource,
    object_key,
    retryable,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.nodes import is_ready
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.driver_pods import (
    LEGACY_POD_SELECTOR,
    daemonsets_path,
    list_driver_pods,
    live_pods_by_node,
    pod_node,
    release_daemonsets,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.pod_diagnostics import DriverHealth
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.slice_pools import slice_node

# how often a waiting rollout looks at what no watch event says: a driver pod that cannot run
TICK_SECONDS = 10.0


class Serving(TypedDict):
    """What the rollout wait saw last: the DaemonSets behind (lines), each node not served and why, the
    pods read, how often it judged, the last API error, why the driver cannot run (or None)."""
    done: bool
    daemonsets: list[str]
    nodes: dict[str, str]
    pods: list[K8sObject]
    passes: int
    last_error: str | None
    failure: str | None


def _meta(obj: K8sObject) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def daemonsets_behind(daemonsets: list[K8sObject]) -> list[str]:
    """One line per DaemonSet whose rollout is not done (kubectl's first two conditions)."""
    lines = []
    for ds in daemonsets:
        name = _meta(ds).get("name")
        status = ds.get("status") or {}
        generation = _meta(ds).get("generation") or 0
        observed = status.get("observedGeneration") or 0
        if observed < generation:
            lines.append("DaemonSet %s: generation %s not yet observed by its controller (observed %s)"
                         % (name, generation, observed))
            continue
        desired = status.get("desiredNumberScheduled") or 0
        updated = status.get("updatedNumberScheduled") or 0
        if updated < desired:
            lines.append("DaemonSet %s: %d of %d pods run its current template (the rollout is in progress)"
                         % (name, updated, desired))
    return lines


def daemonsets_available(daemonsets: list[K8sObject]) -> bool:
    """Every DaemonSet has every desired pod available (kubectl's third condition, numberAvailable):
    with the first two, the rollout is done and no pod needs to be read."""
    return bool(daemonsets) and all(
        ((ds.get("status") or {}).get("numberAvailable") or 0) >= ((ds.get("status") or {}).get("desiredNumberScheduled") or 0)
        for ds in daemonsets)


def _when(text: Any) -> datetime | None:
    """An API timestamp (RFC 3339, whole seconds, UTC) as a datetime; None when absent or not one."""
    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None


def pools_written(slices: list[K8sObject]) -> dict[str, datetime]:
    """Per node: the last second any slice of its pool was created or written (``creationTimestamp``,
    ``managedFields[].time``)."""
    out: dict[str, datetime] = {}
    for item in slices or []:
        node = slice_node(item)
        stamps = [_meta(item).get("creationTimestamp")] + [m.get("time") for m in _meta(item).get("managedFields") or []]
        for when in (_when(s) for s in stamps if s):
            if node and when and (node not in out or when > out[node]):
                out[node] = when
    return out


def published_by(pod: K8sObject, written: datetime | None) -> bool:
    """The pod's driver wrote its node's pool: Running, every container running and never restarted,
    the pool written in a later second than the pod was created."""
    status = pod.get("status") or {}
    created = _when(_meta(pod).get("creationTimestamp"))
    containers = status.get("containerStatuses") or []
    return bool(written and created and written > created and status.get("phase") == "Running" and containers
                and all("running" in (c.get("state") or {}) and not c.get("restartCount") for c in containers))


def nodes_not_serving(pods: list[K8sObject], nodes: list[str],
                      written: dict[str, datetime] | None = None) -> dict[str, str]:
    """Per node of ``nodes`` whose driver pod does not serve: why (no pod, or which pod is not Ready).
    ``written`` (pools_written): a node whose only driver pod wrote its pool serves, Ready or not yet."""
    live = live_pods_by_node(pods)
    everyone = Counter(pod_node(p) for p in pods or [])   # the pods being deleted too
    out = {}
    for node in nodes:
        on = live.get(node)
        if not on:
            out[node] = "its pool is published but no driver pod runs on it"
            continue
        if written and everyone[node] == 1 and published_by(on[0], written.get(node)):
            continue
        unready = sorted(str(_meta(p).get("name")) for p in on if not is_ready(p))
        if unready:
            out[node] = "its pool is published but driver pod %s is not Ready" % ", ".join(unready)
    return out


class Rollout(object):
    """The rollout predicate: the DaemonSets (``release``) or the driver's pods (no release) from the watch."""

    def __init__(self, api: RawApi, namespace: str, selectors: list[str], release: str, nodes: list[str],
                 slices: list[K8sObject] | None, health: DriverHealth | None) -> None:
        self.api, self.namespace, self.selectors, self.release = api, namespace, selectors, release
        self.nodes, self.slices, self.health = nodes, slices or [], health
        self.objects: dict[str, K8sObject] = {}
        self.written: dict[str, datetime] | None = None
        self.state = Serving(done=False, daemonsets=[], nodes={}, pods=[], passes=0, last_error=None, failure=None)

    def source(self) -> WatchSource:
        if self.release:
            return WatchSource(self.api, daemonsets_path(self.namespace))
        path = "/api/v1/namespaces/%s/pods" % quote(self.namespace, safe="")
        return WatchSource(self.api, path, {"labelSelector": (self.selectors or [LEGACY_POD_SELECTOR])[0]})

    def replace(self, items: list[K8sObject]) -> None:
        self.objects = dict((object_key(o), o) for o in items)

    def apply(self, kind: str, obj: K8sObject) -> None:
        if kind == "DELETED":
            self.objects.pop(object_key(obj), None)
        else:
            self.objects[object_key(obj)] = obj

    def _look(self) -> None:
        """The DaemonSets behind and the nodes not served; the pods read only when the DaemonSets do not
        say done (at 1,000 nodes a list of 1,000)."""
        state = self.state
        if self.release:
            daemonsets = release_daemonsets(list(self.objects.values()), self.release, self.namespace)
            state["daemonsets"] = daemonsets_behind(daemonsets)
            if not state["daemonsets"] and daemonsets_available(daemonsets):
                state["pods"], state["nodes"] = [], {}
                return
            state["pods"] = list_driver_pods(self.api, self.namespace, self.selectors)
        else:
            state["pods"] = list(self.objects.values())
        if self.written is None:
            self.written = pools_written(self.slices)
        state["nodes"] = nodes_not_serving(state["pods"], self.nodes, self.written)

    def judge(self, moment: str) -> Verdict[Serving]:
        state = self.state
        state["passes"] += 1
        try:
            self._look()
        except KubeRequestError as exc:
            if not retryable(exc):
                raise
            state["last_error"] = exc.message
            return Verdict(WAITING, state)
        state["last_error"] = None
        if not state["daemonsets"] and not state["nodes"]:
            state["done"] = True
            return Verdict(DONE, state)
        if moment == TICK and self.health and state["nodes"]:
            state["failure"] = self.health.check(sorted(state["nodes"]), state["pods"])
            if state["failure"]:
                return Verdict(IMPOSSIBLE, state, reason=state["failure"])
        return Verdict(WAITING, state, waiting_for=state["daemonsets"] + sorted(state["nodes"]))


def wait_serving(api: RawApi, namespace: str, selectors: list[str], release: str, nodes: list[str],
                 timeout: float, clock: Callable[[], float], sleep: Callable[[float], None],
                 slices: list[K8sObject] | None = None, health: DriverHealth | None = None,
                 tick: float = TICK_SECONDS) -> Serving:
    """Until the rule holds, the driver cannot run (``health``, judged every ``tick`` seconds) or
    ``timeout`` seconds. ``release`` empty: no DaemonSet is read (the pods come from ``selectors[0]``).
    ``slices``: the pools waited for (when each node's was last written, read once). Raises
    KubeRequestError on errors other than connection errors and 5xx."""
    rollout = Rollout(api, namespace, selectors, release, nodes, slices, health)
    Wait(rollout.source(), rollout, clock=clock, sleep=sleep, tick=tick).run(timeout)
    return rollout.state
