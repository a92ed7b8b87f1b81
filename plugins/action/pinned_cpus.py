# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Action plugin for kubevirtci.dra_cpu.pinned_cpus: on a local connection, the module's own run
(module_utils/verify/pinned.py's run_pinned_cpus) in the controller's worker, no module process; else the
module. The rules (argument spec, environment, redaction, when) are module_utils/k8s/runner.py's run_action.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.runner import run_action
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.pinned import argument_spec, run_pinned_cpus

MODULE = "kubevirtci.dra_cpu.pinned_cpus"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        result.update(run_action(self, MODULE, argument_spec(), run_pinned_cpus, get_api_client, task_vars))
        return result
