# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""What the test container saw, and whether it is what virt-launcher needs (pure; no cluster).

Owns parsing the container's log (``manifests.container_script`` prints one section per marker) and
the judgement against the allocated claim:
- the KEP-5304 device metadata file (``metadata.resource.k8s.io/v1beta1`` ``DeviceMetadata``; the
  file may hold one document per API version, the first is read): present, its request's devices are
  exactly the claim's allocation, each carries a NUMA node (``resource.kubernetes.io/numaNode`` or
  ``dra.cpu/numaNodeID``), one node for all, and its CPUs (``dra.cpu/allocatedNumCPUs`` in grouped mode,
  one per device in individual mode) are the claim's. Missing metadata fails (virt-launcher fails such a
  VM) unless ``allow_missing_metadata``;
- ``DRA_CPUSET_<claim uid>``, the CPUs the driver hands the container through CDI: present, the claim's
  size, and the CPUs the driver logged when it pinned the container (``pinned.py``), when it logged any;
- the CPUs the kernel confines the container to (``Cpus_allowed_list``): equal to ``DRA_CPUSET_*`` when
  those CPUs are CPUs of this kernel. When they are not (the driver reads another topology than the
  kernel's: a sysfs overlay, or the simulated hardware of a test node) the two cannot be compared, and
  the finding says so instead of failing.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import (
    CpusetError,
    format_cpuset,
    parse_cpuset,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.fact import attribute_value
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.manifests import (
    LEGACY_NUMA,
    MARK,
    REQUEST,
    SECTIONS,
    STANDARD_NUMA,
)

ALLOCATED_CPUS = "dra.cpu/allocatedNumCPUs"
ENV_PREFIX = "DRA_CPUSET_"
MISSING_METADATA = (
    "the driver wrote no KEP-5304 device metadata for the claim (%s is missing in the container): "
    "KubeVirt's virt-launcher fails a VM whose CPU claim has none. dra-driver-cpu releases after v0.2.0 "
    "write it; set dra_cpu_verify_allow_missing_metadata=true to accept a driver without it")


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


def _attr(attributes: dict[str, Any], name: str) -> Any:
    return attribute_value((attributes or {}).get(name))


def _field(obj: dict[str, Any], name: str) -> Any:
    for key, value in (obj or {}).items():
        if key.lower() == name:
            return value
    return None


def parse_metadata(text: str) -> dict[str, Any]:
    """The first JSON document of the metadata file as ``{api_version, kind, devices: [{driver, pool,
    name, numa_node, numa_attribute, allocated_cpus}]}`` for request ``req-cpu``; ``error`` when unreadable."""
    text = (text or "").strip()
    try:
        doc, _end = json.JSONDecoder().raw_decode(text)
    except ValueError as exc:
        return {"error": "the metadata file is not JSON (%s): %s" % (exc, text[:200])}
    if not isinstance(doc, dict):
        return {"error": "the metadata file holds no object: %s" % text[:200]}
    requests = [r for r in (doc.get("requests") or []) if isinstance(r, dict)]
    request = next((r for r in requests if r.get("name") == REQUEST), None)
    out: dict[str, Any] = {"api_version": doc.get("apiVersion"), "kind": doc.get("kind"), "devices": []}
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


def allocated_devices(claim: dict[str, Any]) -> list[dict[str, Any]]:
    """The claim's allocation results of request ``req-cpu``."""
    allocation = ((claim or {}).get("status") or {}).get("allocation") or {}
    return [r for r in ((allocation.get("devices") or {}).get("results") or [])
            if isinstance(r, dict) and r.get("request") == REQUEST]


def dra_cpuset(env_text: str, uid: str) -> tuple[str | None, list[str]]:
    """``(the cpuset of DRA_CPUSET_<uid>, every DRA_CPUSET_* line)``."""
    lines = [line.strip() for line in (env_text or "").splitlines() if line.strip().startswith(ENV_PREFIX)]
    for line in lines:
        key, _sep, value = line.partition("=")
        if key == ENV_PREFIX + uid:
            return value, lines
    return None, lines


def _metadata_findings(meta: dict[str, Any], results: list[dict[str, Any]], cpus: int, mode: str,
                       problems: list[str]) -> dict[str, Any]:
    if meta.get("error"):
        problems.append("device metadata: %s" % meta["error"])
        return meta
    wanted = sorted((r.get("driver"), r.get("pool"), r.get("device")) for r in results)
    got = sorted((d["driver"], d["pool"], d["name"]) for d in meta["devices"])
    if got != wanted:
        problems.append("device metadata: its devices %s are not the claim's allocation %s"
                        % (["/".join(str(x) for x in d) for d in got], ["/".join(str(x) for x in d) for d in wanted]))
    nodes = sorted(set(str(d["numa_node"]) for d in meta["devices"] if d["numa_node"] is not None))
    if any(d["numa_node"] is None for d in meta["devices"]):
        problems.append("device metadata: a device has no NUMA node (%s or %s)" % (STANDARD_NUMA, LEGACY_NUMA))
    elif len(nodes) > 1:
        problems.append("device metadata: the devices span NUMA nodes %s, not one" % ", ".join(nodes))
    meta["numa_nodes"] = nodes
    given: int | None
    if mode == "individual":
        given = len(meta["devices"])
    else:
        counts = [d["allocated_cpus"] for d in meta["devices"]]
        given = sum(int(c) for c in counts) if counts and None not in counts else None
        if given is None:
            problems.append("device metadata: no %s for the device" % ALLOCATED_CPUS)
    meta["allocated_cpus"] = given
    if given is not None and given != cpus:
        problems.append("device metadata: %s CPUs allocated, the claim asks for %d" % (given, cpus))
    return meta


def judge(log: str, claim: dict[str, Any], cpus: int, mode: str, pinned: str | None,
          allow_missing_metadata: bool = False, metadata_file: str = "") -> dict[str, Any]:
    """The readout and its findings: ``{complete, metadata, dra_cpuset, dra_cpuset_lines, container_cpus,
    cgroup_cpus, online_cpus, cpuset_compared, pinned, problems, notes}``; no problem = proven."""
    parts = sections(log)
    problems: list[str] = []
    notes: list[str] = []
    uid = ((claim or {}).get("metadata") or {}).get("uid") or ""
    out: dict[str, Any] = {"complete": bool(parts.get("complete")), "pinned": pinned}
    if not out["complete"]:
        problems.append("the test container did not print its readout (log: %s)" % ((log or "").strip()[-300:] or "empty"))
    if parts.get("metadata_missing") or not (parts.get("metadata") or "").strip():
        out["metadata"] = None
        if allow_missing_metadata:
            notes.append("no device metadata (accepted: dra_cpu_verify_allow_missing_metadata)")
        elif out["complete"]:
            problems.append(MISSING_METADATA % metadata_file)
    else:
        out["metadata"] = _metadata_findings(parse_metadata(parts["metadata"]), allocated_devices(claim), cpus, mode,
                                             problems)
    value, lines = dra_cpuset(parts.get("env", ""), uid)
    out["dra_cpuset"], out["dra_cpuset_lines"] = value, lines
    env_cpus = _cpus(value)
    if out["complete"] and env_cpus is None:
        problems.append("the container has no DRA_CPUSET_%s from the driver (it has: %s)"
                        % (uid, ", ".join(lines) or "none"))
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
        else:
            notes.append("its cpuset not compared: the driver's CPUs %s are not CPUs of this kernel (online %s): "
                         "the driver reads another topology than the kernel's (a sysfs overlay, or a test node's "
                         "simulated hardware)" % (format_cpuset(env_cpus), format_cpuset(online)))
    elif out["complete"] and container is None:
        problems.append("the container's Cpus_allowed_list could not be read (%s)" % (status or "nothing printed"))
    out["problems"], out["notes"] = problems, notes
    return out
