# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The release stage's plan (pure), from preflight's reading of what is installed and the chart
stage's version and values: wait for a terminating namespace, the labels to set, a ``pending-*``
release failed or recovered, and helm ``skip``, ``install`` or ``upgrade``. Why each step:
docs/internals.md ("Why the settings and the chart values are as they are").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Mapping
from typing import Any, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart.types import ChartValues
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.installed import values_digest

SKIP, INSTALL, UPGRADE = "skip", "install", "upgrade"
UNINSTALL, ROLLBACK = "uninstall", "rollback"


class Wanted(TypedDict, total=False):
    """What the release should be: see ``plan``."""

    name: str
    namespace: str
    chart_version: str
    chart: str
    values: ChartValues
    values_sha256: str
    psa_labels: dict[str, str]
    owner_label: dict[str, str]


class NamespaceStep(TypedDict):
    """Wait for the namespace's deletion first; the labels to set ({}: none); whether it is created."""

    wait: bool
    labels: dict[str, str]
    creates: bool


class ReleaseSeen(TypedDict):
    """The release as the plan saw it (``revision`` None: no release)."""

    status: str
    revision: Optional[int]
    chart_version: str


class ReleasePlan(TypedDict):
    """The plan: see ``plan``."""

    namespace: NamespaceStep
    release: ReleaseSeen
    pending: str
    recover: str
    fail: str
    helm: str
    reason: str


def merge_values(base: Mapping[str, Any] | None, override: Mapping[str, Any] | None) -> dict[str, Any]:
    """``base`` with ``override`` laid over it, dicts merged recursively (Ansible's
    ``combine(recursive=true)``: lists and scalars are replaced). Neither argument is changed."""
    merged = dict(base or {})
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_values(merged[key], value)
        else:
            merged[key] = value
    return merged


def release_values(chart_values: ChartValues | None, node_affinity: Mapping[str, Any] | None = None) -> ChartValues:
    """The values for helm: the chart stage's values, plus preflight's node affinity (when nodes
    are kept off) as the chart's ``affinity``."""
    if node_affinity:
        return merge_values(chart_values, {"affinity": node_affinity})
    return dict(chart_values or {})


def recover_command(status: str, release_name: str, namespace: str) -> str:
    """The helm command that clears a pending release, for the failure message."""
    if status == "pending-install":
        return "helm uninstall %s -n %s" % (release_name, namespace)
    return "helm rollback %s -n %s --wait" % (release_name, namespace)


def pending_message(status: str, release_name: str, namespace: str) -> str:
    """The failure on a pending release when recovering it was not asked for."""
    return ("Helm release %s in namespace %s is stuck in '%s' (an earlier helm run was interrupted), "
            "so helm refuses to touch it. Either re-run with -e dra_cpu_helm_recover=true, or run '%s' "
            "yourself and re-run." % (release_name, namespace, status,
                                      recover_command(status, release_name, namespace)))


def namespace_labels(namespace: Mapping[str, Any] | None, psa_labels: dict[str, str] | None,
                     owner_label: dict[str, str] | None) -> tuple[dict[str, str], bool]:
    """``(labels, creates)``: the labels to set on the namespace ({} when it carries them) and
    whether this run creates it (it does not exist, or is being deleted)."""
    namespace = namespace or {}
    creates = not namespace.get("exists") or bool(namespace.get("terminating"))
    if creates:
        return merge_values(psa_labels, owner_label), True
    have = namespace.get("labels")
    if have is not None:
        ok = all(have.get(k) == v for k, v in (psa_labels or {}).items())
    else:
        ok = bool(namespace.get("labels_ok"))
    return ({} if ok else dict(psa_labels or {})), False


def plan(namespace: Mapping[str, Any], release: Mapping[str, Any], wanted: Wanted,
         recover: bool = False) -> ReleasePlan:
    """The plan for ``namespace`` (``namespace_state``) and ``release`` (``release_state``, {} for
    none) given ``wanted``: ``name``, ``namespace``, ``chart_version`` (the version the chart stage
    read; '' when unknown, which never skips helm), ``values`` (or ``values_sha256``),
    ``psa_labels``, ``owner_label``, and optionally ``chart`` (the chart's name; checked when both
    sides know it).

    Returns ``{namespace: {wait, labels, creates}, release: {status, revision, chart_version},
    pending, recover, fail, helm, reason}``; ``fail`` is the message to fail with ('' for none).
    """
    namespace = namespace or {}
    release = dict(release or {})
    name, ns = wanted.get("name", ""), wanted.get("namespace", "")
    wait = bool(namespace.get("terminating"))
    labels, creates = namespace_labels(namespace, wanted.get("psa_labels"), wanted.get("owner_label"))
    if wait or not namespace.get("exists"):
        release = {}  # a namespace being deleted takes its release Secrets with it
    status = str(release.get("status") or "")
    want_digest = wanted.get("values_sha256") or values_digest(wanted.get("values"))
    result: ReleasePlan = {
        "namespace": {"wait": wait, "labels": labels, "creates": creates},
        "release": {"status": status, "revision": release.get("revision"),
                    "chart_version": release.get("chart_version", "")},
        "pending": "", "recover": "", "fail": "", "helm": "", "reason": "",
    }
    if status.startswith("pending-"):
        result["pending"] = status
        if not recover:
            result["fail"] = pending_message(status, name, ns)
            result["reason"] = "release stuck in '%s'" % status
            return result
        result["recover"] = UNINSTALL if status == "pending-install" else ROLLBACK
        result["helm"] = INSTALL if result["recover"] == UNINSTALL else UPGRADE
        result["reason"] = "release stuck in '%s': %s first" % (status, result["recover"])
        return result
    if not release or status in ("", "uninstalled"):
        result["helm"] = INSTALL if not release else UPGRADE
        result["reason"] = "no release yet" if not release else "release uninstalled (history kept)"
        return result
    differs = []
    if status != "deployed":
        differs.append("status %s" % status)
    want_version = str(wanted.get("chart_version") or "")
    if not want_version:
        differs.append("chart version not known")
    elif want_version != str(release.get("chart_version") or ""):
        differs.append("chart %s -> %s" % (release.get("chart_version") or "?", want_version))
    if wanted.get("chart") and release.get("chart") and wanted["chart"] != release["chart"]:
        differs.append("chart %s -> %s" % (release["chart"], wanted["chart"]))
    if not release.get("values_sha256"):
        differs.append("values not known")
    elif release["values_sha256"] != want_digest:
        differs.append("values differ")
    if differs:
        result["helm"] = UPGRADE
        result["reason"] = ", ".join(differs)
    else:
        result["helm"] = SKIP
        result["reason"] = "deployed with the same chart version and values"
    return result
