# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Action plugin for kubevirtci.dra_cpu.helm_tool.

On a local connection the helm the role runs is the controller's: the choice (a ``helm version``
or two, a stat) and a download (urllib, tarfile) run right here in the controller's worker, like
kubevirtci.dra_cpu.validate's action plugin: no module process, no payload to build. On any other
connection helm is looked for on the target, so the module runs there as usual.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevirtci.dra_cpu.plugins.plugin_utils.local_first import LocalFirstAction
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.find import (
    argument_spec,
    helm_tool,
    subprocess_runner,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams

MODULE = "kubevirtci.dra_cpu.helm_tool"


def run_local(args: ModuleParams, check_mode: bool = False, **kwargs: Any) -> dict[str, Any]:
    """The module's result for task ``args``, computed in this process (``kwargs``: helm_tool's I/O)."""
    checked = ArgumentSpecValidator(argument_spec()).validate(dict(args or {}))
    if checked.error_messages:
        return {"failed": True, "msg": "; ".join(checked.error_messages)}
    params = checked.validated_parameters
    kwargs.setdefault("run", subprocess_runner(params["timeout"]))
    return helm_tool(params, check_mode, **kwargs)


class ActionModule(LocalFirstAction):
    MODULE = MODULE
    _supports_check_mode = True

    def run_local(self, args: ModuleParams, task_vars: Mapping[str, Any] | None) -> dict[str, Any]:
        return run_local(args, check_mode=bool(self._task.check_mode))
