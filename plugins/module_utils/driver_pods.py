# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Find the driver's pods and the nodes they run on.

Owns: the node of a (possibly still pending) DaemonSet pod and the set of
nodes that run a driver pod. Pure functions over pod objects; no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def _meta(obj):
    return (obj or {}).get("metadata") or {}


def pod_node(pod):
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


def driver_nodes(pods):
    """Sorted node names that run (or are about to run) a driver pod."""
    nodes = set()
    for pod in pods or []:
        phase = ((pod.get("status") or {}).get("phase"))
        if phase in ("Succeeded", "Failed"):
            continue
        if _meta(pod).get("deletionTimestamp"):
            continue
        node = pod_node(pod)
        if node:
            nodes.add(node)
    return sorted(nodes)
