# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Find the driver's pods and the nodes they run on.

Owns: which DaemonSets a helm release created (helm's release annotations,
else the ``app.kubernetes.io/instance`` label) and the label selectors of
their pods (the DaemonSets' own ``spec.selector``, so ``nameOverride`` and
``fullnameOverride`` do not matter), and the DaemonSets themselves (rollout.py reads their
rollout status); listing those pods; the node of a
(possibly still pending) DaemonSet pod and the set of nodes that run a
driver pod. Reads only through the given API object.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject

RELEASE_NAME_ANNOTATION = "meta.helm.sh/release-name"
RELEASE_NAMESPACE_ANNOTATION = "meta.helm.sh/release-namespace"
INSTANCE_LABEL = "app.kubernetes.io/instance"
LEGACY_POD_SELECTOR = "app.kubernetes.io/name=dra-driver-cpu"


def _meta(obj: K8sObject) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def pod_node(pod: K8sObject) -> str | None:
    """The node a pod runs on, or (pending DaemonSet pod) the node its
    ``metadata.name`` node-affinity term points at."""
    spec = (pod or {}).get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In":
                values = field.get("values") or []
                if len(values) == 1:
                    return values[0]
    return None


def live_pods_by_node(pods: list[K8sObject]) -> dict[str, list[K8sObject]]:
    """Per node, its driver pods that run or are about to (neither finished nor being deleted)."""
    live: dict[str, list[K8sObject]] = {}
    for pod in pods or []:
        phase = ((pod.get("status") or {}).get("phase"))
        if phase in ("Succeeded", "Failed") or _meta(pod).get("deletionTimestamp"):
            continue
        node = pod_node(pod)
        if node:
            live.setdefault(node, []).append(pod)
    return live


def driver_nodes(pods: list[K8sObject]) -> list[str]:
    """Sorted node names that run (or are about to run) a driver pod."""
    return sorted(live_pods_by_node(pods))


def release_owns(obj: K8sObject, release: str, namespace: str) -> bool:
    """True when helm's annotations (or, without them, the instance label) name ``release``."""
    meta = _meta(obj)
    annotations = meta.get("annotations") or {}
    if RELEASE_NAME_ANNOTATION in annotations:
        return (annotations.get(RELEASE_NAME_ANNOTATION) == release
                and annotations.get(RELEASE_NAMESPACE_ANNOTATION, namespace) == namespace)
    return (meta.get("labels") or {}).get(INSTANCE_LABEL) == release


def label_selector(selector: Mapping[str, Any] | None) -> str:
    """A LabelSelector object (``matchLabels``, ``matchExpressions``) as a selector string."""
    selector = selector or {}
    parts = ["%s=%s" % (k, v) for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, operator = expr.get("key"), expr.get("operator")
        values = ",".join(expr.get("values") or [])
        if operator == "In":
            parts.append("%s in (%s)" % (key, values))
        elif operator == "NotIn":
            parts.append("%s notin (%s)" % (key, values))
        elif operator == "Exists":
            parts.append(key)
        elif operator == "DoesNotExist":
            parts.append("!%s" % key)
    return ",".join(parts)


def release_daemonsets(daemonsets: list[K8sObject], release: str, namespace: str) -> list[K8sObject]:
    """The DaemonSets of ``release``, sorted by name."""
    owned = [d for d in daemonsets or [] if release_owns(d, release, namespace)]
    return sorted(owned, key=lambda d: _meta(d).get("name") or "")


def daemonsets_path(namespace: str) -> str:
    """The API path of the DaemonSets in ``namespace``."""
    return "/apis/apps/v1/namespaces/%s/daemonsets" % quote(namespace, safe="")


def list_release_daemonsets(api: RawApi, namespace: str, release: str) -> list[dict[str, Any]]:
    """The DaemonSets of ``release`` in ``namespace`` (one list), sorted by name."""
    return release_daemonsets(api.get_json(daemonsets_path(namespace)).get("items") or [], release, namespace)


def daemonset_selectors(daemonsets: list[K8sObject]) -> list[str]:
    """The pod selectors of ``daemonsets`` (one per DaemonSet, each once)."""
    selectors: list[str] = []
    for ds in daemonsets:
        text = label_selector((ds.get("spec") or {}).get("selector"))
        if text and text not in selectors:
            selectors.append(text)
    return selectors


def release_pod_selectors(api: RawApi, namespace: str, release: str) -> list[str]:
    """The pod selectors of the release's DaemonSets (one per DaemonSet; [] when it has none)."""
    return daemonset_selectors(list_release_daemonsets(api, namespace, release))


def list_driver_pods(api: RawApi, namespace: str, selectors: list[str]) -> list[K8sObject]:
    """The pods matching any of ``selectors`` in ``namespace``, each once."""
    pods, seen = [], set()
    for selector in selectors:
        for pod in api.list_pods(namespace, selector):
            key = _meta(pod).get("uid") or _meta(pod).get("name")
            if key not in seen:
                seen.add(key)
                pods.append(pod)
    return pods


def describe_selectors(selectors: list[str]) -> str:
    """``selector a`` or ``selectors a; b`` for messages."""
    if len(selectors) == 1:
        return "selector %s" % selectors[0]
    return "selectors %s" % "; ".join(selectors)


def resolve_pod_selectors(api: RawApi, namespace: str, release: str | None = "",
                          pod_selector: str | None = None) -> tuple[list[str], str | None]:
    """The selectors of the driver's pods: ``pod_selector`` when given, else those of the DaemonSets
    of ``release``, else the chart's default name label. Returns ``(selectors, problem)``;
    ``problem`` says why the release has none."""
    if pod_selector:
        return [pod_selector], None
    if not release:
        return [LEGACY_POD_SELECTOR], None
    selectors = release_pod_selectors(api, namespace, release)
    if selectors:
        return selectors, None
    return [], ("helm release %s has no DaemonSet in namespace %s (none carries the annotation %s=%s or the "
                "label %s=%s): is the chart installed?" % (release, namespace, RELEASE_NAME_ANNOTATION, release,
                                                           INSTANCE_LABEL, release))
