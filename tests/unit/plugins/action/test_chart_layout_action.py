# SPDX-License-Identifier: Apache-2.0
"""The chart_layout action plugin: in-process on a local connection (the same result as the module,
helm run with the task's environment), the module on the target otherwise."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import stat
from unittest import mock

import pytest

from ansible.plugins.action import ActionBase

from ansible_collections.kubevirtci.dra_cpu.plugins.action import chart_layout as action
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import chart_layout as module

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import run_module
from ansible_collections.kubevirtci.dra_cpu.tests.cluster.chart_sources import FIXTURES_DIR as CHARTS  # the 0.3.0 fixture

OCI = "oci://127.0.0.1:5000/dra-driver-cpu/charts/dra-driver-cpu"


@pytest.fixture
def fake_helm(tmp_path):
    """A helm executable that packages the fixture chart of --version (0.3.0) into --destination and
    records SSL_CERT_FILE and DRA_CPU_PROXY_TEST (the task environment) in a file."""
    script = tmp_path / "helm"
    seen = tmp_path / "seen"
    script.write_text("""#!/bin/sh
set -e
while [ $# -gt 0 ]; do
  case "$1" in --destination) dest=$2; shift;; --version) version=$2; shift;; esac; shift
done
[ "$version" = 9.9.9 ] && { echo 'Error: r/dra-driver-cpu:9.9.9: not found' >&2; exit 1; }
echo "SSL_CERT_FILE=$SSL_CERT_FILE PROXY=$DRA_CPU_PROXY_TEST" > %s
tar -czf "$dest/dra-driver-cpu-$version.tgz" -C %s/$version --transform 's,^\\.,dra-driver-cpu,' .
echo "Pulled: x:$version" >&2
echo "Digest: sha256:%s" >&2
""" % (seen, CHARTS, "ef" * 32))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script), seen


def _args(helm_cmd, tmp_path, **extra):
    args = {"chart": OCI, "chart_version": "0.3.0", "helm": helm_cmd, "reserved_cpus": "0-1",
            "cache_dir": str(tmp_path / "cache"), "ca_file": "/ca.crt"}
    args.update(extra)
    return args


@pytest.mark.skipif(shutil.which("tar") is None, reason="needs tar")
@pytest.mark.parametrize("extra", [{}, {"chart_version": "9.9.9"}, {"helm": ""},
                                   {"image": "reg:5000/d:v9"}])
def test_local_run_gives_exactly_the_module_result(fake_helm, tmp_path, extra):
    helm, _seen = fake_helm
    args = _args(helm, tmp_path, **extra)
    expected, failed = run_module(module, dict(args, _ansible_check_mode=True))  # check mode: no cache
    got = action.run_local(args, check_mode=True)
    assert bool(got.pop("failed", False)) is failed
    got.pop("warnings", None)
    expected.pop("invocation", None)
    assert got == expected


def test_local_run_uses_the_task_environment_and_writes_the_cache(fake_helm, tmp_path):
    helm, seen = fake_helm
    got = action.run_local(_args(helm, tmp_path), environment={"DRA_CPU_PROXY_TEST": "http://proxy:3128"})
    assert got["cache"] == "written" and got["digest"] == "sha256:" + "ef" * 32, got
    assert seen.read_text().strip() == "SSL_CERT_FILE=/ca.crt PROXY=http://proxy:3128"
    again = action.run_local(_args(helm, tmp_path))
    assert again["cache"] == "hit" and again["layout"] == got["layout"]


def test_local_run_checks_the_argument_spec():
    got = action.run_local({"cpu_device_mode": "bogus", "helm": ""})
    assert got["failed"] is True and "cpu_device_mode" in got["msg"]


def _plugin(transport, args, check_mode=False):
    task = mock.Mock(args=args, async_val=0, check_mode=check_mode, diff=False)
    connection = mock.Mock(transport=transport)
    return action.ActionModule(task, connection, mock.Mock(), loader=None, templar=None, shared_loader_obj=None)


def _environment(env):
    def compute(raw_environment_out=None):
        raw_environment_out.update(env)
        return ""
    return compute


def test_local_connection_runs_in_process(fake_helm, tmp_path):
    helm, seen = fake_helm
    plugin = _plugin("local", _args(helm, tmp_path), check_mode=True)
    with mock.patch.object(ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_compute_environment_string", _environment({"DRA_CPU_PROXY_TEST": "p"})), \
            mock.patch.object(plugin, "_execute_module") as execute:
        result = plugin.run(task_vars={})
    execute.assert_not_called()
    assert result["changed"] is False and result["version"] == "0.3.0" and result["cache"] == ""
    assert not os.path.exists(str(tmp_path / "cache" / "charts"))  # check mode
    assert "PROXY=p" in seen.read_text()


def test_other_connections_run_the_module_on_the_target():
    args = {"chart": OCI, "helm": "helm"}
    plugin = _plugin("ssh", args)
    with mock.patch.object(ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module", return_value={"changed": False, "version": "x"}) as execute:
        result = plugin.run(task_vars={"a": 1})
    execute.assert_called_once_with(module_name="kubevirtci.dra_cpu.chart_layout", module_args=args,
                                    task_vars={"a": 1})
    assert result["version"] == "x"
