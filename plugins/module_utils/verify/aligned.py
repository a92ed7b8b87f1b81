# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""verify's aligned mode (VEP 300's shape), pure: no cluster.

Owns the decisions of the claim a provisioner writes for a VM with a device: the ``cpu`` request (as
``manifests.claim_manifest`` renders it) plus a request ``device`` for one device of the DeviceClass the
user names, tied by a ``matchAttribute`` constraint on ``resource.kubernetes.io/pcieRoot`` or
``resource.kubernetes.io/numaNode``; whether the CPU driver's published devices can serve such a claim at
all (checked before anything is created); and the proof once the scheduler allocated it: each request
holds one device, both devices are found as published, and the CPU device's values of the attribute (a
list in dra-driver-cpu's grouped mode with ``--expose-pcie-roots``) contain every value of the device's
(its one PCIe root or NUMA node). That is at least what ``matchAttribute`` asks with the
``DRAListTypeAttributes`` gate (a non-empty set intersection, scalars as one-element sets); it is the same
for a device of one value. Why: docs/internals.md, "verify's aligned mode".
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy
from typing import Any, List, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import (
    SCHEDULER_LIST_ATTRIBUTES_MIN,
    scheduler_matches_lists,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.manifests import (
    REQUEST,
    STANDARD_NUMA,
    newest_devices,
)

DEVICE_REQUEST = "device"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
# the user's choice, by its short name or the full one
ATTRIBUTES = {"pcieRoot": PCIE_ROOT, "numaNode": STANDARD_NUMA, PCIE_ROOT: PCIE_ROOT, STANDARD_NUMA: STANDARD_NUMA}
# a typed attribute's fields (resource.k8s.io/v1 DeviceAttribute): scalars, then KEP-5491's lists
SCALARS = ("int", "bool", "string", "version")
LISTS = ("ints", "bools", "strings", "versions")
NOT_GROUPED = (
    "the aligned claim (dra_cpu_verify_aligned_device_class) is VEP 300's: one grouped dra.cpu/cpu capacity "
    "request beside the device's; the driver runs in %s mode")
NO_CPU_ATTRIBUTE = {
    PCIE_ROOT: (
        "no dra.cpu device on the driver's nodes carries %s, so no aligned claim can be allocated: the driver "
        "publishes it (a string list) only with --expose-pcie-roots (dra_cpu_expose_pcie_roots, chart "
        "args.exposePCIeRoots), and the API server keeps it only with the DRAListTypeAttributes feature gate "
        "(KEP-5491), which also makes matchAttribute match a list"),
    STANDARD_NUMA: (
        "no dra.cpu device on the driver's nodes carries %s, so no aligned claim can be allocated: "
        "dra-driver-cpu main publishes it in grouped mode by NUMA node (dra_cpu_group_by: numanode) and in "
        "individual mode; v0.2.0 publishes only dra.cpu/numaNodeID and dra.net/numaNode"),
}


class AlignedDevice(TypedDict):
    """One allocated device of the aligned claim and its values of the attribute (None: not published)."""

    request: str
    driver: str
    pool: str
    device: str
    values: Optional[List[Any]]


class AlignedProof(TypedDict):
    """The proof of an allocated aligned claim: no problem = proven."""

    attribute: str
    device_class: str
    cpu: Optional[AlignedDevice]
    device: Optional[AlignedDevice]
    common: List[Any]
    problems: List[str]


OLD_SCHEDULER = ("this cluster's kube-scheduler (Kubernetes older than 1.37) compares the CPU devices' list of "
                 "%s as one value, so an aligned claim is never allocated: use Kubernetes %s or newer")


def attribute_name(choice: str) -> str | None:
    """The full attribute name of the user's choice, None when it is neither one."""
    return ATTRIBUTES.get((choice or "").strip())


def attribute_values(device: K8sObject, name: str, driver: str) -> list[Any] | None:
    """The values of ``name`` on a published device (a scalar as one value, a list as its values), None
    when it does not carry it; a bare attribute name is in the device's driver's domain."""
    attributes = (device or {}).get("attributes") or {}
    value = attributes.get(name)
    if value is None and name.startswith(driver + "/"):
        value = attributes.get(name[len(driver) + 1:])
    if not isinstance(value, dict):
        return None
    for kind in SCALARS:
        if kind in value:
            return [value[kind]]
    for kind in LISTS:
        if isinstance(value.get(kind), list):
            return list(value[kind])
    return None


def cpu_devices_problem(slices: list[K8sObject], attribute: str, mode: str, driver: str,
                        server_version: K8sObject | str | None = None) -> str | None:
    """Why no aligned claim can be allocated, before anything is created (None: it can be tried)."""
    if mode != "grouped":
        return NOT_GROUPED % mode
    if attribute == PCIE_ROOT and server_version is not None and scheduler_matches_lists(server_version) is False:
        return OLD_SCHEDULER % (attribute, SCHEDULER_LIST_ATTRIBUTES_MIN)
    devices = [d for _pool, d in newest_devices(slices, driver)]
    if not any(attribute_values(d, attribute, driver) for d in devices):
        return NO_CPU_ATTRIBUTE[attribute] % attribute
    return None


def claim_manifest(cpu_claim: K8sObject, device_class: str, attribute: str) -> K8sObject:
    """The CPU claim with the device's request and the constraint that aligns the two (VEP 300)."""
    out = copy.deepcopy(cpu_claim)
    devices = out["spec"]["devices"]
    devices["requests"].append({"name": DEVICE_REQUEST, "exactly": {
        "deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1}})
    devices["constraints"] = list(devices.get("constraints") or []) + [
        {"requests": [REQUEST, DEVICE_REQUEST], "matchAttribute": attribute}]
    return out


def _results(claim: K8sObject, request: str) -> list[K8sObject]:
    allocation = ((claim or {}).get("status") or {}).get("allocation") or {}
    return [r for r in ((allocation.get("devices") or {}).get("results") or [])
            if isinstance(r, dict) and r.get("request") == request]


def _allocated(claim: K8sObject, request: str, slices: list[K8sObject], attribute: str,
               problems: list[str]) -> AlignedDevice | None:
    results = _results(claim, request)
    if len(results) != 1:
        problems.append("request %s holds %d devices, not 1" % (request, len(results)))
        return None
    result = results[0]
    driver, pool, name = str(result.get("driver")), str(result.get("pool")), str(result.get("device"))
    published = dict(((p, str(d.get("name"))), d) for p, d in newest_devices(slices, driver))
    device = published.get((pool, name))
    values = attribute_values(device, attribute, driver) if device is not None else None
    if device is None:
        problems.append("request %s's device %s/%s/%s is not among the published devices" % (request, driver, pool, name))
    elif values is None:
        problems.append("request %s's device %s/%s/%s carries no %s" % (request, driver, pool, name, attribute))
    return {"request": request, "driver": driver, "pool": pool, "device": name, "values": values}


def prove(claim: K8sObject, slices: list[K8sObject], device_class: str, attribute: str) -> AlignedProof:
    """The allocated aligned claim judged against the published devices (``slices``: every driver's)."""
    problems: list[str] = []
    cpu = _allocated(claim, REQUEST, slices, attribute, problems)
    other = _allocated(claim, DEVICE_REQUEST, slices, attribute, problems)
    common: list[Any] = []
    if cpu and other and cpu["values"] is not None and other["values"] is not None:
        common = sorted(set(cpu["values"]) & set(other["values"]), key=str)
        outside = sorted(set(other["values"]) - set(cpu["values"]), key=str)
        if outside:
            problems.append("the device's %s %s is not among the CPU device's %s: the two are not aligned"
                            % (attribute, _show(outside), _show(cpu["values"])))
    return {"attribute": attribute, "device_class": device_class, "cpu": cpu, "device": other,
            "common": common, "problems": problems}


def _show(values: list[Any] | None) -> str:
    return "[%s]" % ", ".join(str(v) for v in (values or []))


def check_mode_line(device_class: str, attribute: str) -> str:
    """What aligned mode would add to the claim, in check mode."""
    return ("check mode: the claim would also ask for one device of class %s (request %s), aligned with the CPU "
            "device by matchAttribute %s" % (device_class, DEVICE_REQUEST, attribute))


def report_line(proof: AlignedProof, allocation_only: bool) -> str:
    """The report's line for the aligned claim."""
    cpu, other = proof["cpu"], proof["device"]
    if proof["problems"] or cpu is None or other is None:
        return "aligned claim (%s, device class %s): NOT proven: %s" % (
            proof["attribute"], proof["device_class"], "; ".join(proof["problems"]))
    text = ("aligned claim on %s: the CPU device %s/%s %s holds device %s/%s/%s's %s (device class %s)" % (
        proof["attribute"], cpu["pool"], cpu["device"], _show(cpu["values"]), other["driver"], other["pool"],
        other["device"], _show(other["values"]), proof["device_class"]))
    if allocation_only:
        text += " (proven up to the allocation: dra_cpu_verify_aligned_allocation_only, the pod was not run)"
    return text
