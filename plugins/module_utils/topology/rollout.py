# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Whether the driver that published the pools is the one now running: the rollout after the pools.

Owns: the rule, and the wait for it, that after every target's pool is complete
- each DaemonSet of the release has rolled out: ``status.observedGeneration`` >= ``metadata.generation``
  and ``updatedNumberScheduled`` >= ``desiredNumberScheduled`` (the first two conditions of
  ``kubectl rollout status``, kubectl's DaemonSetStatusViewer; the controller counts a pod as updated
  by its template hash or generation, IsPodUpdated in pkg/controller/daemon/util);
- each Ready target node runs a driver pod, and every driver pod on it that is not being deleted is
  ``Ready``: kubectl's third condition, ``numberAvailable`` >= ``desiredNumberScheduled``, per node
  instead (a NotReady node's pod cannot turn Ready, and the fact already counts that node in no
  figure). When the DaemonSets meet all three conditions, the pods are not read.
- or, sooner, the node's pool was written by the pod running there now: its only driver pod (no
  older one still going), Running, every container running and never restarted, and the pool
  created or written (``creationTimestamp``, ``managedFields[].time``: the API server's clock, as
  the pod's ``creationTimestamp``) in a later second than that pod was created. Upstream's driver
  answers ``/healthz`` once ``driver.Start`` returned, and ``Start`` registers with the kubelet
  and then starts publishing (cmd/dracpu/app.go, pkg/driver/driver.go): a pool that pod wrote says
  what its readiness probe will say, without the probe's 5 to 15 s (the chart's
  ``initialDelaySeconds: 5``, ``periodSeconds: 10``). The old driver cannot have written it: a
  DaemonSet (``maxSurge`` 0, both charts) makes the new pod only once the old one is being deleted,
  and the old pod is gone from the list before this counts.
Why: helm's ``--wait`` accepts a DaemonSet with up to ``maxUnavailable`` pods not Ready, and after a
version-only upgrade the old driver's pool keeps its shape, sizes and generation until the new driver
publishes again, so a complete pool alone does not say that the new driver runs.

The wait reads the DaemonSets (with a release) and, unless they say the rollout is done, the pods
(one list per selector) once a second until the rule holds or the deadline passes. Who the targets
are and the pools are run.py's and waiter.py's; the failure's per-node pod state and logs are
pod_diagnostics.py's.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.nodes import is_ready
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.driver_pods import (
    list_driver_pods,
    list_release_daemonsets,
    live_pods_by_node,
    pod_node,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.slice_pools import slice_node

POLL_INTERVAL = 1.0


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return (obj or {}).get("metadata") or {}


def daemonsets_behind(daemonsets: list[dict[str, Any]]) -> list[str]:
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


def daemonsets_available(daemonsets: list[dict[str, Any]]) -> bool:
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


def pools_written(slices: list[dict[str, Any]]) -> dict[str, datetime]:
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


def published_by(pod: dict[str, Any], written: datetime | None) -> bool:
    """The pod's driver wrote its node's pool: Running, every container running and never restarted,
    the pool written in a later second than the pod was created."""
    status = pod.get("status") or {}
    created = _when(_meta(pod).get("creationTimestamp"))
    containers = status.get("containerStatuses") or []
    return bool(written and created and written > created and status.get("phase") == "Running" and containers
                and all("running" in (c.get("state") or {}) and not c.get("restartCount") for c in containers))


def nodes_not_serving(pods: list[dict[str, Any]], nodes: list[str],
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


def wait_serving(api: RawApi, namespace: str, selectors: list[str], release: str, nodes: list[str],
                 deadline: float, clock: Callable[[], float], sleep: Callable[[float], None],
                 interval: float = POLL_INTERVAL, slices: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Until the rule holds or ``deadline`` (``clock`` time). Returns ``{done, daemonsets: [lines],
    nodes: {node: reason}, pods: [the last pods read], passes, last_error}``.
    ``release`` empty: the DaemonSets are not read (the pods came from ``pod_selector``).
    ``slices``: the pools waited for; when each node's was last written (pools_written) is read from
    them once, the first time the pods are.
    Raises KubeRequestError on errors other than connection errors and 5xx."""
    out: dict[str, Any] = {"done": False, "daemonsets": [], "nodes": {}, "pods": [], "passes": 0, "last_error": None}
    written: dict[str, datetime] | None = None
    while True:
        out["passes"] += 1
        try:
            daemonsets = list_release_daemonsets(api, namespace, release) if release else []
            out["daemonsets"] = daemonsets_behind(daemonsets)
            if out["daemonsets"] or not daemonsets_available(daemonsets):
                out["pods"] = list_driver_pods(api, namespace, selectors)
                if written is None:
                    written = pools_written(slices or [])
                out["nodes"] = nodes_not_serving(out["pods"], nodes, written)
            else:  # kubectl's rollout status says done: no pod to read (at 1,000 nodes a list of 1,000)
                out["pods"], out["nodes"] = [], {}
        except KubeRequestError as exc:
            if not exc.connection_error and not (exc.status and exc.status >= 500):
                raise
            out["last_error"] = exc.message
        else:
            out["last_error"] = None
            if not out["daemonsets"] and not out["nodes"]:
                out["done"] = True
                return out
        if clock() + interval > deadline:
            return out
        sleep(interval)
