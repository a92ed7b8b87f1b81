# SPDX-License-Identifier: Apache-2.0
"""module_utils/preflight/node_allocatable.py and its place in gather.py: with
dra_cpu_node_allocatable_mapping, the DRANodeAllocatableResources gate of the API server (metric) and of
every driver node's kubelet (/configz), one node_allocatable_gate finding each, before any change."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import node_allocatable as na
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.run import run_preflight
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.preflight_checks import CHECKS

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import (
    METRICS, FakeCluster, HTTPError, node)
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.preflight.test_preflight_run import (
    factory, params)

GATE_ON = METRICS + 'kubernetes_feature_enabled{name="DRANodeAllocatableResources",stage="ALPHA"} 1\n'
GATE_OFF = METRICS + 'kubernetes_feature_enabled{name="DRANodeAllocatableResources",stage="ALPHA"} 0\n'
KUBELET_ON = {"kubeletconfig": {"cpuManagerPolicy": "none", "featureGates": {"DRANodeAllocatableResources": True}}}
KUBELET_OFF = {"kubeletconfig": {"cpuManagerPolicy": "none", "featureGates": {"DRANodeAllocatableResources": False}}}
KUBELET_UNSET = {"kubeletconfig": {"cpuManagerPolicy": "none", "featureGates": {"DRAConsumableCapacity": True}}}


def test_the_check_can_be_ignored_by_name():
    assert na.CHECK == "node_allocatable_gate" and na.CHECK in CHECKS


def test_api_server_gate_on_is_ok():
    (f,) = na.check_api_server(GATE_ON)
    assert (f["check"], f["severity"], f["node"], f["observed"]) == ("node_allocatable_gate", "ok", None, "enabled (ALPHA)")


@pytest.mark.parametrize("metrics, error, observed, words", [
    (GATE_OFF, None, "disabled (ALPHA)", "DRANodeAllocatableResources is disabled on the API server (ALPHA)"),
    (METRICS, None, "absent", "does not know the feature gate DRANodeAllocatableResources"),
    (None, "403 forbidden", "unknown", "could not be read to confirm DRANodeAllocatableResources: 403 forbidden"),
])
def test_api_server_without_the_gate_is_an_error_naming_the_variable(metrics, error, observed, words):
    (f,) = na.check_api_server(metrics, error)
    assert f["severity"] == "error" and f["node"] is None and f["observed"] == observed
    assert f["message"].startswith("dra_cpu_node_allocatable_mapping: true, but ") and words in f["message"]
    assert "dra_cpu_node_allocatable_mapping: false" in f["fix"]


def test_kubelet_gate_on_is_ok():
    (f,) = na.check_kubelet("node01", KUBELET_ON, api_stage="ALPHA")
    assert (f["severity"], f["node"], f["observed"]) == ("ok", "node01", "enabled")


@pytest.mark.parametrize("configz, stage, observed", [
    (KUBELET_OFF, "ALPHA", "disabled"),
    (KUBELET_UNSET, "ALPHA", "not set (off by default)"),
    (KUBELET_UNSET, None, "not set (off by default)"),
    ({"kubeletconfig": {}}, "ALPHA", "not set (off by default)"),
])
def test_kubelet_without_the_gate_is_an_error_naming_node_check_and_fix(configz, stage, observed):
    (f,) = na.check_kubelet("node02", configz, api_stage=stage)
    assert (f["severity"], f["node"], f["check"], f["observed"]) == ("error", "node02", "node_allocatable_gate", observed)
    assert f["message"].startswith("node node02: dra_cpu_node_allocatable_mapping: true, but the kubelet's featureGates")
    assert "the kubelet of node node02 with --feature-gates=DRANodeAllocatableResources=true" in f["fix"]


def test_kubelet_default_counts_only_where_the_gate_is_on_by_default():
    assert na.check_kubelet("n", KUBELET_UNSET, api_stage="BETA")[0]["severity"] == "ok"
    assert na.check_kubelet("n", KUBELET_UNSET, api_stage="")[0]["observed"] == "default (GA)"
    # set off explicitly: off whatever the stage
    assert na.check_kubelet("n", KUBELET_OFF, api_stage="BETA")[0]["severity"] == "error"


@pytest.mark.parametrize("configz, error", [(None, "503 the node proxy"), ("not json", None), ({"other": {}}, None),
                                            ({"kubeletconfig": {"featureGates": ["x"]}}, None)])
def test_an_unreadable_configz_is_an_error(configz, error):
    (f,) = na.check_kubelet("node01", configz, error)
    assert f["severity"] == "error" and f["observed"] == "unknown" and "could not be read" in f["message"]


def test_api_stage():
    assert na.api_stage(GATE_ON) == "ALPHA" and na.api_stage(METRICS) is None and na.api_stage(None) is None


def _findings(got):
    return [(f["node"], f["severity"], f["observed"]) for f in got["findings"] if f["check"] == "node_allocatable_gate"]


def test_preflight_without_the_mapping_reads_no_gate():
    got = run_preflight(params(reserved_cpus="0-1"), False, None, factory(FakeCluster()))
    assert got["passed"] is True and _findings(got) == []


def test_preflight_with_the_gate_everywhere_passes():
    cluster = FakeCluster({"/metrics": GATE_ON,
                           "/api/v1/nodes": {"items": [node("node01"), node("node02")]},
                           "/api/v1/nodes/node01/proxy/configz": KUBELET_ON,
                           "/api/v1/nodes/node02/proxy/configz": KUBELET_ON})
    got = run_preflight(params(reserved_cpus="0-1", node_allocatable_mapping=True), False, None, factory(cluster))
    assert got["passed"] is True
    assert _findings(got) == [(None, "ok", "enabled (ALPHA)"), ("node01", "ok", "enabled"), ("node02", "ok", "enabled")]
    # one /configz per node, as without the mapping
    assert cluster.paths().count("/api/v1/nodes/node02/proxy/configz") == 1


def test_preflight_names_each_place_the_gate_is_missing():
    cluster = FakeCluster({"/metrics": GATE_OFF,
                           "/api/v1/nodes": {"items": [node("node01"), node("node02"), node("node03", ready="False")]},
                           "/api/v1/nodes/node01/proxy/configz": KUBELET_ON,
                           "/api/v1/nodes/node02/proxy/configz": KUBELET_UNSET})
    got = run_preflight(params(reserved_cpus="0-1", node_allocatable_mapping=True), False, None, factory(cluster))
    assert got["failed"] is True and got["passed"] is False
    assert _findings(got) == [(None, "error", "disabled (ALPHA)"), ("node01", "ok", "enabled"),
                              ("node02", "error", "not set (off by default)"), ("node03", "warning", "unknown")]
    assert "cluster [node_allocatable_gate]: dra_cpu_node_allocatable_mapping: true, but DRANodeAllocatableResources " \
           "is disabled on the API server" in got["msg"]
    assert "node node02 [node_allocatable_gate]: node node02: " in got["msg"]


def test_preflight_ignore_downgrades_it():
    cluster = FakeCluster({"/metrics": GATE_OFF, "/api/v1/nodes/node01/proxy/configz": KUBELET_OFF})
    got = run_preflight(params(reserved_cpus="0-1", node_allocatable_mapping=True, ignore=["node_allocatable_gate"]),
                        False, None, factory(cluster))
    assert got["passed"] is True and [f[1] for f in _findings(got)] == ["warning", "warning"]


def test_preflight_with_unreadable_metrics_refuses_the_mapping():
    cluster = FakeCluster({"/metrics": HTTPError(403, "forbidden"), "/api/v1/nodes/node01/proxy/configz": KUBELET_ON})
    got = run_preflight(params(reserved_cpus="0-1", node_allocatable_mapping=True, cpu_device_mode="individual"),
                        False, None, factory(cluster))
    assert got["passed"] is False and _findings(got)[0][:2] == (None, "error")


def test_preflight_without_configz_warns_per_node():
    got = run_preflight(params(reserved_cpus="0-1", node_allocatable_mapping=True, check_configz=False),
                        False, None, factory(FakeCluster({"/metrics": GATE_ON})))
    assert _findings(got) == [(None, "ok", "enabled (ALPHA)"), ("node01", "warning", "not checked")]


@pytest.mark.parametrize("version, severity", [("v1.36.3", "error"), ("v1.37.2", "ok"), ("v1.38.0-alpha.1", "ok"),
                                               (None, "ok"), ("garbage", "ok")])
def test_a_kubelet_older_than_137_is_refused_whatever_its_gates(version, severity):
    """The gate is alpha from 1.36 (kube_features.go of 1.36.3 and 1.37.2), but only the 1.37 kubelet
    reads it (pkg/kubelet of 1.36.3 has no reference to it)."""
    (f,) = na.check_kubelet("node01", KUBELET_ON, api_stage="ALPHA", kubelet_version=version)
    assert f["severity"] == severity, f
    if severity == "error":
        assert f["observed"] == "kubelet v1.36.3" and "predates 1.37" in f["message"]


def test_preflight_reads_the_kubelet_version_from_the_node():
    old = node("node01")
    old["status"]["nodeInfo"]["kubeletVersion"] = "v1.36.3"
    cluster = FakeCluster({"/metrics": GATE_ON, "/api/v1/nodes": {"items": [old]},
                           "/api/v1/nodes/node01/proxy/configz": KUBELET_ON})
    got = run_preflight(params(reserved_cpus="0-1", node_allocatable_mapping=True), False, None, factory(cluster))
    assert got["passed"] is False and _findings(got) == [(None, "ok", "enabled (ALPHA)"),
                                                         ("node01", "error", "kubelet v1.36.3")]
