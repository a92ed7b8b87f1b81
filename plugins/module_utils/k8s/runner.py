# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Runs a cluster module's run function in its module process or in the controller's worker.

A run function is ``run_fn(params, check_mode, source, get_client) -> result``. Here: the module's exit
(``exit_module``), the module side of ``get_api_client`` in process (``ClientOptions``), the argument
check, task environment and redaction of an in-process run (``run_in_process``) and when an action
plugin runs in process at all (``run_action``). docs/internals.md says why.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import ArgumentSpec, kubeconfig_secrets, may_hold_no_log_value
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.factory import GetClient
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams

if TYPE_CHECKING:  # for the annotations only: no controller import at run time
    from ansible.module_utils.basic import AnsibleModule

# a run function: ``run_fn(params, check_mode, source, get_client) -> result``
RunFn = Callable[[ModuleParams, bool, Any, GetClient], Mapping[str, Any]]

COLLECTION = "kubevirtci.dra_cpu"
# AnsibleK8SModule warns below this kubernetes client version (kubernetes.core 6.x)
KUBERNETES_TESTED = "24.2.0"


class Deprecation(TypedDict):
    """One deprecation notice of the argument spec, as AnsibleModule reports it."""

    msg: str
    version: str | None
    date: str | None
    collection_name: str


class ModuleFailure(BaseException):
    """``fail_json`` of ``ClientOptions``: like the module's SystemExit, past ``except Exception``."""

    def __init__(self, msg: str) -> None:
        super(ModuleFailure, self).__init__(msg)
        self.msg = msg


def _k8s_core() -> Any:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s import core
    return core


class ClientOptions(object):
    """The module side of ``get_api_client(module)`` without a module process."""

    def __init__(self, params: ModuleParams, check_mode: bool) -> None:
        self.params = params
        self.check_mode = bool(check_mode)
        self.warnings: list[str] = []
        if not _k8s_core().has_at_least("kubernetes", KUBERNETES_TESTED):
            self.warn("kubernetes<%s is not supported or tested. Some features may not work." % KUBERNETES_TESTED)

    @property
    def server_side_dry_run(self) -> bool:
        # read by kubernetes.core's get_api_client (the K8SClient's dry_run), as of AnsibleK8SModule
        return self.check_mode and _k8s_core().has_at_least("kubernetes", "18.20.0")

    def has_at_least(self, dependency: str, minimum: str | None = None, warn: bool = False) -> bool:
        return _k8s_core().has_at_least(dependency, minimum)

    def requires(self, dependency: str, minimum: str | None = None, reason: str | None = None) -> None:
        try:
            _k8s_core().requires(dependency, minimum, reason=reason)
        except Exception as exc:  # kubernetes.core raises a plain Exception naming the library
            raise ModuleFailure(str(exc))

    def warn(self, msg: str) -> None:
        self.warnings.append(msg)

    def fail_json(self, msg: str, **kwargs: Any) -> NoReturn:
        raise ModuleFailure(msg)


def exit_module(module: "AnsibleModule", result: Mapping[str, Any]) -> None:
    """End a module process with a run function's result."""
    result = dict(result)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


@contextlib.contextmanager
def task_environment(environment: Mapping[str, Any] | None) -> Iterator[None]:
    """``os.environ`` with the task's ``environment`` laid over it, restored afterwards."""
    saved = dict(os.environ)
    try:
        for key, value in (environment or {}).items():
            os.environ[str(key)] = "%s" % (value,)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def check_args(spec: ArgumentSpec, args: Mapping[str, Any] | None,
               module_name: str) -> tuple[ModuleParams, str | None, set[str], list[str], list[Deprecation]]:
    """``(params, error message or None, no_log values, warnings, deprecations)`` as AnsibleModule
    would have them for ``args`` (the RedactingModule's kubeconfig secrets included)."""
    raw = dict(args or {})
    checked = ArgumentSpecValidator(spec).validate(raw)
    no_log = set(checked._no_log_values) | kubeconfig_secrets(raw.get("kubeconfig"))
    error = None
    if checked.error_messages:
        error = checked.errors.msg
        if isinstance(checked.errors[0], UnsupportedError):
            error = "Unsupported parameters for (%s) module: %s" % (module_name, error)
    warnings = ["Both option %s and its alias %s are set." % (w["option"], w["alias"])
                for w in checked._warnings if "option" in w and "alias" in w]
    deprecations = [Deprecation(msg=d["msg"], version=d.get("version"), date=d.get("date"),
                                collection_name=d.get("collection_name") or COLLECTION) for d in checked._deprecations]
    return checked.validated_parameters, error, no_log, warnings, deprecations


