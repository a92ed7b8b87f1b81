# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.preflight_checks import CHECKS
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import nodes as n
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import rules as r

METRICS = """# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DRAConsumableCapacity",stage="BETA"} 1
kubernetes_feature_enabled{name="DRAListTypeAttributes",stage="ALPHA"} 0
kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0
apiserver_request_total{code="200"} 42
"""


def only(findings):
    assert len(findings) == 1
    return findings[0]


def test_finding_shape():
    f = r.finding("server_version", r.OK, "msg")
    assert sorted(f) == ["check", "fix", "message", "node", "observed", "required", "severity"]


# ------------------------------------------------------------------ feature gate


def test_parse_feature_gates():
    gates = r.parse_feature_gates(METRICS)
    assert gates == {
        "DRAConsumableCapacity": {"enabled": True, "stage": "BETA"},
        "DRAListTypeAttributes": {"enabled": False, "stage": "ALPHA"},
        "AllAlpha": {"enabled": False, "stage": "ALPHA"},
    }
    assert r.gate_enabled(METRICS) is True
    assert r.gate_enabled(METRICS, "Nope") is None
    assert r.parse_feature_gates(b'kubernetes_feature_enabled{stage="",name="X"} 1 1700000000\n') == {
        "X": {"enabled": True, "stage": ""}}


def test_feature_gate_on():
    f = only(r.check_feature_gate(METRICS))
    assert f["severity"] == "ok"
    assert f["observed"] == "enabled (BETA)"


def test_feature_gate_off():
    text = METRICS.replace('"DRAConsumableCapacity",stage="BETA"} 1', '"DRAConsumableCapacity",stage="ALPHA"} 0')
    f = only(r.check_feature_gate(text))
    assert f["severity"] == "error"
    assert f["observed"] == "disabled (ALPHA)"
    assert "--feature-gates=DRAConsumableCapacity=true" in f["fix"]


def test_feature_gate_unreadable_is_a_warning():
    f = only(r.check_feature_gate(None, error="permission denied: cannot get non-resource URL /metrics"))
    assert f["severity"] == "warning"
    assert f["observed"] == "unknown"
    assert "permission denied" in f["message"]
    f = only(r.check_feature_gate("up 1\n"))
    assert f["severity"] == "warning"


def test_feature_gate_unknown_to_server():
    f = only(r.check_feature_gate(METRICS, gate="SomethingNew"))
    assert f["severity"] == "error"
    assert f["observed"] == "absent"


# ------------------------------------------------------------------ server version / API


@pytest.mark.parametrize("version,gate_on,severity", [
    ("v1.36.3", None, "ok"),
    ("v1.36.0-alpha.1+abc", None, "ok"),
    ({"major": "1", "minor": "37", "gitVersion": "v1.37.2"}, None, "ok"),
    ("v1.35.4", None, "error"),
    ("v1.35.4", False, "error"),
    ("v1.35.4", True, "warning"),
    ("garbage", None, "error"),
])
def test_server_version(version, gate_on, severity):
    f = only(r.check_server_version(version, "1.36", gate_on=gate_on))
    assert f["severity"] == severity
    assert f["required"] == ">= 1.36"


def test_server_version_message():
    f = only(r.check_server_version("v1.35.4"))
    assert f["message"] == "Kubernetes v1.35.4 predates 1.36, where DRAConsumableCapacity became beta and on by default"
    assert f["observed"] == "v1.35.4"


APIS = {"kind": "APIGroupList", "groups": [
    {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}]},
    {"name": "resource.k8s.io", "versions": [
        {"groupVersion": "resource.k8s.io/v1", "version": "v1"},
        {"groupVersion": "resource.k8s.io/v1beta2", "version": "v1beta2"}]},
]}


def test_resource_api():
    f = only(r.check_resource_api(APIS))
    assert f["severity"] == "ok"
    assert f["observed"] == "resource.k8s.io/v1, resource.k8s.io/v1beta2"
    old = {"groups": [{"name": "resource.k8s.io", "versions": [{"version": "v1beta1"}]}]}
    f = only(r.check_resource_api(old))
    assert f["severity"] == "error"
    assert f["observed"] == "resource.k8s.io/v1beta1"
    f = only(r.check_resource_api({"groups": []}))
    assert f["observed"] == "none"
    assert only(r.check_resource_api(["resource.k8s.io/v1"]))["severity"] == "ok"


