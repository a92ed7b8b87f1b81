# SPDX-License-Identifier: Apache-2.0
"""module_utils/preflight/list_attributes.py and its place in gather.py: with dra_cpu_expose_pcie_roots,
the DRAListTypeAttributes gate of the API server (its kubernetes_feature_enabled metric, the read that
serves DRAConsumableCapacity), one list_attributes_gate finding, an error unless it is on, before any
change; without the setting the gate is not asked for (the negative control)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import list_attributes as la
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.run import run_preflight
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.preflight_checks import CHECKS

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import METRICS, FakeCluster
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.preflight.test_preflight_run import (
    factory, params)

GATE_ON = METRICS + 'kubernetes_feature_enabled{name="DRAListTypeAttributes",stage="ALPHA"} 1\n'
GATE_OFF = METRICS + 'kubernetes_feature_enabled{name="DRAListTypeAttributes",stage="ALPHA"} 0\n'


def test_the_check_can_be_ignored_by_name():
    assert la.CHECK == "list_attributes_gate" and la.CHECK in CHECKS


def test_api_server_gate_on_is_ok():
    (f,) = la.check_api_server(GATE_ON)
    assert (f["check"], f["severity"], f["node"], f["observed"]) == ("list_attributes_gate", "ok", None, "enabled (ALPHA)")


@pytest.mark.parametrize("metrics, error, observed, words", [
    (GATE_OFF, None, "disabled (ALPHA)", "DRAListTypeAttributes is disabled on the API server (ALPHA)"),
    (METRICS, None, "absent", "does not know the feature gate DRAListTypeAttributes (it is older than Kubernetes 1.36)"),
    (None, "403 forbidden", "unknown", "could not be read to confirm DRAListTypeAttributes: 403 forbidden"),
])
def test_without_the_gate_it_is_an_error_saying_what_breaks_and_the_fix(metrics, error, observed, words):
    (f,) = la.check_api_server(metrics, error)
    assert f["severity"] == "error" and f["node"] is None and f["observed"] == observed
    assert f["message"].startswith("dra_cpu_expose_pcie_roots: true, but ") and words in f["message"]
    assert "drops the list value of resource.kubernetes.io/pcieRoot" in f["message"]
    assert "refuses the driver's ResourceSlices" in f["message"] and "CPU devices are not published" in f["message"]
    assert "no claim can match" in f["message"]
    assert "dra_cpu_expose_pcie_roots: false" in f["fix"]


def test_the_fix_for_a_disabled_gate_names_the_flag():
    (f,) = la.check_api_server(GATE_OFF)
    assert "--feature-gates=DRAListTypeAttributes=true" in f["fix"] and "kube-apiserver" in f["fix"]


def _findings(got):
    return [(f["node"], f["severity"], f["observed"]) for f in got["findings"] if f["check"] == "list_attributes_gate"]


@pytest.mark.parametrize("metrics", [GATE_OFF, METRICS])
def test_preflight_without_the_setting_asks_for_no_gate(metrics):
    # the negative control: the same cluster passes when PCIe roots are not asked for
    got = run_preflight(params(reserved_cpus="0-1"), False, None, factory(FakeCluster({"/metrics": metrics})))
    assert got["passed"] is True and _findings(got) == []


def test_preflight_with_the_gate_on_passes():
    got = run_preflight(params(reserved_cpus="0-1", expose_pcie_roots=True), False, None,
                        factory(FakeCluster({"/metrics": GATE_ON})))
    assert got["passed"] is True and _findings(got) == [(None, "ok", "enabled (ALPHA)")]


def test_preflight_with_the_gate_off_fails_naming_the_check_and_what_breaks():
    got = run_preflight(params(reserved_cpus="0-1", expose_pcie_roots=True), False, None,
                        factory(FakeCluster({"/metrics": GATE_OFF})))
    assert got["failed"] is True and got["passed"] is False
    assert _findings(got) == [(None, "error", "disabled (ALPHA)")]
    assert ("cluster [list_attributes_gate]: dra_cpu_expose_pcie_roots: true, but DRAListTypeAttributes is disabled "
            "on the API server (ALPHA)") in got["msg"]
    assert "--feature-gates=DRAListTypeAttributes=true" in got["msg"]


def test_preflight_ignore_downgrades_it():
    got = run_preflight(params(reserved_cpus="0-1", expose_pcie_roots=True, ignore=["list_attributes_gate"]),
                        False, None, factory(FakeCluster({"/metrics": GATE_OFF})))
    assert got["passed"] is True and [f[1] for f in _findings(got)] == ["warning"]


@pytest.mark.parametrize("version,warned", [("v1.36.3", True), ("v1.36.0-rc.1", True), ("v1.37.0", False),
                                            ("v1.37.2", False), ({"gitVersion": "v1.38.1"}, False)])
def test_1_36s_scheduler_is_warned_about_aligned_claims(version, warned):
    """kube-scheduler v1.36.3's AllocatorFeatures passes no ListTypeAttributes (v1.37.2's does): a warning,
    not an error, on 1.36 only; an unreadable version is server_version's to report."""
    got = la.check_scheduler(version)
    assert bool(got) is warned
    if warned:
        assert got[0]["severity"] == "warning" and got[0]["check"] == "list_attributes_scheduler"
        assert "VEP 300" in got[0]["message"] and got[0]["fix"] == "use Kubernetes 1.37.0 or newer for PCIe-aligned claims"
    assert la.check_scheduler("not a version") == []
