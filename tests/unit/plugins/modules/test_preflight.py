# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.kubevirtci.dra_cpu.plugins.modules import preflight
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import installed

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import FakeCluster, HTTPError, node, run_module
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.preflight.test_preflight_installed import helm_secret

STATIC = {"kubeletconfig": {"cpuManagerPolicy": "static"}}
NONE = {"kubeletconfig": {}}


def two_nodes(**routes):
    base = {
        "/api/v1/nodes": {"items": [node("node01"), node("node02", labels={"kubernetes.io/hostname": "host-2"})]},
        "/api/v1/nodes/node01/proxy/configz": NONE,
        "/api/v1/nodes/node02/proxy/configz": STATIC,
    }
    base.update(routes)
    return FakeCluster(base)


def by_check(result, check, node_name=None):
    return [f for f in result["findings"] if f["check"] == check and f["node"] == node_name]


def test_all_good():
    cluster = FakeCluster()
    result, failed = run_module(preflight, {"reserved_cpus": "0-1"}, cluster)
    assert failed is False
    assert result["passed"] is True and result["error_count"] == 0 and result["warning_count"] == 0
    assert result["server_version"] == "v1.36.3"
    assert result["checked_nodes"] == ["node01"]
    assert [f["check"] for f in result["findings"]] == [
        "server_version", "resource_api", "feature_gate", "eligible_nodes",
        "container_runtime", "cpu_manager_policy", "reserved_cpus"]
    assert result["node_affinity"] == {} and result["skipped_nodes"] == []
    assert result["report"][0] == "Preflight: 0 error(s), 0 warning(s); checked nodes: node01"
    assert result["report"][1] == "[OK] server_version: Kubernetes v1.36.3"
    assert len(result["report"]) == 1 + len(result["findings"])
    assert cluster.paths() == ["/version", "/metrics", "/apis", "/api/v1/nodes", "/api/v1/nodes/node01/proxy/configz"]


def test_static_worker_fails_naming_node():
    result, failed = run_module(preflight, {"reserved_cpus": "0-1", "chart_version": "0.3.0"}, two_nodes())
    assert failed is True
    assert result["error_count"] == 1
    assert result["msg"].startswith("preflight failed with 1 error(s): node node02 [cpu_manager_policy]: "
                                    "node node02: kubelet cpuManagerPolicy is static")
    assert by_check(result, "cpu_manager_policy", "node02")[0]["observed"] == "static"


