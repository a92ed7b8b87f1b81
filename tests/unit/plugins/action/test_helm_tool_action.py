# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from unittest import mock

import pytest

from ansible.plugins.action import ActionBase

from ansible_collections.kubevirtci.dra_cpu.plugins.action import helm_tool as action
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import helm_tool as module

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import run_module


@pytest.fixture
def path_helm(tmp_path, monkeypatch):
    """A helm v3.20.1 first on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    helm = bindir / "helm"
    helm.write_text("#!/bin/sh\necho v3.20.1+gtest\n")
    helm.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir) + os.pathsep + os.environ.get("PATH", ""))
    return str(helm)


def args(tmp_path, **kw):
    a = {"version": "v3.22.0", "mirror": "https://mirror.invalid", "cache_dir": str(tmp_path / "cache")}
    a.update(kw)
    return a


@pytest.mark.parametrize("extra", [{}, {"binary": "HELM"}, {"force_download": True, "_ansible_check_mode": True}])
def test_local_run_gives_exactly_the_module_result(path_helm, tmp_path, extra):
    extra = dict(extra)
    if extra.get("binary") == "HELM":
        extra["binary"] = path_helm
    check_mode = bool(extra.pop("_ansible_check_mode", False))
    expected, failed = run_module(module, dict(args(tmp_path, **extra), _ansible_check_mode=check_mode))
    assert failed is False, expected
    expected.pop("invocation", None)
    assert action.run_local(args(tmp_path, **extra), check_mode=check_mode) == expected


def test_helm_on_path_through_the_module(path_helm, tmp_path):
    result, failed = run_module(module, args(tmp_path))
    assert failed is False
    assert (result["source"], result["path"], result["cmd"], result["version"]) == ("path", "", "helm", "3.20.1")


def test_module_failure_carries_the_message(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result, failed = run_module(module, args(tmp_path, checksums={"v3.22.0": {"linux-amd64": "abc"}}))
    assert failed is True and "'abc' is not a sha256" in result["msg"]


def test_local_run_checks_the_argument_spec(tmp_path):
    got = action.run_local(args(tmp_path, force_download="maybe"))
    assert got["failed"] is True and "force_download" in got["msg"]


def _plugin(transport, task_args, check_mode=False):
    task = mock.Mock(args=task_args, async_val=0, check_mode=check_mode, diff=False)
    connection = mock.Mock(transport=transport)
    return action.ActionModule(task, connection, mock.Mock(), loader=None, templar=None, shared_loader_obj=None)


@pytest.mark.parametrize("check_mode", [False, True])
def test_local_connection_runs_in_process(tmp_path, monkeypatch, check_mode):
    monkeypatch.setenv("PATH", str(tmp_path))
    plugin = _plugin("local", args(tmp_path), check_mode)
    with mock.patch.object(ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module") as execute, \
            mock.patch.object(action, "helm_tool", return_value={"changed": False, "missing": check_mode}) as tool:
        result = plugin.run(task_vars={})
    execute.assert_not_called()
    assert tool.call_args[0][1] is check_mode
    assert result == {"changed": False, "missing": check_mode}


def test_other_connections_run_the_module_on_the_target(tmp_path):
    plugin = _plugin("ssh", args(tmp_path))
    with mock.patch.object(ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module", return_value={"changed": False, "source": "x"}) as execute:
        result = plugin.run(task_vars={"a": 1})
    execute.assert_called_once_with(module_name="kubevirtci.dra_cpu.helm_tool", module_args=args(tmp_path),
                                    task_vars={"a": 1})
    assert result["source"] == "x"
