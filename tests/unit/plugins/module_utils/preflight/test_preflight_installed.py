# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import gzip
import json

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import installed

PSA = {"pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/warn": "privileged",
       "pod-security.kubernetes.io/audit": "privileged"}


def helm_secret(name, revision, status, chart="dra-driver-cpu", version="0.3.0", compress=True, data=None):
    """A release Secret the way helm 3's secrets driver stores it (as the API returns it)."""
    body = json.dumps({"name": name, "version": revision, "info": {"status": status},
                       "chart": {"metadata": {"name": chart, "version": version}},
                       "config": {"token": "s3cret"}}).encode()
    helm_encoded = base64.b64encode(gzip.compress(body) if compress else body)
    return {
        "type": "helm.sh/release.v1",
        "metadata": {"name": "sh.helm.release.v1.%s.v%d" % (name, revision),
                     "labels": {"owner": "helm", "name": name, "status": status, "version": str(revision)}},
        "data": {"release": data if data is not None else base64.b64encode(helm_encoded).decode()},
    }


def test_namespace_state():
    assert installed.namespace_state("ns", None, PSA) == {"name": "ns", "exists": False, "terminating": False,
                                                          "labels": {}, "labels_ok": False}
    partial = {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "privileged"}}}
    assert installed.namespace_state("ns", partial, PSA)["labels_ok"] is False
    assert installed.namespace_state("ns", {"metadata": {}}, PSA)["exists"] is True
    ok = installed.namespace_state("ns", {"metadata": {"labels": dict(PSA, other="x")}}, PSA)
    assert ok["exists"] is True and ok["labels_ok"] is True and ok["labels"]["other"] == "x"
    wrong = {"metadata": {"labels": dict(PSA, **{"pod-security.kubernetes.io/warn": "baseline"})}}
    assert installed.namespace_state("ns", wrong, PSA)["labels_ok"] is False
    # no labels asked for: an existing namespace is fine, a missing one is not
    assert installed.namespace_state("ns", {"metadata": {}})["labels_ok"] is True
    assert installed.namespace_state("ns", None)["labels_ok"] is False
    assert ok["terminating"] is False


@pytest.mark.parametrize("obj", [
    {"metadata": {"labels": PSA, "deletionTimestamp": "2026-11-30T10:00:00Z"}},
    {"metadata": {"labels": PSA}, "status": {"phase": "Terminating"}},
])
def test_terminating_namespace(obj):
    state = installed.namespace_state("ns", obj, PSA)
    assert state["exists"] is True and state["terminating"] is True and state["labels_ok"] is False


def test_release_state_picks_the_newest_revision_by_number():
    secrets = [helm_secret("r", 2, "superseded", version="0.2.0"), helm_secret("r", 10, "deployed"),
               helm_secret("r", 9, "superseded", version="0.2.0")]
    assert installed.release_state("r", secrets) == {
        "name": "r", "revision": 10, "status": "deployed", "chart": "dra-driver-cpu", "chart_version": "0.3.0",
        "values_sha256": installed.values_digest({"token": "s3cret"})}


def test_release_state_never_returns_the_values():
    state = installed.release_state("r", [helm_secret("r", 1, "deployed")])
    assert "s3cret" not in json.dumps(state)


def test_release_state_pending_and_uncompressed():
    state = installed.release_state("r", [helm_secret("r", 1, "pending-install", compress=False)])
    assert state["status"] == "pending-install" and state["chart_version"] == "0.3.0"


def test_release_state_ignores_other_releases_and_bad_labels():
    other = helm_secret("other", 5, "deployed")
    bad = helm_secret("r", 1, "deployed")
    bad["metadata"]["labels"]["version"] = "x"
    assert installed.release_state("r", [other, bad]) == {}
    assert installed.release_state("r", []) == {}
    assert installed.release_state("r", None) == {}


@pytest.mark.parametrize("data", ["not base64!", base64.b64encode(b"garbage").decode(), ""])
def test_release_state_undecodable_body_keeps_labels(data):
    state = installed.release_state("r", [helm_secret("r", 3, "pending-upgrade", data=data)])
    assert state == {"name": "r", "revision": 3, "status": "pending-upgrade", "chart": "", "chart_version": "",
                     "values_sha256": ""}


def test_other_releases_are_the_other_names_of_helm_release_secrets():
    mine, other, again = helm_secret("r", 1, "deployed"), helm_secret("b", 2, "deployed"), helm_secret("b", 1, "superseded")
    not_helm = helm_secret("a", 1, "deployed")
    not_helm["type"] = "Opaque"
    assert installed.other_releases("r", [mine, other, again, not_helm]) == ["b"]
    assert installed.other_releases("r", [mine]) == [] and installed.other_releases("r", None) == []
