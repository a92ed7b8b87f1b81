# SPDX-License-Identifier: Apache-2.0
"""The action plugins of preflight, cpu_topology, target_cluster and verify (module_utils/k8s/runner.py): on a
local connection the module's own run function in process, with the module's result, argument check,
environment and redaction; otherwise the module through _execute_module."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from unittest import mock

import pytest
import yaml

from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

from ansible_collections.kubevirtci.dra_cpu.plugins.action import cpu_topology as topology_action
from ansible_collections.kubevirtci.dra_cpu.plugins.action import preflight as preflight_action
from ansible_collections.kubevirtci.dra_cpu.plugins.action import target_cluster as target_action
from ansible_collections.kubevirtci.dra_cpu.plugins.action import verify as verify_action
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import runner
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.target import argument_spec as target_spec
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import cpu_topology as topology_module
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import preflight as preflight_module
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import target_cluster as target_module
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import verify as verify_module

from ansible_collections.kubevirtci.dra_cpu.tests.unit.conftest import load_slices
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import FakeCluster, pod, run_module
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.test_cpu_topology import PODS, SLICES, listing
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.test_preflight import two_nodes

SERVER = "https://127.0.0.1:6443"
TOKEN = "a-secret-token-0123456789"
DICT_KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "test",
    "clusters": [{"name": "test", "cluster": {"server": SERVER, "certificate-authority-data": "Q0EtREFUQS1CTE9C"}}],
    "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
    "users": [{"name": "admin", "user": {"token": TOKEN}}],
}

PLUGINS = {
    "preflight": (preflight_action, preflight_module),
    "cpu_topology": (topology_action, topology_module),
    "target_cluster": (target_action, target_module),
    "verify": (verify_action, verify_module),
}
# a whole verify run needs a cluster that keeps what it is given (test_verify_run.py); here its refusals
SUCCEEDS_ON_A_FAKE = sorted(n for n in PLUGINS if n != "verify")


def fake_client(cluster):
    client = mock.Mock(client=cluster)
    client.configuration.host = SERVER
    return client


def topology_cluster():
    return FakeCluster({PODS: {"items": [pod("drv-a", "node-a")]},
                        SLICES: listing(load_slices("reference_grouped_numanode.yaml"))})


# (plugin, task args, cluster) whose module result the in-process run must give exactly
CASES = [
    ("preflight", {"reserved_cpus": "0-1"}, FakeCluster),
    ("preflight", {"reserved_cpus": "0-1", "chart_version": "0.3.0"}, two_nodes),        # fails: static node
    ("preflight", {"checks": False, "namespace": "dra-driver-cpu"}, FakeCluster),
    ("preflight", {"reserved_cpus": "3-1"}, FakeCluster),                                 # could not run
    ("preflight", {"cpu_device_mode": "shared"}, FakeCluster),                            # argument spec
    ("preflight", {"reserved_cpus": "0-1", "bogus": 1}, FakeCluster),                     # unsupported option
    ("cpu_topology", {"wait": False}, topology_cluster),
    ("cpu_topology", {"wait": False, "min_cell_cpus": 99}, topology_cluster),              # fails, topology kept
    ("cpu_topology", {"timeout": 0}, topology_cluster),
    ("target_cluster", {}, FakeCluster),
    ("verify", {"cpus": 2, "vm_cores": 2}, FakeCluster),                                  # fails before any call
    ("verify", {"cpus": "many"}, FakeCluster),                                            # argument spec
]


def module_result(name, args, cluster):
    module = PLUGINS[name][1]
    with mock.patch.object(module, "get_api_client", return_value=fake_client(cluster)):
        result, failed = run_module(module, args)
    return result, failed


def local_result(name, args, cluster):
    action = PLUGINS[name][0]
    spec = action.argument_spec()
    fn = [getattr(action, n) for n in ("run_preflight", "run_cpu_topology", "run_target", "run_verify") if hasattr(action, n)][0]
    return runner.run_in_process(spec, args, False, fn, mock.Mock(return_value=fake_client(cluster)), action.MODULE,
                                 plain_keys=getattr(action, "PLAIN_KEYS", ()))


def json_native(value):
    """Whether ``value`` holds only what JSON gives back: dict (str keys), list, str, int, float, bool, None."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and json_native(v) for k, v in value.items())
    if isinstance(value, list):
        return all(json_native(v) for v in value)
    return value is None or isinstance(value, (str, bool, int, float))


