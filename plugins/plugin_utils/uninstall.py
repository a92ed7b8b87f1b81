# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The uninstall steps of the release action (``state: absent``), as a mixin of its ActionModule.

Owns: the order of an uninstall and the modules it starts (through the action's ``_execute_module``,
so they run wherever the connection points): ``kubernetes.core.helm`` (``release_state: absent``,
wait) when there is a release, ``kubernetes.core.k8s_info`` until the driver's ResourceSlices are
gone (k8s/wait.py's polling source) (only after this run removed the release: slices of another installation are not this role's
business, and are never touched), ``kubernetes.core.k8s`` to delete the namespace the collection
created. What to remove and the report's words are module_utils/release/uninstall.py. What is
installed is preflight's reading (``installed``), as for an install: the release action fails before
these steps when it is missing or unreadable, and nothing here reads it again.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import driver_field_selector
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.wait import poll_until
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import Installed
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.release import uninstall as plan
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.fact import DEFAULT_DRIVER
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject, ModuleParams

K8S_INFO = "kubernetes.core.k8s_info"
K8S = "kubernetes.core.k8s"
HELM = "kubernetes.core.helm"
SLICE_POLL_SECONDS = 3


class UninstallSteps(object):
    """Needs the action's ``_checked(name, args, task_vars, what)``, ``_fail(msg)`` and ``_task``."""

    if TYPE_CHECKING:  # what plugins/action/release.py's ActionModule provides
        _task: Any

        def _checked(self, name: str, args: ModuleParams, task_vars: Mapping[str, Any] | None,
                     what: str) -> dict[str, Any]: ...

        @staticmethod
        def _fail(msg: str) -> NoReturn: ...

    def _uninstall(self, p: ModuleParams, installed: Installed, auth: ModuleParams, helm_auth: ModuleParams,
                   task_vars: Mapping[str, Any] | None) -> dict[str, Any]:
        """The uninstall of what preflight read is installed (``installed``, readable)."""
        check = bool(self._task.check_mode)
        name, ns, timeout = p["release_name"], p["namespace"], p["uninstall_timeout"]
        steps = plan.plan(installed, name, ns, p["owner_label"])
        changed = False
        if not steps["helm"]:
            action = "not installed"
        elif check:
            action, changed = "would uninstall revision %s" % installed["release"].get("revision"), True
        else:
            done = self._checked(HELM, dict(helm_auth, release_state="absent", release_name=name, release_namespace=ns,
                                            wait=True, timeout="%ds" % timeout), task_vars,
                                 "cannot uninstall release %s" % name)
            changed = bool(done.get("changed"))
            action = "uninstalled" if changed else "not installed"
            if changed:
                self._wait_slices_gone(auth, timeout, task_vars)
                action += ", the driver's ResourceSlices gone"
        lines = [plan.release_line(name, ns, action)]
        if steps["delete_namespace"]:
            if not check:
                self._checked(K8S, dict(auth, api_version="v1", kind="Namespace", name=ns, state="absent",
                                        wait=True, wait_timeout=timeout), task_vars,
                              "cannot delete namespace %s" % ns)
            lines.append(plan.deleted_line(ns, check))
            changed = True
        else:
            lines.append(steps["namespace_line"])
        return {"action": action, "changed": changed, "report": lines}

    def _wait_slices_gone(self, auth: ModuleParams, timeout: int, task_vars: Mapping[str, Any] | None) -> None:
        """Until no ResourceSlice of the driver is left (read through k8s_info every SLICE_POLL_SECONDS by
        k8s/wait.py's polling source); fails after ``timeout`` seconds naming their nodes."""
        def read() -> list[K8sObject]:
            found = self._checked(K8S_INFO, dict(auth, api_version="resource.k8s.io/v1", kind="ResourceSlice",
                                                 field_selectors=[driver_field_selector(DEFAULT_DRIVER)]), task_vars,
                                  "cannot read the ResourceSlices of %s" % DEFAULT_DRIVER)
            return list(found.get("resources") or [])

        gone = poll_until(read, lambda left: not left, timeout, SLICE_POLL_SECONDS, time.monotonic, time.sleep)
        if not gone.done:
            self._fail(plan.slices_outlive_message(DEFAULT_DRIVER, gone.seen, timeout))
