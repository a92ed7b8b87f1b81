# SPDX-License-Identifier: Apache-2.0
"""Authentication options of the cluster modules, what of them stays secret, which cluster they target.

``auth_argument_spec`` (kubernetes.core's options; ``kubeconfig`` not ``no_log``), ``kubeconfig_secrets``
and ``RedactingModule`` (only a dict kubeconfig's secret fields hidden, the rule of kubernetes.core
>= 6.3.0), ``client_source`` and ``describe_target`` (the kubeconfig and context a client is built
from). docs/internals.md ("Cluster access and secrets") says why.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, Dict, Optional, TypedDict

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject, ModuleParams

SECRET_OPTIONS = ("api_key", "password")
PUBLIC_OPTIONS = ("kubeconfig",)

# fields of users[].user whose string value is a credential. The client certificate and the CA
# (clusters[].cluster) are public halves, hidden all the same: long base64 blobs that never belong
# in a result, and the suite asserts that no kubeconfig certificate data reaches any output
SECRET_USER_FIELDS = frozenset((
    "token", "password", "client-key-data", "client-certificate-data",
))
SECRET_CLUSTER_FIELDS = frozenset(("certificate-authority-data",))
# keys of users[].user.auth-provider.config that hold credentials (id-token, refresh-token,
# access-token, client-secret, ...); client-id, idp-issuer-url, cmd-path, expiry are not secret
_SECRET_KEY_RE = re.compile(r"(token|secret|password|passwd|key)", re.IGNORECASE)

# an Ansible argument spec: each option's name -> its spec (type, default, no_log, ...)
ArgumentSpec = Dict[str, Dict[str, Any]]


class Target(TypedDict):
    """The cluster a module's client talks to (``describe_target``)."""

    server: Optional[str]
    context: Optional[str]
    kubeconfig: Optional[str]


def auth_argument_spec(base: ArgumentSpec) -> ArgumentSpec:
    """A copy of kubernetes.core's ``AUTH_ARG_SPEC`` (``base``): secrets no_log, kubeconfig not."""
    spec = copy.deepcopy(base)
    for name in SECRET_OPTIONS:
        if name in spec:
            spec[name]["no_log"] = True
    for name in PUBLIC_OPTIONS:
        if name in spec:
            spec[name]["no_log"] = False
    return spec


def _strings(value: object) -> set[str]:
    """Every non-empty string inside ``value`` (str, list or dict values)."""
    if isinstance(value, str):
        return {value} if value else set()
    found: set[str] = set()
    if isinstance(value, dict):
        for item in value.values():
            found |= _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found |= _strings(item)
    return found


def _user_secrets(user: object) -> set[str]:
    if not isinstance(user, dict):
        return set()
    found = set()
    for key, value in user.items():
        if key in SECRET_USER_FIELDS:
            found |= _strings(value)
    provider = user.get("auth-provider")
    if isinstance(provider, dict) and isinstance(provider.get("config"), dict):
        for key, value in provider["config"].items():
            if _SECRET_KEY_RE.search(str(key)):
                found |= _strings(value)
    exec_ = user.get("exec")
    if isinstance(exec_, dict):
        # the plugin's environment carries its credentials (AWS_SECRET_ACCESS_KEY, ...)
        for item in exec_.get("env") or []:
            if isinstance(item, dict):
                found |= _strings(item.get("value"))
    return found


def kubeconfig_secrets(kubeconfig: K8sObject | str | None) -> set[str]:
    """The secret strings of a dict kubeconfig, to hide in everything a module returns: the user's
    credentials, ``auth-provider.config``'s credential keys, every ``exec.env[].value`` and the
    embedded certificates; names, URLs, commands and paths stay readable. A path (str) gives none."""
    if not isinstance(kubeconfig, dict):
        return set()
    found: set[str] = set()
    for entry in kubeconfig.get("users") or []:
        if isinstance(entry, dict):
            found |= _user_secrets(entry.get("user"))
    for entry in kubeconfig.get("clusters") or []:
        cluster = entry.get("cluster") if isinstance(entry, dict) else None
        if isinstance(cluster, dict):
            for key in SECRET_CLUSTER_FIELDS:
                found |= _strings(cluster.get(key))
    return found


def may_hold_no_log_value(data: object, no_log_values: set[str]) -> bool:
    """Whether ansible's ``remove_values(data, no_log_values)`` could change anything in ``data``:
    False only when no value occurs in its JSON text, raw or JSON-escaped (0.03 s where the walk takes
    0.28 s at 1,000 nodes x 8 cells; bench/)."""
    values = [str(v) for v in no_log_values or () if str(v)]
    if not values:
        return False
    try:
        text = json.dumps(data)
    except (TypeError, ValueError):
        return True
    return any(v in text or json.dumps(v)[1:-1] in text for v in values)