def test_the_topology_is_json_native_so_its_json_copy_can_be_skipped():
    # runner.finish skips the JSON round trip of cpu_topology's PLAIN_KEYS: only right when fact.py
    # builds them of JSON types (the local run equals the module's, CASES above)
    got = local_result("cpu_topology", {"wait": False}, topology_cluster())
    assert got["ansible_facts"]["dra_cpu_topology"]["nodes"] and json_native(got["ansible_facts"])
    failed = local_result("cpu_topology", {"wait": False, "min_cell_cpus": 99}, topology_cluster())
    assert failed["topology"]["nodes"] and json_native(failed["topology"])


def test_plain_keys_are_not_copied_unless_a_value_must_be_hidden():
    fact = {"nodes": {"n1": {"cells": [{"id": 0, "devices": ["cpudevnuma000"]}]}}}
    got = runner.finish({"ansible_facts": {"t": fact}, "n": 1}, {}, set(), plain_keys=("ansible_facts",))
    assert got["ansible_facts"]["t"] is fact and got["n"] == 1 and got["invocation"] == {"module_args": {}}
    # a secret anywhere in the result: the whole result is redacted and copied as before
    secret = {"ansible_facts": {"t": {"note": "the-secret-value"}}}
    got = runner.finish(secret, {}, {"the-secret-value"}, plain_keys=("ansible_facts",))
    assert "the-secret-value" not in repr(got) and got["ansible_facts"] is not secret["ansible_facts"]


@pytest.mark.parametrize("name, args, cluster", CASES)
def test_local_run_gives_exactly_the_module_result(name, args, cluster):
    args = dict(args, kubeconfig=DICT_KUBECONFIG)
    expected, failed = module_result(name, args, cluster())
    got = local_result(name, args, cluster())
    assert bool(got.pop("failed", False)) is failed
    assert got.pop("invocation")["module_args"]["kubeconfig"]["current-context"] == "test"
    # the module's fake exit neither scrubs nor serialises: the same redaction and JSON round trip
    expected = runner.finish(expected, {}, runner.kubeconfig_secrets(DICT_KUBECONFIG))
    expected.pop("invocation")
    # a module run by Ansible is named by its FQCN (_ansible_module_name); here by the file it runs from
    if "(basic.py)" in expected.get("msg", ""):
        expected["msg"] = expected["msg"].replace("(basic.py)", "(%s)" % PLUGINS[name][0].MODULE)
    assert got == expected