def test_skip_incompatible_nodes_with_030():
    args = {"reserved_cpus": "0-1", "chart_version": "0.3.0", "skip_incompatible_nodes": True}
    result, failed = run_module(preflight, args, two_nodes())
    assert failed is False
    assert result["skipped_nodes"] == [{"node": "node02", "reasons": ["cpu_manager_policy"]}]
    terms = result["node_affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["host-2"]}]}]
    assert by_check(result, "cpu_manager_policy", "node02")[0]["severity"] == "warning"


def test_skip_incompatible_nodes_with_020_fails():
    args = {"reserved_cpus": "0-1", "chart_version": "0.2.0", "skip_incompatible_nodes": True}
    result, failed = run_module(preflight, args, two_nodes())
    assert failed is True
    assert "node affinity needs chart >= 0.3.0" in result["msg"]
    assert result["node_affinity"] == {}


def test_chart_affinity_read_from_the_chart_wins_over_the_version():
    # a 0.2.x chart with an affinity value (upstream main still says 0.2.0) can keep nodes off ...
    args = {"reserved_cpus": "0-1", "chart_version": "0.2.0", "skip_incompatible_nodes": True,
            "chart_affinity": True}
    result, failed = run_module(preflight, args, two_nodes())
    assert failed is False and result["skipped_nodes"][0]["node"] == "node02"
    # ... and a 0.3.x chart without one cannot
    args.update(chart_version="0.3.5", chart_affinity=False)
    result, failed = run_module(preflight, args, two_nodes())
    assert failed is True and result["node_affinity"] == {}


def test_ignore_downgrades():
    result, failed = run_module(preflight, {"ignore": ["cpu_manager_policy"]}, two_nodes())
    assert failed is False
    assert result["warning_count"] == 1


def test_unreadable_metrics_and_configz_are_warnings():
    cluster = FakeCluster({
        "/metrics": HTTPError(403, 'forbidden: User "u" cannot get path "/metrics"'),
        "/api/v1/nodes/node01/proxy/configz": HTTPError(403, 'nodes "node01" is forbidden'),
    })
    result, failed = run_module(preflight, {}, cluster)
    assert failed is False
    gate = by_check(result, "feature_gate")[0]
    assert gate["severity"] == "warning"
    assert "permission denied: cannot get non-resource URL /metrics" in gate["message"]
    cpu = by_check(result, "cpu_manager_policy", "node01")[0]
    assert cpu["severity"] == "warning"
    assert "permission denied: cannot get nodes/proxy" in cpu["message"]
    assert result["warning_count"] == 2


def test_a_node_that_is_not_ready_is_a_warning_and_its_configz_is_not_read():
    """A stopped kubelet: the node lifecycle controller sets Ready=Unknown (NodeStatusUnknown) and
    the kubelet cannot answer /configz (the API server's node proxy gives 503 after its own wait).
    One node_ready warning names the node, the condition and the fix; no configz read, no
    cpu_manager_policy finding for it; the Ready node's /configz is read with a timeout."""
    cluster = FakeCluster({"/api/v1/nodes": {"items": [node("node01"), node("node02", ready="Unknown")]},
                           "/api/v1/nodes/node02/proxy/configz": HTTPError(503, "the kubelet does not answer")})
    result, failed = run_module(preflight, {"reserved_cpus": "0-1"}, cluster)
    assert failed is False and result["passed"] is True
    assert result["warning_count"] == 1 and result["error_count"] == 0
    [warn] = by_check(result, "node_ready", "node02")
    assert warn["severity"] == "warning" and warn["observed"] == "Ready=Unknown" and warn["required"] == "Ready=True"
    assert warn["message"] == ("node node02 is not Ready (Ready=Unknown: NodeStatusUnknown, Kubelet stopped posting "
                               "node status.) since 2026-12-02T06:00:00Z: the driver cannot start or publish there "
                               "and no pod with a claim can start there; the pool it published before stays "
                               "in the table, counted in no figure")
    assert "kubectl delete node node02" in warn["fix"]
    assert by_check(result, "cpu_manager_policy", "node02") == [] and by_check(result, "node_ready", "node01") == []
    assert "/api/v1/nodes/node02/proxy/configz" not in cluster.paths()
    # cpu_topology gets them from the role: their stale pools count in no figure
    assert result["not_ready_nodes"] == ["node02"]
    assert cluster.timeouts["/api/v1/nodes/node01/proxy/configz"] == 15
    assert result["checked_nodes"] == ["node01", "node02"]
    assert any(line.startswith("[WARNING] node_ready on node02: node node02 is not Ready") for line in result["summary"])


def test_a_node_without_a_ready_condition_is_not_ready():
    """A Node its kubelet never reported for has no Ready condition yet: not Ready either."""
    cluster = FakeCluster({"/api/v1/nodes": {"items": [node("node01", ready=None)]}})
    result, failed = run_module(preflight, {}, cluster)
    assert failed is False
    [warn] = by_check(result, "node_ready", "node01")
    assert warn["observed"] == "Ready=unknown (no Ready condition)"
    assert cluster.paths() == ["/version", "/metrics", "/apis", "/api/v1/nodes"]


def test_old_server_with_gate_on_and_off():
    old = {"/version": {"major": "1", "minor": "35", "gitVersion": "v1.35.2"}}
    result, failed = run_module(preflight, {}, FakeCluster(old))
    assert failed is False
    assert by_check(result, "server_version")[0]["severity"] == "warning"
    off = dict(old, **{"/metrics": 'kubernetes_feature_enabled{name="DRAConsumableCapacity",stage="ALPHA"} 0\n'})
    result, failed = run_module(preflight, {}, FakeCluster(off))
    assert failed is True
    assert [f["check"] for f in result["findings"] if f["severity"] == "error"] == ["server_version", "feature_gate"]


def test_individual_mode_on_135_without_the_gate_passes():
    off = {"/version": {"major": "1", "minor": "35", "gitVersion": "v1.35.4"},
           "/metrics": 'kubernetes_feature_enabled{name="DRAConsumableCapacity",stage="ALPHA"} 0\n'}
    result, failed = run_module(preflight, {"cpu_device_mode": "individual"}, FakeCluster(off))
    assert failed is False and result["error_count"] == 0 and result["warning_count"] == 0, result
    gate = by_check(result, "feature_gate")[0]
    assert gate["observed"] == "disabled (ALPHA)" and gate["severity"] == "ok"
    assert "[OK] feature_gate: DRAConsumableCapacity is not needed in individual mode (disabled (ALPHA))" in result["report"]
    result, failed = run_module(preflight, {"cpu_device_mode": "grouped"}, FakeCluster(off))
    assert failed is True


def test_unknown_mode_is_refused():
    result, failed = run_module(preflight, {"cpu_device_mode": "shared"}, FakeCluster())
    assert failed is True and "cpu_device_mode" in result["msg"]


def test_placement_and_runtime():
    cluster = FakeCluster({
        "/api/v1/nodes": {"items": [
            node("node01", taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]),
            node("node02", runtime="containerd://1.7.27"),
            node("node03", taints=[{"key": "dedicated", "effect": "NoExecute"}]),
            node("node04", cpus="2")]},
        "/api/v1/nodes/node02/proxy/configz": NONE,
        "/api/v1/nodes/node04/proxy/configz": NONE,
    })
    result, failed = run_module(preflight, {"reserved_cpus": "0-3"}, cluster)
    assert failed is True
    assert result["checked_nodes"] == ["node01", "node02", "node04"]
    assert result["excluded_nodes"] == [{"node": "node03", "reason": "taint dedicated:NoExecute not tolerated"}]
    errors = [(f["check"], f["node"]) for f in result["findings"] if f["severity"] == "error"]
    assert errors == [("container_runtime", "node02"), ("reserved_cpus", "node04")]