# ------------------------------------------------------------------ container runtime


@pytest.mark.parametrize("runtime,severity", [
    ("cri-o://1.36.1", "ok"),
    ("cri-o://1.30.0", "ok"),
    ("cri-o://1.29.9", "error"),
    ("containerd://2.0.3", "ok"),
    ("containerd://2.0.0-rc.1", "ok"),
    ("containerd://1.7.27", "error"),
    ("docker://24.0.7", "error"),
    ("containerd://weird", "error"),
    ("", "error"),
])
def test_container_runtime(runtime, severity):
    f = only(n.check_container_runtime("node02", runtime))
    assert f["severity"] == severity
    assert f["node"] == "node02"


def test_container_runtime_message_names_node():
    f = only(n.check_container_runtime("node02", "containerd://1.7.27"))
    assert f["message"] == "node node02 runs containerd://1.7.27, older than containerd 2.0"
    f = only(n.check_container_runtime("node03", "docker://24.0.7"))
    assert f["message"] == "node node03 runs container runtime docker://24.0.7, which the driver does not support"


# ------------------------------------------------------------------ cpu manager


def test_parse_configz():
    assert n.parse_configz({"kubeletconfig": {"cpuManagerPolicy": "static"}}) == "static"
    assert n.parse_configz(json.dumps({"kubeletconfig": {"staticPodPath": "/x"}})) == "none"
    assert n.parse_configz(b'{"kubeletconfig": {"cpuManagerPolicy": "none"}}') == "none"
    with pytest.raises(ValueError):
        n.parse_configz({"other": {}})
    with pytest.raises(ValueError):
        n.parse_configz("not json")


def test_cpu_manager_policy():
    f = only(n.check_cpu_manager_policy("node01", {"kubeletconfig": {}}))
    assert (f["severity"], f["observed"]) == ("ok", "none")
    f = only(n.check_cpu_manager_policy("node02", {"kubeletconfig": {"cpuManagerPolicy": "static"}}))
    assert (f["severity"], f["observed"], f["node"]) == ("error", "static", "node02")
    assert "dra_cpu_skip_incompatible_nodes" in f["fix"]
    f = only(n.check_cpu_manager_policy("node03", None, error="permission denied: cannot get nodes/proxy"))
    assert (f["severity"], f["observed"]) == ("warning", "unknown")
    assert "permission denied: cannot get nodes/proxy" in f["message"]
    f = only(n.check_cpu_manager_policy("node04", "<html>"))
    assert f["severity"] == "warning"


# ------------------------------------------------------------------ reserved cpus


def node(name, cpu="12", labels=None, taints=None):
    obj = {"metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}},
           "spec": {}, "status": {"capacity": {"cpu": cpu}}}
    if taints:
        obj["spec"]["taints"] = taints
    return obj


def test_node_cpu_count():
    assert n.node_cpu_count(node("a", "12")) == 12
    assert n.node_cpu_count(node("a", "4000m")) == 4
    assert n.node_cpu_count({"status": {}}) is None


def test_reserved_cpus():
    assert only(n.check_reserved_cpus("n", [0, 1], 12))["severity"] == "ok"
    assert only(n.check_reserved_cpus("n", [], 12))["severity"] == "ok"
    f = only(n.check_reserved_cpus("n", [0, 1, 12, 13], 12))
    assert f["severity"] == "error"
    assert f["message"] == "node n has 12 CPUs (0-11); reserved CPUs 12-13 do not exist"
    f = only(n.check_reserved_cpus("n", [0, 1], 2))
    assert f["severity"] == "error"
    assert "all 2 CPUs are reserved" in f["message"]
    assert only(n.check_reserved_cpus("n", [0], None))["severity"] == "warning"


# ------------------------------------------------------------------ placement


