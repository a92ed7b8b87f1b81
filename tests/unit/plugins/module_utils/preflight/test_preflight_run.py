# SPDX-License-Identifier: Apache-2.0
"""module_utils/preflight/run.py: the one run of the module and its action plugin; ``checks: false``;
the short summary (report.py's ``summary_lines``)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import report, types
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.run import argument_spec, run_preflight

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import FakeCluster, HTTPError, node
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.preflight.test_preflight_installed import helm_secret

SERVER = "https://127.0.0.1:6443"
KUBECONFIG = {"current-context": "kind", "clusters": [], "users": [], "contexts": []}
NS = "/api/v1/namespaces/dra-driver-cpu"


def params(**args):
    args.setdefault("kubeconfig", KUBECONFIG)
    return ArgumentSpecValidator(argument_spec()).validate(args).validated_parameters


def factory(cluster):
    """A get_api_client stand-in: a client whose dynamic client is ``cluster``."""
    client = mock.Mock(client=cluster)
    client.configuration.host = SERVER
    return mock.Mock(return_value=client)


def test_cluster_line_names_server_context_and_kubeconfig():
    assert report.cluster_line({"server": "https://k:6443", "context": "", "kubeconfig": "/k/config"}) == (
        "https://k:6443 (context none, kubeconfig /k/config)")


def test_checks_off_reads_only_the_cluster_and_what_is_installed():
    cluster = FakeCluster({NS: {"metadata": {"name": "dra-driver-cpu", "labels": {}}},
                           NS + "/secrets": {"items": [helm_secret("dra-driver-cpu", 2, "deployed")]}})
    get_client = factory(cluster)
    got = run_preflight(params(checks=False, namespace="dra-driver-cpu", release_name="dra-driver-cpu"),
                        False, "source", get_client)
    get_client.assert_called_once_with("source")
    assert "failed" not in got
    assert got["passed"] is True and got["findings"] == [] and got["error_count"] == 0
    # the cluster is a result of its own (the role's release task names it), not a summary line
    assert got["summary"] == ["preflight: not run (dra_cpu_preflight=false)"]
    assert got["report"] == ["preflight: not run (dra_cpu_preflight=false)"]
    assert got["cluster"] == {"server": SERVER, "context": "kind", "kubeconfig": "(a kubeconfig given as a dict)",
                              "text": "%s (context kind, kubeconfig (a kubeconfig given as a dict))" % SERVER}
    assert got["installed"]["readable"] is True
    assert got["installed"]["release"]["status"] == "deployed" and got["installed"]["release"]["revision"] == 2
    assert got["node_affinity"] == {} and got["skipped_nodes"] == [] and got["server_version"] == "v1.36.3"
    # no node, /metrics, /apis or /configz read; so which nodes are Ready is not known (cpu_topology
    # then reads it itself)
    assert cluster.paths() == ["/version", NS, NS + "/secrets"]
    assert got["not_ready_nodes"] is None


def test_checks_off_without_a_namespace_and_in_check_mode_writes_no_report(tmp_path):
    got = run_preflight(params(checks=False, report_dir=str(tmp_path)), False, None, factory(FakeCluster()))
    assert "installed" not in got and got["passed"] is True
    assert list(tmp_path.iterdir()) == []


def test_checks_off_on_an_unreachable_cluster_fails_as_could_not_run():
    got = run_preflight(params(checks=False), False, None, factory(FakeCluster({"/version": HTTPError(503)})))
    assert got["failed"] is True and got["msg"].startswith("preflight could not read the cluster: ")
    assert got["report"] == got["summary"] == ["Preflight could not run: " + got["msg"]]


def test_a_client_that_cannot_be_built_is_the_one_line_report():
    got = run_preflight(params(kubeconfig="/k/config", context="kind"), False, None,
                        mock.Mock(side_effect=ValueError("no kubeconfig")))
    msg = ("preflight could not read the cluster: cannot create a Kubernetes client from kubeconfig /k/config, "
           "context kind: ValueError: no kubeconfig")
    assert got == {"failed": True, "msg": msg, "report": ["Preflight could not run: " + msg],
                   "summary": ["Preflight could not run: " + msg]}


def test_bad_options_fail_before_the_client_with_checks_on_or_off():
    for checks in (True, False):
        get_client = mock.Mock()
        got = run_preflight(params(checks=checks, reserved_cpus="3-1"), False, None, get_client)
        assert got["failed"] is True and got["msg"].startswith("reserved_cpus: '3-1' is not a valid cpuset")
        get_client.assert_not_called()


def test_a_failure_ends_its_message_with_the_summary():
    cluster = FakeCluster({"/api/v1/nodes": {"items": [node("node01"), node("node02")]},
                           "/api/v1/nodes/node02/proxy/configz": {"kubeletconfig": {"cpuManagerPolicy": "static"}}})
    got = run_preflight(params(reserved_cpus="0-1"), False, None, factory(cluster))
    assert got["failed"] is True and got["passed"] is False
    first, rest = got["msg"].split("\n", 1)
    assert first.startswith("preflight failed with 1 error(s): node node02 [cpu_manager_policy]")
    assert rest.split("\n") == got["summary"]
    assert got["summary"][0] == "preflight: 9 checks passed on node01, node02 (1 errors, 0 warnings)"
    assert got["summary"][1].startswith("[ERROR] cpu_manager_policy on node02: ")
    # the full report is unchanged
    assert got["report"][0] == "Preflight: 1 error(s), 0 warning(s); checked nodes: node01, node02"


def test_a_pass_has_the_summary_and_writes_the_report_file(tmp_path):
    got = run_preflight(params(reserved_cpus="0-1", report_dir=str(tmp_path)), False, None, factory(FakeCluster()))
    assert "failed" not in got and got["changed"] is False
    assert got["summary"] == ["preflight: 7 checks passed on node01 (0 errors, 0 warnings)"]
    assert [p.name for p in tmp_path.iterdir()] == ["dra-cpu-preflight.json"]
    # check mode: the same result, no file
    other = tmp_path / "check"
    got2 = run_preflight(params(reserved_cpus="0-1", report_dir=str(other)), True, None, factory(FakeCluster()))
    assert got2["summary"] == got["summary"] and not other.exists()


def finding(severity, check="container_runtime", node_name=None):
    return {"check": check, "severity": severity, "node": node_name, "message": "m", "observed": "o",
            "required": "r", "fix": ""}


def test_summary_lines():
    findings = [finding("ok"), finding("warning", "feature_gate"), finding("ok"),
                finding("error", "cpu_manager_policy", "node02")]
    assert report.summary_lines(findings, ["node01", "node02"]) == [
        "preflight: 2 checks passed on node01, node02 (1 errors, 1 warnings)",
        "[WARNING] feature_gate: m (observed: o; required: r)",
        "[ERROR] cpu_manager_policy on node02: m (observed: o; required: r)",
    ]


def test_summary_names_at_most_three_nodes():
    names = ["node%02d" % i for i in range(1, 6)]
    assert report.summary_lines([], names) == ["preflight: 0 checks passed on node01, node02, node03 and 2 more "
                                               "(0 errors, 0 warnings)"]
    assert report.summary_lines([], names[:3])[0] == ("preflight: 0 checks passed on node01, node02, node03 "
                                                      "(0 errors, 0 warnings)")
    assert report.summary_lines([finding("error", "eligible_nodes")], [])[0] == (
        "preflight: 0 checks passed on no node (1 errors, 0 warnings)")


def test_summary_with_the_checks_off():
    assert report.summary_lines([finding("error")], ["node01"], checked=False) == [report.NOT_RUN]
    assert report.NOT_RUN == "preflight: not run (dra_cpu_preflight=false)"


def _keys(typed_dict):
    return typed_dict.__required_keys__ | typed_dict.__optional_keys__


def test_the_result_has_the_declared_shape():
    """Every key of a result (with checks and without) is one PreflightResult declares, every finding
    has exactly Finding's keys, and what is installed Installed's (types.py is the one description)."""
    cluster = FakeCluster({NS: {"metadata": {"name": "dra-driver-cpu", "labels": {}}},
                           NS + "/secrets": {"items": [helm_secret("dra-driver-cpu", 2, "deployed")]}})
    for checks in (True, False):
        got = run_preflight(params(checks=checks, reserved_cpus="0-1", namespace="dra-driver-cpu",
                                   release_name="dra-driver-cpu"), True, None, factory(cluster))
        assert set(got) <= _keys(types.PreflightResult), set(got) - _keys(types.PreflightResult)
        assert set(got["cluster"]) == _keys(types.Cluster)
        assert set(got["installed"]) <= _keys(types.Installed)
        assert set(got["installed"]["namespace"]) == _keys(types.NamespaceState)
        assert set(got["installed"]["release"]) == _keys(types.ReleaseState)
        for item in got["findings"]:
            assert set(item) == _keys(types.Finding)
    assert got["findings"] == [] and checks is False
