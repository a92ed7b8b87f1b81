# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""What is installed already (pure): the release namespace (exists, terminating, labels) and the
helm release (status, chart version, a digest of its values, never the values) from its revision
Secrets, and the other helm releases in the namespace. Preflight reads them, in its one process; the
release stage acts on that reading only. How helm stores a release: docs/internals.md ("Why the
settings and the chart values are as they are").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import base64
import binascii
import gzip
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import NamespaceState, ReleaseState

RELEASE_SECRET_TYPE = "helm.sh/release.v1"
GZIP_MAGIC = b"\x1f\x8b\x08"


class _ChartMetadata(TypedDict, total=False):
    name: str
    version: str


class _Chart(TypedDict, total=False):
    metadata: _ChartMetadata


class ReleaseBody(TypedDict, total=False):
    """The fields of helm's release JSON read here: the chart's metadata and the user's values."""

    chart: _Chart
    config: Optional[dict[str, object]]


def values_digest(values: Mapping[str, object] | None) -> str:
    """sha256 (hex) of the canonical JSON of helm values: keys sorted, no spaces.

    The one digest of both sides: the ``config`` helm stored in a release (the user-supplied values,
    what ``helm get values`` prints) and the values the role is about to give helm. No values (None,
    helm's ``config`` of a release installed without any) is the same as ``{}``.
    """
    return hashlib.sha256(json.dumps(values if values is not None else {}, sort_keys=True,
                                     separators=(",", ":"), ensure_ascii=False)
                          .encode("utf-8")).hexdigest()


# the label selector of every helm release's revision Secrets
HELM_SELECTOR = "owner=helm"


def other_releases(release_name: str, secrets: list[K8sObject] | None) -> list[str]:
    """The names of the helm releases other than ``release_name`` that keep their revisions in
    ``secrets`` (uninstall leaves a namespace holding any of them in place)."""
    names = set()
    for s in secrets or []:
        name = ((s.get("metadata") or {}).get("labels") or {}).get("name")
        if s.get("type") in (None, RELEASE_SECRET_TYPE) and name and name != release_name:
            names.add(str(name))
    return sorted(names)


def namespace_state(name: str, obj: K8sObject | None, want_labels: dict[str, str] | None = None) -> NamespaceState:
    """``{name, exists, terminating, labels, labels_ok}`` from a Namespace object (None: it does not
    exist); ``labels_ok``: it carries every label of ``want_labels`` with that value. A terminating
    namespace takes no new objects: the caller waits until it is gone."""
    metadata = (obj or {}).get("metadata") or {}
    labels = dict(metadata.get("labels") or {})
    terminating = obj is not None and bool(
        metadata.get("deletionTimestamp") or ((obj.get("status") or {}).get("phase") == "Terminating"))
    return {
        "name": name,
        "exists": obj is not None,
        "terminating": terminating,
        "labels": labels,
        "labels_ok": obj is not None and not terminating
        and all(labels.get(k) == v for k, v in (want_labels or {}).items()),
    }


def _revision(secret: K8sObject | None) -> int:
    version: Any = (((secret or {}).get("metadata") or {}).get("labels") or {}).get("version")
    try:
        return int(version)
    except (TypeError, ValueError):
        return -1


def decode_release(data: str) -> ReleaseBody:
    """The release dict from a Secret's ``data.release`` as the API returns it (a str)."""
    raw = base64.b64decode(base64.b64decode(data))
    if raw[:3] == GZIP_MAGIC:
        raw = gzip.decompress(raw)
    body: ReleaseBody = json.loads(raw.decode("utf-8"))
    return body


def release_state(release_name: str, secrets: list[K8sObject] | None) -> ReleaseState:
    """The newest revision of a release from its Secrets (``{}`` when none); its status and revision
    come from the labels, the chart, version and values digest ('' when undecodable) from the body."""
    mine = [s for s in secrets or []
            if (s.get("type") in (None, RELEASE_SECRET_TYPE))
            and (((s.get("metadata") or {}).get("labels") or {}).get("name") == release_name)
            and _revision(s) >= 0]
    if not mine:
        return {}
    newest = max(mine, key=_revision)
    labels = newest["metadata"].get("labels") or {}
    chart, chart_version, digest = "", "", ""
    data = (newest.get("data") or {}).get("release")
    if data:
        try:
            body = decode_release(data)
            metadata = ((body.get("chart") or {}).get("metadata") or {})
            chart, chart_version = str(metadata.get("name") or ""), str(metadata.get("version") or "")
            digest = values_digest(body.get("config"))
        except (binascii.Error, ValueError, TypeError, OSError, EOFError, UnicodeDecodeError, AttributeError):
            pass
    return {
        "name": release_name,
        "revision": _revision(newest),
        "status": str(labels.get("status") or ""),
        "chart": chart,
        "chart_version": chart_version,
        "values_sha256": digest,
    }
