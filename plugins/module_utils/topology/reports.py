# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""What cpu_topology leaves in ``report_dir`` for a CI lane's artifacts.

Owns the content of ``dra-cpu-topology.json`` (the fact and each node's whole topology) and of
``dra-cpu-failure.json`` (``FailureReport``: the message, the pending nodes with their driver pod's
state and last log lines, what did complete, every ResourceSlice of the driver and the state of every
driver pod). Writing the files is report_files.py's, reading the pods' logs pod_diagnostics.py's.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Callable, Mapping
from typing import Any, Dict, List, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.driver_pods import (
    list_driver_pods,
    pod_node,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import (
    RESOURCE_SLICES_PATH,
    KubeRequestError,
    RawApi,
    driver_field_selector,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject, ModuleParams
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import ClusterTopology, NodeTopology, TopologyFact
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.pod_diagnostics import PendingEntry, PodState, pod_state
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.report_files import (
    FAILURE,
    TOPOLOGY,
    write_report,
)


class DriverPod(PodState):
    """A driver pod in brief (pod_diagnostics.pod_state) and its node."""

    node: Optional[str]


class _FailureReport(TypedDict):
    message: str
    pending_nodes: List[PendingEntry]
    topology: Optional[TopologyFact]
    node_details: Dict[str, NodeTopology]
    resource_slices: Optional[List[K8sObject]]
    driver_pods: List[DriverPod]


class FailureReport(_FailureReport, total=False):
    """``dra-cpu-failure.json``: the message, what the wait saw, a fresh read of the slices and pods
    (``read_errors`` when a read failed)."""

    read_errors: List[str]


def _read(what: str, read: Callable[[], list[K8sObject]]) -> tuple[list[K8sObject] | None, str | None]:
    """``(value, None)`` or ``(None, error)``: a failure report is written even when a read fails."""
    try:
        return read(), None
    except KubeRequestError as exc:
        return None, "cannot read %s: %s" % (what, exc.message)


def failure_report(api: RawApi, driver: str, namespace: str, selectors: list[str], message: str,
                   result: Mapping[str, Any], detail: ClusterTopology | None = None) -> FailureReport:
    """The failure report: the message and what the wait saw, plus a fresh read of the driver's
    slices and pods (one list each)."""
    slices, slices_error = _read("the ResourceSlices", lambda: api.get_json(
        RESOURCE_SLICES_PATH, {"fieldSelector": driver_field_selector(driver)}).get("items") or [])
    pods, pods_error = _read("the driver pods", lambda: list_driver_pods(api, namespace, selectors))
    report: FailureReport = {
        "message": message,
        "pending_nodes": result.get("pending_nodes") or [],
        # the nodes that completed (a timeout), or all of them (a sizing mismatch)
        "topology": result.get("topology") or (result.get("ansible_facts") or {}).get("dra_cpu_topology"),
        "node_details": (detail.get("nodes") or {}) if detail else {},
        "resource_slices": slices,
        "driver_pods": [DriverPod(**pod_state(p), node=pod_node(p)) for p in pods or []],
    }
    errors = [e for e in (slices_error, pods_error) if e]
    if errors:
        report["read_errors"] = errors
    return report


def write_topology_reports(report_dir: str | None, api: RawApi, params: ModuleParams, selectors: list[str],
                           result: Mapping[str, Any], failure: str | None,
                           detail: ClusterTopology | None = None) -> str | None:
    """``dra-cpu-topology.json`` after a successful wait, ``dra-cpu-failure.json`` after a failed one;
    ``detail`` is the detailed topology (fact.cluster_topology). Returns the path written (None
    without ``report_dir``)."""
    if not report_dir:
        return None
    if failure:
        return write_report(report_dir, FAILURE, failure_report(
            api, params["driver"], params["namespace"], selectors, failure, result, detail))
    return write_report(report_dir, TOPOLOGY, dict(result["ansible_facts"]["dra_cpu_topology"],
                                                   node_details=(detail.get("nodes") or {}) if detail else {}))
