# SPDX-License-Identifier: Apache-2.0
"""verify's run against a fake API server that keeps the objects it is given: the order of the calls, the
claim and pod it creates, the readout read from the pod's log, and the test objects removed whatever
happens (a failed judgement, a claim never allocated, an API error after the creation)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import run as V
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.pinned import PINNED_MESSAGE

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
PODS = "/api/v1/namespaces/default/pods"
UID = "claim-uid"
TOPO = {"mode": "grouped", "max_vm_host_cpus": 6, "nodes": {"real01": {}}}
POOL = {"name": "node01", "generation": 1, "resourceSliceCount": 1}
DEVICE = {"name": "cpudevnuma001", "attributes": {"numaNodeID": {"int": 1}, "resource.kubernetes.io/numaNode": {"int": 1}}}
SLICES = [{"spec": {"driver": "dra.cpu", "nodeName": "node01", "pool": POOL, "devices": [DEVICE]}}]


def container_log(metadata=True):
    meta = json.dumps({"apiVersion": "metadata.resource.k8s.io/v1beta1", "kind": "DeviceMetadata",
                       "requests": [{"name": "req-cpu", "devices": [{"driver": "dra.cpu", "pool": "real01",
                                     "name": "cpudevnuma001", "attributes": {
                                         "resource.kubernetes.io/numaNode": {"int": 1},
                                         "dra.cpu/allocatedNumCPUs": {"int": 6}}}]}]})
    m = "@@dra-cpu-verify "
    return "\n".join([m + "metadata", meta if metadata else m + "missing", m + "status", "Cpus_allowed_list:\t6-11",
                      m + "cgroup", "", m + "online", "0-11", m + "env", "DRA_CPUSET_%s=6-11" % UID, m + "end", ""])


class FakeApi(object):
    """Objects by path; a created claim is allocated and a created pod runs after ``delay`` polls."""

    def __init__(self, allocate=True, run=True, log=None, fail_post_pod=False):
        self.objects = {}
        self.calls = []
        self.allocate, self.run, self.log = allocate, run, log if log is not None else container_log()
        self.fail_post_pod = fail_post_pod

    def get_json(self, path, query=None, timeout=None):
        self.calls.append(("GET", path))
        if path == "/apis/resource.k8s.io/v1/resourceslices":
            return {"items": SLICES}
        if path.endswith("/events"):
            return {"items": [{"message": "Back-off pulling image"}]}
        if path.startswith("/apis/apps/v1/namespaces/dra-driver-cpu/daemonsets"):
            return {"items": [{"metadata": {"name": "d", "annotations": {
                "meta.helm.sh/release-name": "dra-driver-cpu", "meta.helm.sh/release-namespace": "dra-driver-cpu"}},
                "spec": {"selector": {"matchLabels": {"app": "d"}}}}]}
        if path == "/api/v1/namespaces/dra-driver-cpu/pods":
            return {"items": [{"metadata": {"name": "drv"}, "spec": {"nodeName": "real01"}}]}
        if path not in self.objects:
            raise KubeRequestError("not found", status=404)
        obj = self.objects[path]
        if path.startswith(CLAIMS) and self.allocate:
            obj.setdefault("status", {})["allocation"] = {"devices": {"results": [
                {"request": "req-cpu", "driver": "dra.cpu", "pool": "real01", "device": "cpudevnuma001"}]}}
        if path.startswith(PODS) and self.run:
            obj["spec"]["nodeName"] = "real01"
            obj["status"] = {"phase": "Running", "qosClass": "Guaranteed"}
        elif path.startswith(PODS):
            obj["spec"]["nodeName"] = "real01"
            obj["status"] = {"phase": "Pending", "containerStatuses": [
                {"name": "compute", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}
        return json.loads(json.dumps(obj))

    def send_json(self, method, path, body=None, query=None):
        self.calls.append((method, path))
        if method == "POST":
            if path == PODS and self.fail_post_pod:
                raise KubeRequestError("permission denied: cannot create pods", status=403)
            obj = json.loads(json.dumps(body))
            obj["metadata"]["uid"] = UID
            self.objects["%s/%s" % (path, body["metadata"]["name"])] = obj
            return obj
        if path not in self.objects:
            raise KubeRequestError("not found", status=404)
        del self.objects[path]
        return {}

    def list_pods(self, namespace, label_selector=None):
        return self.get_json("/api/v1/namespaces/%s/pods" % namespace).get("items") or []

    def pod_log(self, namespace, pod, container=None, tail_lines=20, previous=False):
        self.calls.append(("LOG", "%s/%s" % (namespace, pod)))
        if namespace == "dra-driver-cpu":
            return ('I1 nri.go:1] %s pod="default/dra-cpu-verify" container="compute" cpus="6-11"\n' % PINNED_MESSAGE)
        return self.log


class Clock(object):
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


PARAMS = dict((k, v.get("default")) for k, v in V.argument_spec().items())


@pytest.fixture(autouse=True)
def topology(monkeypatch):
    monkeypatch.setattr(V, "_topology", lambda api, params, clock, sleep: (dict(TOPO), None))


def verify(api, check_mode=False, **params):
    clock = Clock()
    return V.verify(api, dict(PARAMS, **params), check_mode, clock=clock, sleep=clock.sleep)


def test_a_proven_claim_reports_and_removes_its_objects():
    api = FakeApi()
    r = verify(api)
    assert not r.get("failed"), r
    assert r["passed"] is True and r["cpus"] == 6 and r["node"] == "real01" and r["cleanup"] == ["deleted"]
    assert api.objects == {}
    posts = [c for c in api.calls if c[0] == "POST"]
    assert posts == [("POST", CLAIMS), ("POST", PODS)]
    # earlier objects removed before the creation, then both after, pod first
    deletes = [c[1] for c in api.calls if c[0] == "DELETE"]
    assert deletes == [PODS + "/dra-cpu-verify", CLAIMS + "/dra-cpu-verify"] * 2
    assert r["report"][1].startswith("claim for 6 CPUs allocated: node real01, device cpudevnuma001")
    assert "its container pinned to CPUs 6-11 (the driver's log on real01)" in r["report"]
    assert r["ansible_facts"]["dra_cpu_topology"]["max_vm_host_cpus"] == 6


def test_a_vm_sizes_the_claim():
    api = FakeApi()
    r = verify(api, vm_vcpus=5, vm_isolate_emulator_thread=True)
    assert r["cpus"] == 6 and "5 vCPUs + 1 for the isolated emulator thread = 6 host CPUs" in r["sizing"]
    assert r["claim_manifest"]["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == {"requests": {"dra.cpu/cpu": "6"}}


def test_missing_metadata_fails_and_still_cleans_up():
    api = FakeApi(log=container_log(metadata=False))
    r = verify(api)
    assert r["failed"] and "virt-launcher fails a VM" in r["msg"] and api.objects == {}
    r = verify(FakeApi(log=container_log(metadata=False)), allow_missing_metadata=True)
    assert not r.get("failed"), r


def test_an_unallocated_claim_fails_with_the_scheduler_and_cleans_up():
    api = FakeApi(allocate=False)
    r = verify(api, timeout=10)
    assert r["failed"] and r["msg"].startswith("ResourceClaim default/dra-cpu-verify (dra.cpu, 6 CPUs) was not allocated within 10s")
    assert api.objects == {}


def test_a_pod_that_does_not_start_fails_with_its_events():
    api = FakeApi(run=False)
    r = verify(api, timeout=10)
    assert r["failed"] and "is Pending after 10s" in r["msg"] and "ImagePullBackOff" in r["msg"]
    assert "Back-off pulling image" in r["msg"] and api.objects == {}


def test_an_api_error_after_the_claim_was_created_still_removes_it():
    api = FakeApi(fail_post_pod=True)
    with pytest.raises(KubeRequestError):
        verify(api)
    assert api.objects == {}


def test_check_mode_creates_nothing():
    api = FakeApi()
    r = verify(api, check_mode=True)
    assert not r.get("failed") and [c for c in api.calls if c[0] != "GET"] == []
    assert r["report"][1].startswith("check mode: would create ResourceClaim default/dra-cpu-verify for 6 CPUs of one device")


def test_bad_input_fails_before_any_call():
    api = FakeApi()
    r = verify(api, cpus=2, vm_vcpus=2)
    assert r["failed"] and "dra_cpu_verify_cpus" in r["msg"] and api.calls == []


def test_individual_mode_keeps_the_count_on_one_numa_node(monkeypatch):
    monkeypatch.setattr(V, "_topology", lambda *a: (dict(TOPO, mode="individual"), None))
    r = verify(FakeApi(), check_mode=True)
    assert r["numa_attribute"] == "resource.kubernetes.io/numaNode"
    assert "matchAttribute resource.kubernetes.io/numaNode" in r["report"][1]


def test_no_cpus_fails(monkeypatch):
    monkeypatch.setattr(V, "_topology", lambda *a: (dict(TOPO, max_vm_host_cpus=0), None))
    r = verify(FakeApi())
    assert r["failed"] and "max_vm_host_cpus is 0" in r["msg"]


def test_a_topology_failure_is_the_message(monkeypatch):
    monkeypatch.setattr(V, "_topology", lambda *a: ({}, "timed out"))
    assert verify(FakeApi())["msg"] == "timed out"
