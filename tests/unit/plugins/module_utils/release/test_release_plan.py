# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import installed
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.release import plan as rp

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.preflight.test_preflight_installed import (
    PSA, helm_secret)

OWNER = {"app.kubernetes.io/managed-by": "kubevirtci.dra_cpu"}
VALUES = {"driverConfig": {"reservedCPUs": "0-1", "groupBy": "numanode"}, "tolerations": [{"operator": "Exists"}]}


def ns(exists=True, terminating=False, labels=None):
    return installed.namespace_state("dra", {"metadata": {"labels": dict(PSA if labels is None else labels)}}
                                     if exists else None, PSA) if not terminating else \
        installed.namespace_state("dra", {"metadata": {"labels": PSA, "deletionTimestamp": "x"}}, PSA)


def rel(status="deployed", version="0.3.0", values=None, revision=1):
    return {"name": "dra", "revision": revision, "status": status, "chart": "dra-driver-cpu",
            "chart_version": version, "values_sha256": installed.values_digest(VALUES if values is None else values)}


def wanted(**kw):
    base = {"name": "dra", "namespace": "dra", "chart_version": "0.3.0", "values": VALUES,
            "psa_labels": PSA, "owner_label": OWNER}
    base.update(kw)
    return base


def test_digest_is_sha256_of_canonical_json_and_order_free():
    expected = hashlib.sha256(json.dumps(VALUES, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert installed.values_digest(VALUES) == expected
    reordered = {"tolerations": [{"operator": "Exists"}], "driverConfig": {"groupBy": "numanode", "reservedCPUs": "0-1"}}
    assert installed.values_digest(reordered) == expected
    assert installed.values_digest(None) == installed.values_digest({})
    assert installed.values_digest({"a": [1, 2]}) != installed.values_digest({"a": [2, 1]})


def test_release_state_carries_the_digest_of_config_not_the_values():
    state = installed.release_state("r", [helm_secret("r", 1, "deployed")])
    assert state["values_sha256"] == installed.values_digest({"token": "s3cret"})
    assert "s3cret" not in json.dumps(state)


def test_noop_skips_helm_and_the_namespace():
    p = rp.plan(ns(), rel(), wanted())
    assert p["helm"] == rp.SKIP and p["namespace"] == {"wait": False, "labels": {}, "creates": False}
    assert not p["fail"] and not p["recover"] and not p["pending"]
    assert p["release"] == {"status": "deployed", "revision": 1, "chart_version": "0.3.0"}


def test_same_values_in_another_key_order_still_skip():
    p = rp.plan(ns(), rel(), wanted(values=json.loads(json.dumps(VALUES)), chart_version="0.3.0"))
    assert p["helm"] == rp.SKIP
    assert rp.plan(ns(), rel(), wanted(values=None, values_sha256=installed.values_digest(VALUES)))["helm"] == rp.SKIP


@pytest.mark.parametrize("release, want, reason", [
    (rel(version="0.2.0"), wanted(), "chart 0.2.0 -> 0.3.0"),
    (rel(values={"x": 1}), wanted(), "values differ"),
    (rel(status="failed"), wanted(), "status failed"),
    (dict(rel(), values_sha256=""), wanted(), "values not known"),
    (rel(), wanted(chart_version=""), "chart version not known"),
    (rel(), wanted(chart="other-chart"), "chart dra-driver-cpu -> other-chart"),
])
def test_differences_upgrade(release, want, reason):
    p = rp.plan(ns(), release, want)
    assert p["helm"] == rp.UPGRADE and reason in p["reason"], p


def test_no_release_installs_and_a_new_namespace_gets_the_owner_label():
    p = rp.plan(ns(exists=False), {}, wanted())
    assert p["helm"] == rp.INSTALL
    assert p["namespace"] == {"wait": False, "labels": dict(PSA, **OWNER), "creates": True}
    assert rp.plan(ns(), {}, wanted())["helm"] == rp.INSTALL


def test_existing_namespace_missing_a_label_is_relabelled_without_the_owner_label():
    p = rp.plan(ns(labels={"pod-security.kubernetes.io/enforce": "baseline"}), rel(), wanted())
    assert p["namespace"] == {"wait": False, "labels": PSA, "creates": False}
    assert p["helm"] == rp.SKIP
    # without the labels (labels_ok only), the flag decides
    assert rp.plan({"exists": True, "labels_ok": True}, rel(), wanted())["namespace"]["labels"] == {}
    assert rp.plan({"exists": True, "labels_ok": False}, rel(), wanted())["namespace"]["labels"] == PSA


def test_terminating_namespace_waits_recreates_and_installs_even_if_a_release_was_seen():
    p = rp.plan(ns(terminating=True), rel(), wanted())
    assert p["namespace"] == {"wait": True, "labels": dict(PSA, **OWNER), "creates": True}
    assert p["helm"] == rp.INSTALL and p["release"]["status"] == ""


@pytest.mark.parametrize("status, command", [
    ("pending-install", "helm uninstall dra -n dra"),
    ("pending-upgrade", "helm rollback dra -n dra --wait"),
    ("pending-rollback", "helm rollback dra -n dra --wait"),
])
def test_pending_fails_with_the_way_out(status, command):
    p = rp.plan(ns(), rel(status=status), wanted())
    assert "stuck in '%s'" % status in p["fail"] and "-e dra_cpu_helm_recover=true" in p["fail"]
    assert "'%s'" % command in p["fail"] and p["pending"] == status and not p["helm"]


@pytest.mark.parametrize("status, recover, helm", [
    ("pending-install", rp.UNINSTALL, rp.INSTALL),
    ("pending-upgrade", rp.ROLLBACK, rp.UPGRADE),
    ("pending-rollback", rp.ROLLBACK, rp.UPGRADE),
])
def test_pending_recovers_when_asked(status, recover, helm):
    p = rp.plan(ns(), rel(status=status), wanted(), recover=True)
    assert (p["recover"], p["helm"], p["fail"]) == (recover, helm, "")


def test_uninstalled_with_history_upgrades():
    assert rp.plan(ns(), rel(status="uninstalled"), wanted())["helm"] == rp.UPGRADE


def test_release_values_merge_the_node_affinity_recursively():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
    base = {"affinity": {"podAffinity": {"x": 1}}, "a": 1}
    merged = rp.release_values(base, affinity)
    assert merged == {"a": 1, "affinity": {"podAffinity": {"x": 1}, "nodeAffinity": affinity["nodeAffinity"]}}
    assert base == {"affinity": {"podAffinity": {"x": 1}}, "a": 1}
    assert rp.release_values(base, {}) == base
    assert rp.merge_values({"l": [1, 2]}, {"l": [3]}) == {"l": [3]}
