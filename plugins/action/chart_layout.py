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

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart.fetch import run_subprocess
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart.stage import argument_spec, chart_result

MODULE = "kubevirtci.dra_cpu.chart_layout"


def run_local(args, check_mode=False, environment=None):
    """The module's result for task ``args``, computed in this process."""
    checked = ArgumentSpecValidator(argument_spec()).validate(dict(args or {}))
    if checked.error_messages:
        return {"failed": True, "msg": "; ".join(checked.error_messages)}
    base = dict(environment or {})

    def run(argv, env):
        return run_subprocess(argv, dict(base, **(env or {})))

    return chart_result(checked.validated_parameters, run, check_mode)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        if self._connection.transport != "local":
            result.update(self._execute_module(module_name=MODULE, module_args=self._task.args,
                                               task_vars=task_vars))
            return result
        environment = {}
        self._compute_environment_string(raw_environment_out=environment)
        result.update(run_local(self._task.args, check_mode=bool(self._task.check_mode),
                                environment=environment))
        return result
