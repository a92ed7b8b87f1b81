# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The one client factory of the cluster modules and the one way their runners word a failure.

``connect`` builds the client (kubernetes.core's ``get_api_client``, or a stand-in in the unit
tests) and returns a ``Cluster``; a client that cannot be built raises ``ClientBuildError``
naming the kubeconfig and context. ``failure`` joins what a runner was reading with why it failed
(client.py's mapping).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import client_source, kubeconfig_label
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import (
    ClusterError,
    RawApi,
    client_build_error,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams

# ``get_client(source)``: kubernetes.core's ``get_api_client`` (its K8SClient is untyped); ``source``
# the AnsibleK8SModule, or runner.ClientOptions in the controller's worker
GetClient = Callable[[Any], Any]


@dataclass(frozen=True)
class Cluster:
    """A built client: raw requests through it, and the API server URL it talks to."""

    api: RawApi
    host: str | None


def client_origin(params: ModuleParams) -> str:
    """Which kubeconfig and context the client is built from, as a message says it."""
    kind, kubeconfig, context = client_source(params)
    text = "kubeconfig %s" % kubeconfig_label(kind, kubeconfig)
    if kind != "host":
        text += ", context %s" % (context or "(the kubeconfig's current-context)")
    return text


def connect(get_client: GetClient, source: Any, params: ModuleParams) -> Cluster:
    """The client of ``params``' cluster; ``ClientBuildError`` when it cannot be built."""
    try:
        client = get_client(source)
    except Exception as exc:  # pylint: disable=broad-except
        # kubeconfig problems surface as many exception types (ConfigException, OSError, ValueError, ...)
        raise client_build_error(exc, client_origin(params)) from exc
    return Cluster(RawApi(client.client), client.configuration.host)


def failure(doing: str, exc: ClusterError) -> str:
    """A runner's failure message: what it was doing (``cannot read ...``), then why."""
    return "%s: %s" % (doing, exc.message)