def finish(result: Mapping[str, Any], params: ModuleParams, no_log_values: set[str], warnings: list[str] | None = None,
           deprecations: list[Deprecation] | None = None, plain_keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """The result as the module process returns it: invocation, redaction, JSON types.

    ``plain_keys``: top-level keys whose values the run function builds from JSON types only: the
    JSON round trip, which only copies them, skips them unless a value had to be redacted.
    """
    done = dict(result)
    done.setdefault("invocation", {"module_args": params})
    if warnings:
        # the run's own warnings first, then the argument spec's and the client's
        done["warnings"] = list(done.get("warnings") or []) + list(warnings)
    if deprecations:
        done["deprecations"] = list(deprecations)
    kept = {}
    if may_hold_no_log_value(done, no_log_values):
        preserved = dict((k, v) for k, v in done.items() if v is None or isinstance(v, bool))
        done = remove_values(done, no_log_values)
        done.update(preserved)
    else:
        kept = dict((k, done.pop(k)) for k in plain_keys if k in done)
    done = json.loads(json.dumps(done))
    done.update(kept)
    return done


def run_in_process(spec: ArgumentSpec, args: Mapping[str, Any] | None, check_mode: bool, run_fn: RunFn,
                   get_client: GetClient, module_name: str, environment: Mapping[str, Any] | None = None,
                   plain_keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """The module's result for task ``args``, computed in this process (``plain_keys``: see ``finish``)."""
    with task_environment(environment):
        params, error, no_log, warnings, deprecations = check_args(spec, args, module_name)
        if error:
            return finish({"failed": True, "msg": error}, params, no_log, warnings, deprecations)
        try:
            source = ClientOptions(params, check_mode)
            result = dict(run_fn(params, check_mode, source, get_client))
            warnings = warnings + source.warnings
        except ModuleFailure as exc:
            result = {"failed": True, "msg": exc.msg}
    return finish(result, params, no_log, warnings, deprecations, plain_keys)


def kubernetes_importable() -> bool:
    """Whether the kubernetes client and PyYAML load here (AnsibleK8SModule requires both)."""
    try:
        import kubernetes  # noqa: F401 pylint: disable=unused-import
        import yaml  # noqa: F401 pylint: disable=unused-import
    except ImportError:
        return False
    return True


def runs_here(transport: str, async_val: int, become: bool, environment: Mapping[str, Any] | None) -> bool:
    """Whether a task can run in this process with the module process's exact outcome.

    A local connection only, and not async (the module must outlive the task) nor become (it
    runs as another user). The kubernetes client reads ``KUBECONFIG`` once when it is imported:
    a task ``environment`` that changes it goes to a fresh module process.
    """
    if transport != "local" or async_val or become:
        return False
    if environment and "KUBECONFIG" in environment and "%s" % environment["KUBECONFIG"] != os.environ.get("KUBECONFIG"):
        return False
    return kubernetes_importable()


def run_action(action: Any, module_name: str, spec: ArgumentSpec, run_fn: RunFn, get_client: GetClient,
               task_vars: Mapping[str, Any] | None, plain_keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """An action plugin's ``run`` body: ``action`` is the ActionBase (after ``super().run``);
    ``plain_keys``: see ``finish``."""
    environment: dict[str, Any] = {}
    local = action._connection.transport == "local"
    if local:
        action._compute_environment_string(environment)
    become = getattr(action._play_context, "become", False)
    if not (local and runs_here("local", action._task.async_val, become, environment)):
        return action._execute_module(module_name=module_name, module_args=action._task.args, task_vars=task_vars)
    return run_in_process(spec, action._task.args, action._task.check_mode, run_fn, get_client, module_name,
                          environment, plain_keys)
