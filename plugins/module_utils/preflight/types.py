# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The shapes the preflight stage hands on: a finding, what is installed, the module's result.

Declared once here; the rules build them, the module returns them, the release and uninstall stages
read ``installed``. Types only, no logic.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import List, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import Target


class Finding(TypedDict):
    """One check's outcome: ``severity`` is ``error``, ``warning`` or ``ok``; ``node`` None for a
    cluster-wide check."""

    check: str
    severity: str
    node: Optional[str]
    observed: Optional[str]
    required: Optional[str]
    message: str
    fix: str


class Summary(TypedDict):
    """The outcome of all findings; ``message`` lists each error ('' when none)."""

    errors: int
    warnings: int
    passed: bool
    message: str


class GateState(TypedDict):
    """One ``kubernetes_feature_enabled`` sample: ``stage`` is ``ALPHA``, ``BETA`` or '' (GA)."""

    enabled: bool
    stage: str


class ExcludedNode(TypedDict):
    """A node the DaemonSet will not run on."""

    node: str
    reason: str


class SkippedNode(TypedDict):
    """A node the driver is kept off (``skip_incompatible_nodes``) and the checks it failed."""

    node: str
    reasons: List[str]


class Toleration(TypedDict, total=False):
    """A pod toleration (``core/v1``)."""

    key: str
    operator: str
    value: str
    effect: str
    tolerationSeconds: int


class NamespaceState(TypedDict):
    """The release namespace as it is; ``labels_ok``: it carries every label the role wants."""

    name: str
    exists: bool
    terminating: bool
    labels: dict[str, str]
    labels_ok: bool


class ReleaseState(TypedDict, total=False):
    """The newest revision of a helm release (chart, version and digest '' when unreadable); ``{}``
    when the release has none."""

    name: str
    revision: int
    status: str
    chart: str
    chart_version: str
    values_sha256: str


class Installed(TypedDict, total=False):
    """What is installed: ``readable`` False with ``error``, else the namespace, the release (``{}``
    when there is none) and the names of the other helm releases in the namespace."""

    readable: bool
    error: str
    namespace: NamespaceState
    release: ReleaseState
    other_releases: List[str]


class Cluster(Target):
    """The cluster preflight checked (k8s/auth.py ``describe_target``) and its one-line ``text``."""

    text: str


class PreflightResult(TypedDict, total=False):
    """The preflight module's result (its RETURN)."""

    server_version: Optional[str]
    findings: List[Finding]
    error_count: int
    warning_count: int
    passed: bool
    checked_nodes: List[str]
    excluded_nodes: List[ExcludedNode]
    skipped_nodes: List[SkippedNode]
    node_affinity: NodeAffinity
    report: List[str]
    summary: List[str]
    installed: Installed
    cluster: Cluster
    not_ready_nodes: Optional[List[str]]
    changed: bool
    failed: bool
    msg: str


class _SelectorRequirement(TypedDict):
    key: str
    operator: str
    values: List[str]


class _SelectorTerm(TypedDict):
    matchExpressions: List[_SelectorRequirement]


class _NodeSelector(TypedDict):
    nodeSelectorTerms: List[_SelectorTerm]


class _NodeAffinityRule(TypedDict):
    requiredDuringSchedulingIgnoredDuringExecution: _NodeSelector


class NodeAffinity(TypedDict, total=False):
    """The chart's ``affinity`` value that keeps the driver off nodes (``{}`` when none)."""

    nodeAffinity: _NodeAffinityRule
