# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Where a device's CPUs sit: the standard attributes ``resource.kubernetes.io/pcieRoot`` (a list of
PCIe roots, published with ``--expose-pcie-roots``; ``dra_cpu_expose_pcie_roots``) and
``resource.kubernetes.io/numaNode`` (an int, upstream main; v0.2.0 publishes none).

Owns: reading both from a device, a cell's union of them (fact.py puts them on the cells), the pool
check the topology wait applies when the setting is on or off (a pool counts when some device carries
the roots, or, off, when none does), and the locality of a claim's allocated devices (verify). Pure.
Upstream facts: docs/upstream.md ("What the driver publishes").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Callable, Iterable
from typing import Any, List, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.slice_pools import pool_devices
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import Pool

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA_NODE = "resource.kubernetes.io/numaNode"
GATE = "DRAListTypeAttributes"
# ``pool_check(expected)``: '' when the pool is as the setting asks, else why not
PoolCheck = Callable[[Pool], str]


class Locality(TypedDict):
    """Where devices sit: their PCIe roots (sorted, none when not published) and their standard NUMA
    node (None when not published or when they differ)."""

    pcie_roots: List[str]
    numa_node: Optional[int]


def _attribute(device: K8sObject, name: str) -> Any:
    value = ((device or {}).get("attributes") or {}).get(name)
    return value if isinstance(value, dict) else None


def device_roots(device: K8sObject) -> list[str]:
    """The PCIe roots a device publishes (the list ``strings``; a single ``string`` too), sorted."""
    value = _attribute(device, PCIE_ROOT) or {}
    roots = value.get("strings")
    if roots is None and isinstance(value.get("string"), str):
        roots = [value["string"]]
    return sorted(set(str(r) for r in roots or [] if r))


def device_numa(device: K8sObject) -> int | None:
    """The standard NUMA node a device publishes, or None."""
    value = (_attribute(device, NUMA_NODE) or {}).get("int")
    return None if value is None or isinstance(value, bool) else int(value)


def locality(devices: Iterable[K8sObject]) -> Locality:
    """The union of the devices' roots and their common standard NUMA node."""
    roots: set[str] = set()
    numa: set[int] = set()
    for device in devices:
        roots.update(device_roots(device))
        node = device_numa(device)
        if node is not None:
            numa.add(node)
    return {"pcie_roots": sorted(roots), "numa_node": numa.pop() if len(numa) == 1 else None}


def carries_roots(devices: Iterable[K8sObject]) -> bool:
    """Some device publishes PCIe roots."""
    return any(device_roots(d) for d in devices)


def pool_check(expected: bool | None) -> PoolCheck | None:
    """The topology wait's extra condition on a complete pool: ``True`` (PCIe roots asked for), some
    device carries ``resource.kubernetes.io/pcieRoot`` (a device whose CPUs no root is local to carries
    none, upstream's setPCIeRootsAttribute); ``False``, no device does (an upgrade that turns them off
    is published when the new driver publishes); None, no condition."""
    if expected is None:
        return None

    def check(pool: Pool) -> str:
        has = carries_roots(pool_devices(pool))
        if has == expected:
            return ""
        if expected:
            return ("no device carries %s yet (dra_cpu_expose_pcie_roots: true): the driver has not published "
                    "with --expose-pcie-roots, found no PCIe root local to its CPUs, or the API server dropped "
                    "the list value (%s off)" % (PCIE_ROOT, GATE))
        return "its devices still carry %s (dra_cpu_expose_pcie_roots: false)" % PCIE_ROOT
    return check


def locality_text(where: Locality) -> str:
    """``PCIe roots pci0000:00; NUMA node 0`` (what is published), '' when nothing is."""
    parts = []
    if where["pcie_roots"]:
        parts.append("PCIe root%s %s" % ("s" if len(where["pcie_roots"]) > 1 else "", ",".join(where["pcie_roots"])))
    if where["numa_node"] is not None:
        parts.append("NUMA node %d" % where["numa_node"])
    return "; ".join(parts)
