# SPDX-License-Identifier: Apache-2.0
"""What an uninstall removes (module_utils/release/uninstall.py): only what the collection installed."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.release import uninstall

OWNER = {"app.kubernetes.io/managed-by": "kubevirtci.dra_cpu"}
RELEASE = {"name": "r", "revision": 2, "status": "deployed"}


def ns(exists=True, labels=None):
    return {"name": "dra", "exists": exists, "terminating": False, "labels": dict(labels or {})}


@pytest.mark.parametrize("labels, owned", [(OWNER, True), ({}, False),
                                           ({"app.kubernetes.io/managed-by": "someone"}, False)])
def test_the_namespace_is_owned_only_with_the_owner_label(labels, owned):
    assert uninstall.namespace_owned(ns(labels=labels), OWNER) is owned
    assert uninstall.namespace_owned(ns(exists=False, labels=labels), OWNER) is False


def test_an_owned_namespace_without_other_releases_goes_with_the_release():
    steps = uninstall.plan({"namespace": ns(labels=OWNER), "release": RELEASE, "other_releases": []}, "r", "dra", OWNER)
    assert steps == {"helm": True, "delete_namespace": True, "namespace_line": None}


def test_another_release_keeps_an_owned_namespace_and_the_report_names_it():
    steps = uninstall.plan({"namespace": ns(labels=OWNER), "release": RELEASE, "other_releases": ["b", "a"]},
                           "r", "dra", OWNER)
    assert steps["helm"] is True and steps["delete_namespace"] is False
    assert steps["namespace_line"] == ("namespace dra: left in place, created by this collection but it also "
                                       "holds helm release(s) b, a")


def test_a_namespace_the_collection_did_not_create_stays():
    steps = uninstall.plan({"namespace": ns(), "release": RELEASE, "other_releases": []}, "r", "dra", OWNER)
    assert steps["delete_namespace"] is False
    assert steps["namespace_line"] == ("namespace dra: left in place, not created by this collection (no "
                                       "app.kubernetes.io/managed-by=kubevirtci.dra_cpu label)")


def test_no_release_means_no_helm():
    assert uninstall.plan({"namespace": ns(exists=False), "release": {}}, "r", "dra", OWNER) == {
        "helm": False, "delete_namespace": False, "namespace_line": "namespace dra: not there"}
    assert uninstall.plan({"namespace": ns(labels=OWNER), "release": {}}, "r", "dra", OWNER)["helm"] is False
    assert uninstall.plan({"namespace": ns(labels=OWNER), "release": RELEASE}, "r", "dra", OWNER)["helm"] is True


def test_slices_that_outlive_the_driver_are_counted_by_node():
    slices = [{"spec": {"nodeName": "n2"}}, {"spec": {"nodeName": "n1"}}, {"spec": {"nodeName": "n2"}}]
    message = uninstall.slices_outlive_message("dra.cpu", slices, 120)
    assert message.startswith("3 ResourceSlice(s) of driver dra.cpu are still there 120s after the release "
                              "was removed, on node(s) n1, n2.")