def test_local_run_hides_a_dict_kubeconfigs_secrets_and_no_log_options():
    cluster = FakeCluster({"/version": {"gitVersion": "v1.36.3 " + TOKEN}})  # a secret echoed back
    got = runner.run_in_process(target_spec(), {"kubeconfig": DICT_KUBECONFIG, "api_key": "the-api-key"}, False,
                                target_action.run_target, mock.Mock(return_value=fake_client(cluster)),
                                target_action.MODULE)
    text = repr(got)
    assert TOKEN not in text and "Q0EtREFUQS1CTE9C" not in text and "the-api-key" not in text
    args = got["invocation"]["module_args"]
    # Ansible's remove_values, as in the module: a whole secret value is replaced, a part masked
    assert args["kubeconfig"]["users"][0]["user"]["token"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
    assert args["api_key"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
    # the rest of the kubeconfig stays readable, and no value of it is masked elsewhere
    assert args["kubeconfig"]["clusters"][0]["cluster"]["server"] == SERVER
    assert got["server"] == SERVER and got["server_version"] == "v1.36.3 ********"
    assert got["changed"] is False and "failed" not in got


def test_local_run_resolves_k8s_auth_kubeconfig_from_the_task_environment(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(dict(DICT_KUBECONFIG, clusters=[{"name": "test", "cluster": {
        "server": "https://192.0.2.7:6443"}}])))
    before = dict(os.environ)

    def run_fn(params, check_mode, source, get_client):
        client = get_client(source)
        return {"host": client.configuration.host, "kubeconfig": os.environ.get("K8S_AUTH_KUBECONFIG")}

    # kubernetes.core's own get_api_client, short of the discovery request its dynamic client makes
    with mock.patch.object(k8s_client, "create_api_client", return_value=mock.Mock()):
        got = runner.run_in_process(target_spec(), {}, False, run_fn, get_api_client, target_action.MODULE,
                                    environment={"K8S_AUTH_KUBECONFIG": str(path)})
    assert got["host"] == "https://192.0.2.7:6443" and got["kubeconfig"] == str(path)
    assert dict(os.environ) == before


def test_a_missing_library_fails_like_the_module():
    def run_fn(params, check_mode, source, get_client):
        source.requires("no-such-library", "1.0", reason="to test")
        raise AssertionError("requires did not stop the run")

    got = runner.run_in_process(target_spec(), {}, False, run_fn, None, target_action.MODULE)
    assert got["failed"] is True and "no-such-library" in got["msg"]


def test_a_deprecated_option_is_reported_as_the_module_would():
    got = local_result("preflight", {"chart": "x", "kubeconfig": DICT_KUBECONFIG}, FakeCluster)
    assert got["deprecations"] == [{"msg": "Param 'chart' is deprecated. See the module docs for more information",
                                    "version": "1.0.0", "date": None, "collection_name": "kubevirtci.dra_cpu"}]


def _plugin(action, transport, args, async_val=0, become=False, environment=None):
    task = mock.Mock(args=args, async_val=async_val, check_mode=False, diff=False)
    plugin = action.ActionModule(task, mock.Mock(transport=transport), mock.Mock(become=become), loader=None,
                                 templar=None, shared_loader_obj=None)

    def compute(raw_environment_out=None):
        raw_environment_out.update(environment or {})
        return ""

    plugin._compute_environment_string = compute
    return plugin


@pytest.mark.parametrize("name", SUCCEEDS_ON_A_FAKE)
def test_local_connection_runs_in_process(name):
    action = PLUGINS[name][0]
    plugin = _plugin(action, "local", {"kubeconfig": DICT_KUBECONFIG, "wait": False} if name == "cpu_topology"
                     else {"kubeconfig": DICT_KUBECONFIG})
    cluster = topology_cluster() if name == "cpu_topology" else FakeCluster()
    with mock.patch.object(action.ActionBase, "run", return_value={}), \
            mock.patch.object(action, "get_api_client", return_value=fake_client(cluster)) as get_client, \
            mock.patch.object(plugin, "_execute_module") as execute:
        result = plugin.run(task_vars={})
    execute.assert_not_called()
    get_client.assert_called_once()
    assert isinstance(get_client.call_args[0][0], runner.ClientOptions)
    assert result["changed"] is False and "failed" not in result, result
    assert cluster.calls


@pytest.mark.parametrize("name", sorted(PLUGINS))
@pytest.mark.parametrize("transport, async_val, become, environment", [
    ("ssh", 0, False, {}),
    ("local", 30, False, {}),                                # async: the module outlives the task
    ("local", 0, True, {}),                                  # become: another user
    ("local", 0, False, {"KUBECONFIG": "/elsewhere/config"}),  # read when kubernetes is imported
])
def test_other_tasks_run_the_module(name, transport, async_val, become, environment):
    action = PLUGINS[name][0]
    plugin = _plugin(action, transport, {"a": 1}, async_val, become, environment)
    with mock.patch.object(action.ActionBase, "run", return_value={}), \
            mock.patch.object(action, "get_api_client") as get_client, \
            mock.patch.object(plugin, "_execute_module", return_value={"changed": False, "x": 1}) as execute:
        result = plugin.run(task_vars={"v": 1})
    execute.assert_called_once_with(module_name=action.MODULE, module_args={"a": 1}, task_vars={"v": 1})
    get_client.assert_not_called()
    assert result == {"changed": False, "x": 1}


def test_without_the_kubernetes_client_here_the_module_runs():
    with mock.patch.object(runner, "kubernetes_importable", return_value=False):
        assert runner.runs_here("local", 0, False, {}) is False
    assert runner.runs_here("local", 0, False, {"K8S_AUTH_CONTEXT": "x"}) is True
    assert runner.runs_here("local", 0, False, {"KUBECONFIG": os.environ.get("KUBECONFIG", "")}) is \
        ("KUBECONFIG" in os.environ)


def test_module_main_and_action_share_the_run_function():
    assert preflight_action.run_preflight is preflight_module.run_preflight
    assert topology_action.run_cpu_topology is topology_module.run_cpu_topology
    assert target_action.run_target is target_module.run_target
    assert verify_action.run_verify is verify_module.run_verify
    for action, module in PLUGINS.values():
        assert action.argument_spec() == module.argument_spec()