def test_eligible_nodes_default_tolerations():
    nodes = [
        node("node01", taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]),
        node("node02", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoExecute"}]),
        node("node03", taints=[{"key": "soft", "effect": "PreferNoSchedule"}]),
        node("node04", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
    ]
    eligible, excluded = n.eligible_nodes(nodes)
    assert eligible == ["node01", "node03", "node04"]
    assert excluded == [{"node": "node02", "reason": "taint dedicated=gpu:NoExecute not tolerated"}]


def test_eligible_nodes_selector_and_custom_tolerations():
    nodes = [node("a", labels={"cpu": "dra"}), node("b"),
             node("c", labels={"cpu": "dra"}, taints=[{"key": "x", "value": "1", "effect": "NoSchedule"}])]
    eligible, excluded = n.eligible_nodes(nodes, {"cpu": "dra"}, tolerations=[])
    assert eligible == ["a"]
    assert excluded == [{"node": "b", "reason": "nodeSelector cpu=dra does not match"},
                        {"node": "c", "reason": "taint x=1:NoSchedule not tolerated"}]
    tolerations = [{"key": "x", "operator": "Equal", "value": "1"}]
    eligible, _excluded = n.eligible_nodes(nodes, {"cpu": "dra"}, tolerations=tolerations)
    assert eligible == ["a", "c"]
    tolerations = [{"key": "x", "operator": "Equal", "value": "2"}]
    eligible, _excluded = n.eligible_nodes(nodes, {"cpu": "dra"}, tolerations=tolerations)
    assert eligible == ["a"]


def test_check_eligible_nodes():
    f = only(n.check_eligible_nodes([], [{"node": "a", "reason": "taint t:NoExecute not tolerated"}]))
    assert f["severity"] == "error"
    assert f["message"] == "no node can run the driver DaemonSet (a: taint t:NoExecute not tolerated)"
    assert only(n.check_eligible_nodes(["a"], []))["severity"] == "ok"


# ------------------------------------------------------------------ ignore / skip / summary


def _static(node_name):
    return only(n.check_cpu_manager_policy(node_name, {"kubeletconfig": {"cpuManagerPolicy": "static"}}))


def test_apply_ignore():
    findings = [_static("node02"), only(r.check_server_version("v1.35.0"))]
    out = r.apply_ignore(findings, ["cpu_manager_policy"])
    assert [f["severity"] for f in out] == ["warning", "error"]
    assert out[0]["message"].endswith("(ignored: cpu_manager_policy is in the preflight ignore list)")
    assert findings[0]["severity"] == "error"  # input untouched


def test_node_affinity():
    assert n.node_affinity([]) == {}
    assert n.node_affinity(["node03", "node02", "node02"]) == {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["node02", "node03"]}]}]}}}


def test_plan_skip():
    findings = [_static("node02"), _static("node03"),
                only(n.check_container_runtime("node03", "containerd://1.7.27")),
                only(r.check_server_version("v1.36.3"))]
    out, skipped, affinity = n.plan_skip(findings, True, True, ["node01", "node02", "node03"],
                                         hostnames={"node03": "host-3"})
    assert skipped == [{"node": "node02", "reasons": ["cpu_manager_policy"]},
                       {"node": "node03", "reasons": ["cpu_manager_policy", "container_runtime"]}]
    assert [f["severity"] for f in out] == ["warning", "warning", "warning", "ok"]
    assert affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"][0]["values"] == ["host-3", "node02"]
    assert r.summarize(out)["passed"] is True


def test_plan_skip_disabled_or_unsupported():
    findings = [_static("node02")]
    assert n.plan_skip(findings, False, True, ["node02"]) == (findings, [], {})
    out, skipped, affinity = n.plan_skip(findings, True, False, ["node01", "node02"])
    assert skipped == [] and affinity == {}
    assert out[-1]["severity"] == "error"
    assert out[-1]["message"] == ("cannot keep the driver off node02: this chart version has no affinity value "
                                  "(node affinity needs chart >= 0.3.0)")


def test_plan_skip_nothing_left():
    out, skipped, _affinity = n.plan_skip([_static("node02")], True, True, ["node02"])
    assert [s["node"] for s in skipped] == ["node02"]
    assert out[-1]["check"] == "eligible_nodes"
    assert out[-1]["severity"] == "error"


