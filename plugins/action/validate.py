# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Action plugin for kubevirtci.dra_cpu.validate.

The validation is pure Python and reads at most two local files (the kubeconfig's context names,
the helm binary's mode), so on a local connection it runs right here in the controller's worker:
no module process, no payload to build, about a second less per role run on a small host. On any
other connection the paths name files on the target, so the module runs there as usual.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevirtci.dra_cpu.plugins.plugin_utils.local_first import LocalFirstAction
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate.settings import (
    argument_spec,
    validation_result,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams

MODULE = "kubevirtci.dra_cpu.validate"


def run_local(args: ModuleParams) -> dict[str, Any]:
    """The module's result for task ``args``, computed in this process."""
    checked = ArgumentSpecValidator(argument_spec()).validate(dict(args or {}))
    if checked.error_messages:
        return {"failed": True, "msg": "; ".join(checked.error_messages)}
    return validation_result(checked.validated_parameters)


class ActionModule(LocalFirstAction):
    MODULE = MODULE

    def run_local(self, args: ModuleParams, task_vars: Mapping[str, Any] | None) -> dict[str, Any]:
        return run_local(args)

    def run(self, tmp: str | None = None, task_vars: Mapping[str, Any] | None = None) -> dict[str, Any]:
        result = super(ActionModule, self).run(tmp, task_vars)
        if result.get("skipped"):
            # the gate is off: the one line of the run that says why nothing happens is shown
            # without -v (as ansible.builtin.debug's are)
            result["_ansible_verbose_always"] = True
        return result
