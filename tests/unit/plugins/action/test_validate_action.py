# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock

import pytest

from ansible.plugins.action import ActionBase

from ansible_collections.kubevirtci.dra_cpu.plugins.action import validate as action
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import validate as module

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import run_module
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.test_validate import ARGS

BAD = dict(ARGS, reserved_cpus="3-1", namespace="Bad_NS", helm_binary="/nonexistent/helm")


@pytest.mark.parametrize("args", [ARGS, {}, BAD, dict(ARGS, chart_version="0.3.0", group_by="Socket")])
def test_local_run_gives_exactly_the_module_result(args):
    expected, failed = run_module(module, args)
    got = action.run_local(args)
    assert bool(got.pop("failed", False)) is failed
    expected.pop("invocation", None)
    assert got == expected


def test_local_run_checks_the_argument_spec():
    got = action.run_local(dict(ARGS, helm_mirror_allow_http="maybe"))
    assert got["failed"] is True and "helm_mirror_allow_http" in got["msg"]


def _plugin(transport, args):
    task = mock.Mock(args=args, async_val=0, check_mode=False, diff=False)
    connection = mock.Mock(transport=transport)
    plugin = action.ActionModule(task, connection, mock.Mock(), loader=None, templar=None, shared_loader_obj=None)
    return plugin


def test_local_connection_runs_in_process():
    plugin = _plugin("local", ARGS)
    with mock.patch.object(ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module") as execute:
        result = plugin.run(task_vars={})
    execute.assert_not_called()
    assert result["changed"] is False and result["settings"]["chart_version"] == "0.2.0"


def test_other_connections_run_the_module_on_the_target():
    plugin = _plugin("ssh", ARGS)
    with mock.patch.object(ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module", return_value={"changed": False, "values_key": "x"}) as execute:
        result = plugin.run(task_vars={"a": 1})
    execute.assert_called_once_with(module_name="kubevirtci.dra_cpu.validate", module_args=ARGS, task_vars={"a": 1})
    assert result["values_key"] == "x"


@pytest.mark.parametrize("transport", ["local", "ssh"])
def test_the_gate_off_is_shown_without_verbosity(transport):
    # the one line saying why nothing happens: printed by the default callback as debug's are
    plugin = _plugin(transport, dict(ARGS, enabled=False))
    skipped = {"changed": False, "skipped": True, "run": "skip", "msg": "KUBEVIRT_USE_DRA_CPU is not 'true': skipping"}
    with mock.patch.object(ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module", return_value=dict(skipped)):
        result = plugin.run(task_vars={})
    assert result["skipped"] is True and result["run"] == "skip"
    assert result["_ansible_verbose_always"] is True


def test_a_run_that_goes_on_is_not_shown():
    plugin = _plugin("local", ARGS)
    with mock.patch.object(ActionBase, "run", return_value={}):
        result = plugin.run(task_vars={})
    assert result["run"] == "present" and "_ansible_verbose_always" not in result
