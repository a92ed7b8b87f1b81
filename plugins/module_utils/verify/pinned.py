# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""One run of pinned_cpus, shared by the module and its action plugin (k8s/runner.py): which CPUs the
driver pinned a pod's containers to, as the driver itself logs it.

Owns: the module's options, finding the pod's node and the driver pod on that node (the release's
DaemonSets, topology/driver_pods.py), reading that pod's log and ``parse_pinned`` (upstream's
``"guaranteed CPUs found"`` line, nri_hooks.go CreateContainer; the module's DOCUMENTATION says more).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
import re
from urllib.parse import quote
from typing import Any

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import ArgumentSpec, auth_argument_spec
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import ClusterError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import factory
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.driver_pods import (
    list_driver_pods,
    pod_node,
    resolve_pod_selectors,
)

# upstream's message when a container with claims is created (nri_hooks.go CreateContainer)
PINNED_MESSAGE = '"guaranteed CPUs found"'
# klog's key="quoted value" / key=value pairs
_PAIR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def argument_spec() -> ArgumentSpec:
    spec = auth_argument_spec(AUTH_ARG_SPEC)
    spec.update(
        pod=dict(type="str", required=True),
        namespace=dict(type="str", default="default"),
        driver_namespace=dict(type="str", default="dra-driver-cpu"),
        release_name=dict(type="str", default="dra-driver-cpu"),
        log_lines=dict(type="int", default=5000),
    )
    return spec


def _value(text: str) -> str:
    if text.startswith('"'):
        try:
            return json.loads(text)
        except ValueError:
            return text.strip('"')
    return text


def parse_pinned(log: str, namespace: str, pod: str) -> dict[str, Any]:
    """``{container: cpuset}`` from the driver's log lines about pod ``namespace/pod`` (the last line
    per container wins: a restarted container is pinned again)."""
    want = "%s/%s" % (namespace, pod)
    out = {}
    for line in (log or "").splitlines():
        if PINNED_MESSAGE not in line:
            continue
        pairs = dict((k, _value(v)) for k, v in _PAIR.findall(line.split(PINNED_MESSAGE, 1)[1]))
        if pairs.get("pod") == want and "container" in pairs and "cpus" in pairs:
            out[pairs["container"]] = pairs["cpus"]
    return out


def pinned(api: RawApi, params: dict[str, Any]) -> dict[str, Any]:
    """``{node, driver_pod, containers, found}`` for the pod (``failed`` and ``msg`` when it cannot be read)."""
    path = "/api/v1/namespaces/%s/pods/%s" % (quote(params["namespace"], safe=""), quote(params["pod"], safe=""))
    node = pod_node(api.get_json(path))
    result: dict[str, Any] = {"node": node, "driver_pod": None, "containers": {}, "found": False, "changed": False}
    if not node:
        return dict(result, failed=True, msg="pod %s/%s is not scheduled to a node" % (params["namespace"], params["pod"]))
    selectors, problem = resolve_pod_selectors(api, params["driver_namespace"], params["release_name"])
    if problem:
        return dict(result, failed=True, msg=problem)
    on_node = [p for p in list_driver_pods(api, params["driver_namespace"], selectors) if pod_node(p) == node]
    if not on_node:
        return dict(result, failed=True, msg="no driver pod of release %s in namespace %s runs on node %s"
                    % (params["release_name"], params["driver_namespace"], node))
    name = on_node[0]["metadata"]["name"]
    log = api.pod_log(params["driver_namespace"], name, tail_lines=params["log_lines"])
    containers = parse_pinned(log, params["namespace"], params["pod"])
    return dict(result, driver_pod=name, containers=containers, found=bool(containers))


def run_pinned_cpus(params: ModuleParams, check_mode: bool, source: Any,
                    get_client: factory.GetClient) -> dict[str, Any]:
    """The module's result; ``get_client(source)`` builds the client (k8s/factory.py)."""
    try:
        return pinned(factory.connect(get_client, source, params).api, params)
    except ClusterError as exc:
        doing = "cannot read the pinned CPUs of pod %s/%s" % (params["namespace"], params["pod"])
        return {"failed": True, "msg": factory.failure(doing, exc)}
