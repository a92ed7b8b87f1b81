# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""One run of target_cluster, shared by the module and its action plugin (k8s/runner.py).

Owns: the module's options (kubernetes.core's auth options, ``auth.py``'s redaction rule), the
client, the ``/version`` request and the result (``describe_target``'s server, context and
kubeconfig, and ``server_version``; ``failed`` with ``msg`` when the client cannot be built or the
cluster not reached). ``client_error`` is the one wording of a client that cannot be built, for the
other cluster modules too.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import TYPE_CHECKING, Any

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import auth_argument_spec, describe_target
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi

if TYPE_CHECKING:  # the annotation only: the module does not import the runner
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.runner import GetClient


def argument_spec() -> dict[str, Any]:
    return auth_argument_spec(AUTH_ARG_SPEC)


def client_error(exc: Exception) -> str:
    """The message of a ``get_api_client`` failure."""
    if isinstance(exc, CoreException):
        return "cannot create a Kubernetes client: %s" % exc
    # kubeconfig errors surface as various exception types
    return "cannot create a Kubernetes client: %s: %s" % (type(exc).__name__, exc)


def run_target(params: dict[str, Any], check_mode: bool, source: Any, get_client: "GetClient") -> dict[str, Any]:
    """``get_client(source)``'s cluster: ``{server, context, kubeconfig, server_version}``."""
    try:
        client = get_client(source)
    except Exception as exc:  # pylint: disable=broad-except
        return {"failed": True, "msg": client_error(exc)}
    result: dict[str, Any] = dict(describe_target(params, client.configuration.host))
    try:
        result["server_version"] = RawApi(client.client).version().get("gitVersion")
    except KubeRequestError as exc:
        result.update(failed=True, msg="cannot reach the cluster at %s (context %s): %s"
                      % (result["server"], result["context"], exc.message))
        return result
    result["changed"] = False
    return result
