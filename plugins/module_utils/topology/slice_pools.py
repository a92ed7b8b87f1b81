# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""ResourceSlices of dra-driver-cpu -> pools and their completeness.

Owns: which slices belong together (a pool, by ``spec.pool.name``; names of slices are never read),
which generation counts (the highest), whether a pool is complete (its slices at that generation
number its ``resourceSliceCount``), the per-node progress the waiter reports, and the shapes ``Pool``
and ``PoolProgress`` (types.py). Pure; devices are fact.py's. Why: docs/internals.md, "Why the preflight, the
topology and verify read what they read".
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Callable
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import Pool, PoolProgress

DEFAULT_DRIVER = "dra.cpu"


def _spec(obj: K8sObject) -> K8sObject:
    return (obj or {}).get("spec") or {}


def _pool(obj: K8sObject) -> K8sObject:
    return _spec(obj).get("pool") or {}


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def slice_node(obj: K8sObject) -> str | None:
    """The node a slice belongs to (``spec.nodeName``) or None."""
    return _spec(obj).get("nodeName") or None


def slice_name(obj: K8sObject) -> str:
    return ((obj or {}).get("metadata") or {}).get("name") or ""


def group_pools(slices: list[K8sObject], driver: str = DEFAULT_DRIVER) -> dict[str, Pool]:
    """``{pool_name: Pool}``: slices grouped by pool, each pool judged complete or not. Slices of
    other drivers are ignored."""
    by_pool: dict[str, list[K8sObject]] = {}
    for obj in slices or []:
        spec = _spec(obj)
        if driver and spec.get("driver") not in (None, driver):
            continue
        pool = _pool(obj)
        name = pool.get("name") or slice_node(obj)
        if not name:
            continue
        by_pool.setdefault(name, []).append(obj)

    result: dict[str, Pool] = {}
    for name, members in by_pool.items():
        generation = max(_int(_pool(s).get("generation")) for s in members)
        current = [s for s in members if _int(_pool(s).get("generation")) == generation]
        counts = sorted(set(_int(_pool(s).get("resourceSliceCount"), 1) for s in current))
        declared = counts[-1]
        nodes = sorted(set(n for n in (slice_node(s) for s in current) if n))
        published = len(current)
        reason = ""
        if len(counts) > 1:
            reason = ("slices at generation %d disagree on resourceSliceCount (%s)"
                      % (generation, ", ".join(str(c) for c in counts)))
        elif published < declared:
            reason = ("%d of %d slices published at generation %d"
                      % (published, declared, generation))
        elif published > declared:
            reason = ("%d slices at generation %d but resourceSliceCount is %d"
                      % (published, generation, declared))
        result[name] = {
            "name": name,
            "node": nodes[0] if nodes else None,
            "generation": generation,
            "resource_slice_count": declared,
            "slices": sorted(current, key=slice_name),
            "published": published,
            "stale_slices": len(members) - published,
            "complete": not reason,
            "reason": reason,
        }
    return result


def slice_devices(obj: K8sObject) -> list[K8sObject]:
    """The devices of one slice (the v1beta1 shape, fields under ``basic``, flattened)."""
    devices = []
    for device in ((obj or {}).get("spec") or {}).get("devices") or []:
        if isinstance(device, dict) and "basic" in device and isinstance(device["basic"], dict):
            merged = dict(device["basic"])
            merged["name"] = device.get("name")
            device = merged
        devices.append(device)
    return devices


def pool_devices(pool: Pool) -> list[K8sObject]:
    """The devices of a pool's current slices."""
    return [d for obj in pool["slices"] for d in slice_devices(obj)]


def pools_by_node(pools: dict[str, Pool]) -> dict[str, Pool]:
    """Map node name -> its pool (the pool named after the node wins)."""
    out: dict[str, Pool] = {}
    for name in sorted(pools):
        pool = pools[name]
        node = pool["node"]
        if not node:
            continue
        if node not in out or name == node:
            out[node] = pool
    return out


def pool_progress(slices: list[K8sObject], targets: list[str], driver: str = DEFAULT_DRIVER,
                  check: Callable[[Pool], str] | None = None) -> PoolProgress:
    """Where each target node stands (node names sorted); ``check`` (a complete pool -> '' or why it
    does not count yet, e.g. pcie_roots.pool_check) makes a complete pool incomplete."""
    by_node = pools_by_node(group_pools(slices, driver))
    progress: PoolProgress = {"complete": [], "missing": [], "incomplete": {}}
    for node in sorted(set(targets)):
        pool = by_node.get(node)
        if pool is None:
            progress["missing"].append(node)
        elif pool["complete"] and check is not None and check(pool):
            progress["incomplete"][node] = check(pool)
        elif pool["complete"]:
            progress["complete"].append(node)
        else:
            progress["incomplete"][node] = pool["reason"]
    return progress