def test_no_eligible_node():
    cluster = FakeCluster({"/api/v1/nodes": {"items": [node("node01", labels={"a": "b"})]}})
    result, failed = run_module(preflight, {"node_selector": {"cpu": "dra"}}, cluster)
    assert failed is True
    assert by_check(result, "eligible_nodes")[0]["message"] == (
        "no node can run the driver DaemonSet (node01: nodeSelector cpu=dra does not match)")


def test_forbidden_nodes_list_is_a_finding():
    cluster = FakeCluster({"/api/v1/nodes": HTTPError(403, 'nodes is forbidden: User "u" cannot list resource')})
    result, failed = run_module(preflight, {}, cluster)
    assert failed is True
    assert by_check(result, "eligible_nodes")[0]["message"].startswith(
        "cannot list the nodes: permission denied: cannot list nodes (GET /api/v1/nodes)")


def test_forbidden_version_is_a_message_not_a_traceback():
    cluster = FakeCluster({"/version": HTTPError(403, "forbidden")})
    result, failed = run_module(preflight, {}, cluster)
    assert failed is True
    assert result["msg"] == ("preflight could not read the cluster: permission denied: cannot get non-resource URL "
                             "/version (GET /version): forbidden; grant nonResourceURLs [\"/version\"] verbs "
                             "[\"get\"] in a ClusterRole (docs/rbac.md)")
    assert "exception" not in result


def test_bad_reserved_cpus():
    result, failed = run_module(preflight, {"reserved_cpus": "0-"}, FakeCluster())
    assert failed is True
    assert result["msg"] == "reserved_cpus: '0-' is not a valid cpuset (range '0-' has no end)"
    assert result["report"] == ["Preflight could not run: " + result["msg"]]


def test_secrets_are_no_log():
    spec = preflight.argument_spec()
    assert spec["api_key"]["no_log"] is True
    assert spec["password"]["no_log"] is True
    # a dict kubeconfig's secret fields only are hidden, by the module class (test_auth.py)
    assert spec["kubeconfig"]["no_log"] is False
    assert preflight.RedactingModule.__name__ == "RedactingModule"


def _installed_args(**extra):
    args = {"reserved_cpus": "0-1", "namespace": "dra-driver-cpu", "release_name": "dra-driver-cpu",
            "chart_version": "0.3.0"}
    args.update(extra)
    return args


