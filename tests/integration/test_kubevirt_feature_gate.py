"""playbooks/kubevirt_feature_gate.yml adds CPUsWithDRA and keeps the gates already there.

Nodes: they play no part (a KubeVirt CR is edited); the session cluster's real node (real01).
"""
import os
import time

import pytest
import yaml

from ansible_run import REPO, run_playbook

FIXTURES = os.path.join(REPO, "tests", "fixtures", "kubevirt")


def _load(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return yaml.safe_load(f)


@pytest.fixture
def kubevirt_cr(cluster):
    from kubernetes import client
    ext = client.ApiextensionsV1Api(cluster.api_client)
    core = client.CoreV1Api(cluster.api_client)
    custom = client.CustomObjectsApi(cluster.api_client)
    ext.create_custom_resource_definition(_load("kubevirt-crd.yaml"))
    for _ in range(100):
        crd = ext.read_custom_resource_definition("kubevirts.kubevirt.io")
        if any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or []):
            break
        time.sleep(0.1)
    core.create_namespace({"metadata": {"name": "kubevirt"}})
    custom.create_namespaced_custom_object("kubevirt.io", "v1", "kubevirt", "kubevirts", _load("kubevirt-cr.yaml"))
    yield custom
    ext.delete_custom_resource_definition("kubevirts.kubevirt.io")
    core.delete_namespace("kubevirt")


def gates(custom):
    cr = custom.get_namespaced_custom_object("kubevirt.io", "v1", "kubevirt", "kubevirts", "kubevirt")
    return cr["spec"]["configuration"]["developerConfiguration"]["featureGates"]


def test_adds_the_gate_keeping_the_others_and_is_idempotent(cluster, kubevirt_cr):
    first = run_playbook(cluster, "kubevirt_feature_gate")
    assert first.rc == 0, first
    assert first.changed == 1, first.changed_tasks()
    assert gates(kubevirt_cr) == ["Snapshot", "HotplugVolumes", "CPUsWithDRA"]
    second = run_playbook(cluster, "kubevirt_feature_gate")
    assert second.rc == 0 and second.changed == 0, second
    assert gates(kubevirt_cr) == ["Snapshot", "HotplugVolumes", "CPUsWithDRA"]


def test_clear_message_without_a_kubevirt_cr(cluster):
    r = run_playbook(cluster, "kubevirt_feature_gate")
    assert r.rc != 0
    assert any("KubeVirt" in m for m in r.failure_messages()), r
