# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The base of the collection's action plugins whose logic needs no cluster client (validate,
helm_tool, chart_layout): on a local connection the module's logic runs right here in the
controller's worker (no module process, no payload to build); on any other connection the paths it
reads name files on the target, so the module runs there as usual. The cluster plugins (preflight,
cpu_topology, target_cluster) use module_utils/k8s/runner.py's run_action instead, which adds the
client, the task environment and the redaction.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping
from typing import Any
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams

from ansible.plugins.action import ActionBase


class LocalFirstAction(ActionBase):
    """Subclasses set ``MODULE`` and implement ``run_local(args, task_vars)`` -> the module's result."""

    TRANSFERS_FILES = False
    MODULE: str | None = None

    def run_local(self, args: ModuleParams, task_vars: Mapping[str, Any] | None) -> dict[str, Any]:
        raise NotImplementedError

    def run(self, tmp: str | None = None, task_vars: Mapping[str, Any] | None = None) -> dict[str, Any]:
        result = super(LocalFirstAction, self).run(tmp, task_vars)
        del tmp
        if self._connection.transport != "local":
            result.update(self._execute_module(module_name=self.MODULE, module_args=self._task.args,
                                               task_vars=task_vars))
        else:
            result.update(self.run_local(self._task.args, task_vars))
        return result