def test_summarize():
    findings = [_static("node02"), only(r.check_feature_gate(None)), only(r.check_server_version("v1.36.3"))]
    s = r.summarize(findings)
    assert (s["errors"], s["warnings"], s["passed"]) == (1, 1, False)
    assert s["message"].startswith("preflight failed with 1 error(s): node node02 [cpu_manager_policy]: ")
    assert "(observed static); fix: run the kubelet" in s["message"]
    assert r.summarize([])["message"] == ""


# ------------------------------------------------------------------ requirements per device mode
# upstream's compatibility table (docs/user/installation.md): Kubernetes 1.34 for every mode;
# grouped mode needs DRAConsumableCapacity (alpha in 1.34/1.35, on by default from 1.36)

GATE_OFF_135 = METRICS.replace('"DRAConsumableCapacity",stage="BETA"} 1', '"DRAConsumableCapacity",stage="ALPHA"} 0')


@pytest.mark.parametrize("mode,version,gate_on,severity,required", [
    ("grouped", "v1.36.3", None, "ok", ">= 1.36"),
    ("grouped", "v1.35.4", False, "error", ">= 1.36"),
    ("grouped", "v1.35.4", True, "warning", ">= 1.36"),
    ("grouped", "v1.34.0", True, "warning", ">= 1.36"),
    ("grouped", "v1.33.5", True, "error", ">= 1.34"),
    ("individual", "v1.36.3", None, "ok", ">= 1.34"),
    ("individual", "v1.35.4", False, "ok", ">= 1.34"),
    ("individual", "v1.34.1", None, "ok", ">= 1.34"),
    ("individual", "v1.33.5", None, "error", ">= 1.34"),
])
def test_server_version_per_mode(mode, version, gate_on, severity, required):
    f = only(r.check_server_version(version, gate_on=gate_on, mode=mode))
    assert (f["severity"], f["required"]) == (severity, required), f


def test_server_version_below_134_names_the_dra_api():
    f = only(r.check_server_version("v1.33.5", mode="individual"))
    assert f["message"] == ("Kubernetes v1.33.5 predates 1.34, where resource.k8s.io/v1 (DRA) became GA; "
                            "the driver needs it in every mode")


def test_grouped_on_135_without_the_gate_points_at_individual_mode():
    f = only(r.check_server_version("v1.35.4", gate_on=False))
    assert f["message"] == "Kubernetes v1.35.4 predates 1.36, where DRAConsumableCapacity became beta and on by default"
    assert "dra_cpu_cpu_device_mode: individual" in f["fix"]
    g = only(r.check_feature_gate(GATE_OFF_135))
    assert g["severity"] == "error" and "dra_cpu_cpu_device_mode: individual" in g["fix"]


@pytest.mark.parametrize("metrics,observed", [
    (GATE_OFF_135, "disabled (ALPHA)"),
    (METRICS, "enabled (BETA)"),
    (None, "not checked"),
    ("up 1\n", "not checked"),
])
def test_individual_mode_does_not_need_the_gate(metrics, observed):
    f = only(r.check_feature_gate(metrics, error="denied" if metrics is None else None, mode="individual"))
    assert f["severity"] == "ok"
    assert f["observed"] == observed
    assert f["required"] == "not needed (individual mode)"
    assert f["message"] == "DRAConsumableCapacity is not needed in individual mode (%s)" % observed


# ------------------------------------------------------------------ node readiness


def test_a_kubelet_that_reports_itself_not_ready_is_named_with_its_reason():
    obj = node("n1")
    obj["status"]["conditions"] = [{"type": "MemoryPressure", "status": "False"},
                                   {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                                    "message": "container runtime network not ready"}]
    assert n.is_ready(obj) is False
    [f] = n.check_node_ready("n1", obj)
    assert (f["check"], f["severity"], f["node"]) == ("node_ready", r.WARNING, "n1")
    assert f["message"].startswith("node n1 is not Ready (Ready=False: KubeletNotReady, container runtime "
                                   "network not ready): the driver cannot start")
    obj["status"]["conditions"][1].update(status="True")
    assert n.is_ready(obj) is True
    # warning only: not a check `ignore` takes, nor one of the per-node errors skip_incompatible_nodes acts on
    assert "node_ready" not in CHECKS and "node_ready" not in r.NODE_CHECKS