def test_installed_not_asked_for_reads_nothing_more():
    cluster = FakeCluster()
    result, failed = run_module(preflight, {"reserved_cpus": "0-1"}, cluster)
    assert "installed" not in result and not any("namespaces" in p for p in cluster.paths())


def test_installed_on_an_empty_cluster():
    cluster = FakeCluster()
    result, failed = run_module(preflight, _installed_args(), cluster)
    assert failed is False
    assert result["installed"] == {
        "readable": True, "release": {}, "other_releases": [],
        "namespace": {"name": "dra-driver-cpu", "exists": False, "terminating": False, "labels": {},
                      "labels_ok": False}}
    # no namespace, so no release lookup
    assert "/api/v1/namespaces/dra-driver-cpu/secrets" not in cluster.paths()


def test_deprecated_chart_option_is_still_accepted_and_ignored():
    result, failed = run_module(preflight, _installed_args(chart="oci://localhost:5000/charts/dra-driver-cpu"),
                                FakeCluster())
    assert failed is False and sorted(result["installed"]) == ["namespace", "other_releases", "readable", "release"]
    assert preflight.argument_spec()["chart"]["removed_in_version"] == "1.0.0"


def test_installed_release_deployed_at_the_pinned_version():
    labels = {"pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/warn": "privileged",
              "pod-security.kubernetes.io/audit": "privileged"}
    cluster = FakeCluster({
        "/api/v1/namespaces/dra-driver-cpu": {"metadata": {"name": "dra-driver-cpu", "labels": labels}},
        "/api/v1/namespaces/dra-driver-cpu/secrets": {"items": [
            helm_secret("dra-driver-cpu", 1, "superseded", version="0.2.0"),
            helm_secret("dra-driver-cpu", 2, "deployed"),
            helm_secret("other", 1, "deployed")]},
    })
    result, failed = run_module(preflight, _installed_args(namespace_labels=labels), cluster)
    inst = result["installed"]
    assert inst["namespace"]["labels_ok"] is True
    assert inst["release"] == {"name": "dra-driver-cpu", "revision": 2, "status": "deployed",
                               "chart": "dra-driver-cpu", "chart_version": "0.3.0",
                               "values_sha256": installed.values_digest({"token": "s3cret"})}
    # one list of every helm release in the namespace: this one's newest revision and the others
    assert inst["other_releases"] == ["other"]
    assert "s3cret" not in json.dumps(inst)
    assert ("/api/v1/namespaces/dra-driver-cpu/secrets", {"labelSelector": "owner=helm"}) in cluster.calls


def test_installed_unreadable_secrets_leave_it_to_the_caller():
    cluster = FakeCluster({
        "/api/v1/namespaces/dra-driver-cpu": {"metadata": {"name": "dra-driver-cpu"}},
        "/api/v1/namespaces/dra-driver-cpu/secrets": HTTPError(403, "secrets is forbidden"),
    })
    result, failed = run_module(preflight, _installed_args(), cluster)
    assert failed is False
    assert result["installed"]["readable"] is False
    assert result["installed"]["error"].startswith(
        "permission denied: cannot list secrets in namespace dra-driver-cpu")


def test_report_dir_gets_the_findings_passed_or_not_but_not_in_check_mode(tmp_path):
    import json
    report = tmp_path / "artifacts"
    result, failed = run_module(preflight, {"reserved_cpus": "0-1", "report_dir": str(report)}, FakeCluster())
    assert failed is False
    written = json.loads((report / "dra-cpu-preflight.json").read_text())
    assert sorted(written) == ["cluster", "findings", "passed", "report"]
    assert written["passed"] is True and written["findings"] == result["findings"]
    assert written["report"] == result["report"] and written["cluster"]["context"] is None
    result, failed = run_module(preflight, {"reserved_cpus": "0-1", "report_dir": str(report)}, two_nodes())
    assert failed is True
    written = json.loads((report / "dra-cpu-preflight.json").read_text())
    assert written["passed"] is False and written["findings"] == result["findings"]
    assert [f["observed"] for f in written["findings"] if f["check"] == "cpu_manager_policy" and f["node"] == "node02"] == ["static"]
    checked = tmp_path / "check"
    run_module(preflight, {"reserved_cpus": "0-1", "report_dir": str(checked), "_ansible_check_mode": True}, FakeCluster())
    assert not checked.exists()