class RedactingModule(AnsibleModule):
    """AnsibleModule that hides a dict kubeconfig's secret fields, and nothing else of it.

    The values are registered while the parameters load, so they are masked everywhere. Facts that
    hold none of them skip remove_values' walk; under the legacy wire format a result of plain JSON
    types is written by ``json.dumps`` (``plain_json``). docs/internals.md says why.
    """

    _facts_as_they_are = None

    def _load_params(self) -> None:
        super(RedactingModule, self)._load_params()
        kubeconfig = (self.params or {}).get("kubeconfig")
        self.no_log_values.update(kubeconfig_secrets(kubeconfig))

    def _return_formatted(self, kwargs: dict[str, Any]) -> None:
        facts = kwargs.get("ansible_facts")
        if (facts and hasattr(AnsibleModule, "_record_module_result")
                and not may_hold_no_log_value(facts, self.no_log_values)):
            self._facts_as_they_are = facts
            kwargs["ansible_facts"] = {}
        super(RedactingModule, self)._return_formatted(kwargs)

    def _record_module_result(self, o: dict[str, Any]) -> None:
        if self._facts_as_they_are is not None:
            o["ansible_facts"] = self._facts_as_they_are
        text = plain_json(o) if module_profile() == LEGACY_PROFILE else None
        if text is None:
            super(RedactingModule, self)._record_module_result(o)
        else:
            # what ansible-core's hook prints: a newline, the JSON, a newline
            sys.stdout.write("\n%s\n" % text)


# the wire format ansible-core's controller asks of a collection's module; its encoder writes a
# result of plain JSON types as json.dumps does, only slower (docs/internals.md)
LEGACY_PROFILE = "legacy"


def module_profile() -> str | None:
    """The serialization profile the controller gave this module run (None when unknown)."""
    from ansible.module_utils import basic
    return getattr(basic, "_ANSIBLE_PROFILE", None)


def plain_json(result: dict[str, Any]) -> str | None:
    """``result`` as the legacy module encoder writes it, when it holds only what the standard
    library encodes the same way (dicts, lists, tuples, str, numbers, booleans, None); else None
    (ansible-core's own encoder then writes it, warnings and deprecations objects included)."""
    try:
        return json.dumps(result)
    except (TypeError, ValueError):
        return None


# ------------------------------------------------------------------ which cluster a client targets


def client_source(params: ModuleParams | None,
                  environ: Mapping[str, str] | None = None) -> tuple[str, K8sObject | str | None, str | None]:
    """Where kubernetes.core takes the connection from, as ``(kind, kubeconfig, context)``.

    Mirrors kubernetes.core's resolution: the module options, else ``K8S_AUTH_KUBECONFIG`` /
    ``K8S_AUTH_CONTEXT``; with neither a kubeconfig nor a context, ``host`` with credentials is
    used directly (kind ``host``), else the in-cluster service account when there is one, else the
    kubernetes client's default kubeconfig (``KUBECONFIG``, else ``~/.kube/config``). ``kind`` is
    ``dict``, ``file``, ``default`` or ``host``; ``kubeconfig`` the dict or path (None for the
    default); ``context`` the configured context (None = the kubeconfig's current-context).
    """
    env = os.environ if environ is None else environ
    params = params or {}

    def pick(option: str) -> Any:
        value = params.get(option)
        if value is None or value == "":
            value = env.get("K8S_AUTH_%s" % option.upper()) or None
        return value

    kubeconfig, context = pick("kubeconfig"), pick("context")
    host = pick("host")
    has_credentials = (pick("api_key") or (pick("username") and pick("password"))
                       or (pick("client_cert") and pick("client_key")))
    if not kubeconfig and not context and host and has_credentials:
        return "host", None, None
    if isinstance(kubeconfig, dict):
        return "dict", kubeconfig, context
    if kubeconfig:
        return "file", os.path.expanduser(str(kubeconfig)), context
    return "default", None, context


def active_context(kind: str, kubeconfig: K8sObject | str | None, context: str | None,
                   loader: Callable[[Any], tuple[Any, Any]] | None = None) -> str | None:
    """The context name the client uses: ``context``, else the kubeconfig's current-context.

    ``loader(path)`` returns ``(contexts, active)`` like ``kubernetes.config.list_kube_config_contexts``
    (path None = the client's default kubeconfig). Returns None when there is no kubeconfig (host
    options, in-cluster) or it cannot be read.
    """
    if context:
        return context
    if kind == "host":
        return None
    if kind == "dict":
        return (kubeconfig if isinstance(kubeconfig, dict) else {}).get("current-context") or None
    if loader is None:
        return None
    try:
        _contexts, active = loader(kubeconfig)
    except Exception:  # unreadable: the client has failed on it already or loaded in-cluster config
        return None
    return (active or {}).get("name") or None


def kubeconfig_contexts(path: str | None) -> tuple[list[K8sObject], K8sObject]:
    """``(contexts, active)`` of a kubeconfig file (None = the kubernetes client's default)."""
    from kubernetes import config  # the modules import it through get_api_client already
    return config.list_kube_config_contexts(config_file=path)


def describe_target(params: ModuleParams, server: str | None,
                    loader: Callable[[Any], tuple[Any, Any]] = kubeconfig_contexts,
                    environ: Mapping[str, str] | None = None) -> Target:
    """The cluster a module's client talks to, for the report.

    ``server`` is the client's ``configuration.host``; ``params`` the module's auth options.
    """
    kind, kubeconfig, context = client_source(params, environ)
    return {
        "server": server,
        "context": active_context(kind, kubeconfig, context, loader),
        "kubeconfig": kubeconfig_label(kind, kubeconfig),
    }


def kubeconfig_label(kind: str, kubeconfig: dict[str, Any] | str | None) -> str:
    """The kubeconfig a client is built from, for a message: its path, or how it was configured instead."""
    if kind == "file":
        return str(kubeconfig)
    return {"dict": "(a kubeconfig given as a dict)", "host": "(host and credential options)",
            "default": "(the kubernetes client's default: KUBECONFIG, else ~/.kube/config, "
                       "or the in-cluster service account)"}[kind]
