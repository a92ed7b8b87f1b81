# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""What the test container saw, judged as KubeVirt's virt-launcher reads it (pure; no cluster).

Owns parsing the container's log (``manifests.container_script``'s sections), the judgement
(``DRA_CPUSET_<claim uid>``, the container's CPUs and where they lie, the KEP-5304 metadata) and the
readout's shape (``Readout``). Why: docs/internals.md, "Why the preflight, the topology and verify
read what they read".
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
import re
from typing import Any, List, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import (
    CpusetError,
    format_cpuset,
    parse_cpuset,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject, ModuleParams
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.fact import attribute_value, group_of, numa_of
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.pcie_roots import Locality, locality
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.manifests import (
    CONTAINER,
    LEGACY_NUMA,
    MARK,
    REQUEST,
    SECTIONS,
    STANDARD_NUMA,
)

ALLOCATED_CPUS = "dra.cpu/allocatedNumCPUs"
ENV_PREFIX = "DRA_CPUSET_"
NO_DRA_CPUSET = (
    "the driver injected no DRA_CPUSET_%s into container %s (it has: %s): KubeVirt requires the driver to inject "
    "the allocated cpuset as DRA_CPUSET_<claim uid> (VEP 152); without it virt-launcher runs the VM on the "
    "container's cgroup cpuset and pins no vCPU (no vcpupin). Set dra_cpu_verify_allow_missing_dra_cpuset=true "
    "to accept such a driver")
REQUIRED_METADATA = (
    "the driver wrote no KEP-5304 device metadata for the claim (%s is missing in the container), and "
    "dra_cpu_verify_require_metadata asks for it (consumers that read it: KubeVirt's GPU/host-device paths; "
    "KubeVirt's CPU path does not). dra-driver-cpu releases after v0.2.0 write it")


class MetadataDevice(TypedDict):
    """A device of the KEP-5304 metadata, as written."""

    driver: Any
    pool: Any
    name: Any
    numa_node: Any
    numa_attribute: Optional[str]
    allocated_cpus: Any


class Metadata(TypedDict, total=False):
    """The metadata file (``error`` when unreadable), once judged with its NUMA nodes and CPUs."""

    api_version: Any
    kind: Any
    devices: List[MetadataDevice]
    error: str
    numa_nodes: List[str]
    allocated_cpus: Optional[int]


class Placement(TypedDict):
    """Where the allocated devices lie: ``group`` ``numanode`` or ``socket`` and its id."""

    group: str
    id: int


class PlacementReadout(Placement):
    """The placement and its CPUs as the kernel reports them."""

    kernel_cpus: Optional[str]


class Readout(TypedDict, total=False):
    """What the container saw and its judgement (``judge``): no problem = proven."""

    complete: bool
    pinned: Optional[str]
    placement: Optional[PlacementReadout]
    metadata: Optional[Metadata]
    dra_cpuset: Optional[str]
    dra_cpuset_lines: List[str]
    container_cpus: Optional[str]
    cgroup_cpus: Optional[str]
    online_cpus: Optional[str]
    cpuset_compared: bool
    problems: List[str]
    notes: List[str]


_NODE_LINE = re.compile(r"/node(\d+)/cpulist\s+(\S*)")
_PACKAGE_LINE = re.compile(r"/cpu(\d+)/topology/physical_package_id\s+(\d+)")


def sections(log: str) -> dict[str, str]:
    """``{section: text}`` of the container's output; ``complete`` is set when the end marker was printed."""
    out: dict[str, str] = {}
    current = None
    for line in (log or "").splitlines():
        if line.startswith(MARK):
            word = line[len(MARK):].strip()
            if word in SECTIONS:
                current = word
                out[current] = ""
                continue
            if word == "end":
                out["complete"] = "true"
                current = None
                continue
            if word == "missing" and current == "metadata":
                out["metadata_missing"] = "true"
                continue
        if current:
            out[current] += line + "\n"
    return out


def _cpus(text: str | None) -> list[int] | None:
    try:
        return parse_cpuset((text or "").strip()) if (text or "").strip() else None
    except CpusetError:
        return None


def _attr(attributes: K8sObject, name: str) -> Any:
    return attribute_value((attributes or {}).get(name))


def _field(obj: K8sObject, name: str) -> Any:
    for key, value in (obj or {}).items():
        if key.lower() == name:
            return value
    return None


def parse_metadata(text: str) -> Metadata:
    """The first JSON document of the metadata file as ``{api_version, kind, devices: [{driver, pool,
    name, numa_node, numa_attribute, allocated_cpus}]}`` for request ``cpu``; ``error`` when unreadable."""
    text = (text or "").strip()
    try:
        doc, _end = json.JSONDecoder().raw_decode(text)
    except ValueError as exc:
        return {"error": "the metadata file is not JSON (%s): %s" % (exc, text[:200])}
    if not isinstance(doc, dict):
        return {"error": "the metadata file holds no object: %s" % text[:200]}
    requests = [r for r in (doc.get("requests") or []) if isinstance(r, dict)]
    request = next((r for r in requests if r.get("name") == REQUEST), None)
    out: Metadata = {"api_version": doc.get("apiVersion"), "kind": doc.get("kind"), "devices": []}
    if request is None:
        out["error"] = "the metadata names no request %s (requests: %s)" % (
            REQUEST, ", ".join(str(r.get("name")) for r in requests) or "none")
        return out
    for device in (request.get("devices") or []):
        attributes = _field(device, "attributes") or {}
        numa, numa_attribute = None, None
        for name in (STANDARD_NUMA, LEGACY_NUMA):
            if _attr(attributes, name) is not None:
                numa, numa_attribute = _attr(attributes, name), name
                break
        out["devices"].append({"driver": _field(device, "driver"), "pool": _field(device, "pool"),
                               "name": _field(device, "name"), "numa_node": numa,
                               "numa_attribute": numa_attribute,
                               "allocated_cpus": _attr(attributes, ALLOCATED_CPUS)})
    return out


def allocated_devices(claim: K8sObject, request: str = REQUEST) -> list[K8sObject]:
    """The claim's allocation results of ``request`` (``cpu``)."""
    allocation = ((claim or {}).get("status") or {}).get("allocation") or {}
    return [r for r in ((allocation.get("devices") or {}).get("results") or [])
            if isinstance(r, dict) and r.get("request") == request]


def dra_cpuset(env_text: str, uid: str) -> tuple[str | None, list[str]]:
    """``(the cpuset of DRA_CPUSET_<uid>, every DRA_CPUSET_* line)``."""
    lines = [line.strip() for line in (env_text or "").splitlines() if line.strip().startswith(ENV_PREFIX)]
    for line in lines:
        key, _sep, value = line.partition("=")
        if key == ENV_PREFIX + uid:
            return value, lines
    return None, lines


def _metadata_findings(meta: Metadata, results: list[K8sObject], cpus: int, mode: str,
                       found: list[str]) -> Metadata:
    if meta.get("error"):
        found.append("device metadata: %s" % meta["error"])
        return meta
    wanted = sorted((r.get("driver"), r.get("pool"), r.get("device")) for r in results)
    got = sorted((d["driver"], d["pool"], d["name"]) for d in meta["devices"])
    if got != wanted:
        found.append("device metadata: its devices %s are not the claim's allocation %s"
                     % (["/".join(str(x) for x in d) for d in got], ["/".join(str(x) for x in d) for d in wanted]))
    nodes = sorted(set(str(d["numa_node"]) for d in meta["devices"] if d["numa_node"] is not None))
    if any(d["numa_node"] is None for d in meta["devices"]):
        found.append("device metadata: a device has no NUMA node (%s or %s)" % (STANDARD_NUMA, LEGACY_NUMA))
    elif len(nodes) > 1:
        found.append("device metadata: the devices span NUMA nodes %s, not one" % ", ".join(nodes))
    meta["numa_nodes"] = nodes
    given: int | None
    if mode == "individual":
        given = len(meta["devices"])
    else:
        counts = [d["allocated_cpus"] for d in meta["devices"]]
        given = sum(int(c) for c in counts) if counts and None not in counts else None
        if given is None:
            found.append("device metadata: no %s for the device" % ALLOCATED_CPUS)
    meta["allocated_cpus"] = given
    if given is not None and given != cpus:
        found.append("device metadata: %s CPUs allocated, the claim asks for %d" % (given, cpus))
    return meta


def placement_of(results: list[K8sObject], devices: list[tuple[str, K8sObject]], mode: str,
                 driver: str = "dra.cpu") -> Placement | None:
    """``{group, id}`` of the allocated devices as published (``manifests.newest_devices``): a grouped
    device's NUMA node or socket (``topology.fact.group_of``); individual devices' common NUMA node; None
    when it cannot be told (a machine device, devices not found, or on several nodes)."""
    published = dict(((str(pool), str(d.get("name"))), d) for pool, d in devices)
    found = [published.get((str(r.get("pool")), str(r.get("device")))) for r in results]
    if not found or any(d is None for d in found):
        return None
    if mode == "individual":
        cells = set(numa_of(d, driver) for d in found if d is not None)
        return {"group": "numanode", "id": cells.pop()} if len(cells) == 1 else None
    groups = set(group_of(d, driver) for d in found if d is not None)
    if len(groups) != 1:
        return None
    group, cell = groups.pop()
    return {"group": group, "id": cell} if group in ("numanode", "socket") else None


def locality_of(results: list[K8sObject], devices: list[tuple[str, K8sObject]]) -> Locality | None:
    """Where the allocated devices sit as published (``manifests.newest_devices``): their PCIe roots
    and standard NUMA node (topology/pcie_roots.py); None when a device is not found."""
    published = dict(((str(pool), str(d.get("name"))), d) for pool, d in devices)
    found = [published.get((str(r.get("pool")), str(r.get("device")))) for r in results]
    if not found or any(d is None for d in found):
        return None
    return locality([d for d in found if d is not None])


def _kernel_groups(parts: dict[str, str]) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """``({numa node: CPUs}, {socket: CPUs})`` as the container reads sysfs."""
    nodes: dict[int, list[int]] = {}
    for node, text in _NODE_LINE.findall(parts.get("nodes") or ""):
        nodes[int(node)] = _cpus(text) or []
    sockets: dict[int, list[int]] = {}
    for cpu, package in _PACKAGE_LINE.findall(parts.get("packages") or ""):
        sockets.setdefault(int(package), []).append(int(cpu))
    return nodes, dict((k, sorted(v)) for k, v in sockets.items())


def _placement_finding(env_cpus: list[int], placement: Placement | None, parts: dict[str, str],
                       out: Readout, problems: list[str], notes: list[str]) -> None:
    """The claim's CPUs inside the allocated device's NUMA node (or socket), as the kernel groups them."""
    if not placement or placement.get("group") not in ("numanode", "socket"):
        return
    nodes, sockets = _kernel_groups(parts)
    group, cell = placement["group"], int(placement["id"])
    kernel = (nodes if group == "numanode" else sockets).get(cell)
    what = "NUMA node %d" % cell if group == "numanode" else "socket %d" % cell
    out["placement"] = {"group": group, "id": cell, "kernel_cpus": format_cpuset(kernel) if kernel else None}
    if kernel is None:
        notes.append("its CPUs' %s not checked: the container sees no %s in /sys/devices/system" % (what, what))
    elif not set(env_cpus) <= set(kernel):
        problems.append("the claim's CPUs %s are not all in %s of the allocated device (CPUs %s as the kernel "
                        "reports them)" % (format_cpuset(env_cpus), what, format_cpuset(kernel)))


def judge(log: str, claim: K8sObject, cpus: int, mode: str, pinned: str | None, options: ModuleParams,
          metadata_file: str = "", placement: Placement | None = None) -> Readout:
    """The readout and its findings; no problem = proven. ``options``: verify's ``require_metadata``,
    ``allow_missing_dra_cpuset``; ``placement``: of the allocated device, when known."""
    parts = sections(log)
    problems: list[str] = []
    notes: list[str] = []
    uid = ((claim or {}).get("metadata") or {}).get("uid") or ""
    out: Readout = {"complete": bool(parts.get("complete")), "pinned": pinned, "placement": None}
    if not out["complete"]:
        problems.append("the test container did not print its readout (log: %s)" % ((log or "").strip()[-300:] or "empty"))
    require = bool(options.get("require_metadata"))
    if parts.get("metadata_missing") or not (parts.get("metadata") or "").strip():
        out["metadata"] = None
        if require and out["complete"]:
            problems.append(REQUIRED_METADATA % metadata_file)
    else:
        found: list[str] = []
        out["metadata"] = _metadata_findings(parse_metadata(parts["metadata"]), allocated_devices(claim), cpus, mode,
                                             found)
        (problems if require else notes).extend(found)
    value, lines = dra_cpuset(parts.get("env", ""), uid)
    out["dra_cpuset"], out["dra_cpuset_lines"] = value, lines
    env_cpus = _cpus(value)
    if out["complete"] and env_cpus is None:
        text = NO_DRA_CPUSET % (uid, CONTAINER, ", ".join(lines) or "none")
        if value is not None:
            problems.append("DRA_CPUSET_%s=%s is not a CPU list" % (uid, value))
        elif options.get("allow_missing_dra_cpuset"):
            notes.append("no DRA_CPUSET_%s (accepted: dra_cpu_verify_allow_missing_dra_cpuset): virt-launcher "
                         "would pin nothing and use the container's cgroup cpuset" % uid)
        else:
            problems.append(text)
    elif env_cpus is not None and len(env_cpus) != cpus:
        problems.append("DRA_CPUSET_%s=%s holds %d CPUs, the claim asks for %d" % (uid, value, len(env_cpus), cpus))
    status = (parts.get("status") or "").partition(":")[2].strip()
    container = _cpus(status)
    online = _cpus(parts.get("online"))
    out["container_cpus"] = format_cpuset(container) if container is not None else None
    out["cgroup_cpus"] = (parts.get("cgroup") or "").strip() or None
    out["online_cpus"] = format_cpuset(online) if online is not None else None
    out["cpuset_compared"] = False
    if env_cpus is not None and pinned and _cpus(pinned) != env_cpus:
        problems.append("the driver pinned the container to CPUs %s, but passed DRA_CPUSET_%s=%s" % (pinned, uid, value))
    if env_cpus is not None and container is not None:
        if online is None or set(env_cpus) <= set(online):
            out["cpuset_compared"] = True
            if container != env_cpus:
                problems.append("the container runs on CPUs %s, not on the claim's %s (DRA_CPUSET_%s)"
                                % (format_cpuset(container), format_cpuset(env_cpus), uid))
            cgroup = _cpus(out["cgroup_cpus"])
            if cgroup is not None and cgroup != env_cpus:
                problems.append("the container's cgroup cpuset is %s, not the claim's %s (DRA_CPUSET_%s)"
                                % (format_cpuset(cgroup), format_cpuset(env_cpus), uid))
            _placement_finding(env_cpus, placement, parts, out, problems, notes)
        else:
            notes.append("its cpuset not compared: the driver's CPUs %s are not CPUs of this kernel (online %s): "
                         "the driver reads another topology than the kernel's (a sysfs overlay, or a test node's "
                         "simulated hardware)" % (format_cpuset(env_cpus), format_cpuset(online)))
    elif out["complete"] and container is None:
        problems.append("the container's Cpus_allowed_list could not be read (%s)" % (status or "nothing printed"))
    out["problems"], out["notes"] = problems, notes
    return out
