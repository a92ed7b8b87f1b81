# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Action plugin for kubevirtci.dra_cpu.chart_layout.

The chart stage (module_utils/chart/stage.py) runs one ``helm pull`` and reads three small files,
so on a local connection it runs right here in the controller's worker, like validate: no module
process and no payload to build. helm is started with the task's ``environment`` laid over the
controller's (proxies, HELM_* variables), as a module on the local connection would get it. On any
other connection helm and the cache directory are the target's, so the module runs there as usual.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevirtci.dra_cpu.plugins.plugin_utils.local_first import LocalFirstAction
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart.fetch import run_subprocess
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart.stage import argument_spec, chart_result
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams

MODULE = "kubevirtci.dra_cpu.chart_layout"


def run_local(args: ModuleParams, check_mode: bool = False,
              environment: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The module's result for task ``args``, computed in this process."""
    checked = ArgumentSpecValidator(argument_spec()).validate(dict(args or {}))
    if checked.error_messages:
        return {"failed": True, "msg": "; ".join(checked.error_messages)}
    base = dict(environment or {})

    def run(argv: list[str], env: dict[str, str] | None) -> tuple[int, str, str]:
        return run_subprocess(argv, dict(base, **(env or {})))

    return chart_result(checked.validated_parameters, run, check_mode)


class ActionModule(LocalFirstAction):
    MODULE = MODULE

    def run_local(self, args: ModuleParams, task_vars: Mapping[str, Any] | None) -> dict[str, Any]:
        environment: dict[str, Any] = {}
        self._compute_environment_string(raw_environment_out=environment)
        return run_local(args, check_mode=bool(self._task.check_mode), environment=environment)
