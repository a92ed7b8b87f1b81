# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""One run of target_cluster, shared by the module and its action plugin (k8s/runner.py).

Owns the module's options and its result: the cluster the options point at (``describe_target``'s
server, context and kubeconfig) and the API server's version, or ``failed`` with ``msg``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import ArgumentSpec, auth_argument_spec, describe_target
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import ClusterError
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import factory
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams


def argument_spec() -> ArgumentSpec:
    return auth_argument_spec(AUTH_ARG_SPEC)


def run_target(params: ModuleParams, check_mode: bool, source: Any, get_client: factory.GetClient) -> dict[str, Any]:
    """``get_client(source)``'s cluster: ``{server, context, kubeconfig, server_version}``."""
    try:
        cluster = factory.connect(get_client, source, params)
    except ClusterError as exc:
        return {"failed": True, "msg": factory.failure("cannot read the cluster's version", exc)}
    result: dict[str, Any] = dict(describe_target(params, cluster.host))
    try:
        result["server_version"] = cluster.api.version().get("gitVersion")
    except ClusterError as exc:
        doing = "cannot read the version of the cluster at %s (context %s)" % (result["server"], result["context"])
        result.update(failed=True, msg=factory.failure(doing, exc))
        return result
    result["changed"] = False
    return result
