# SPDX-License-Identifier: Apache-2.0
"""verify's run (VEP 152 as merged: claim <vmi>-cpu, pod virt-launcher-<vmi>; KEP-5517's claim-only pod)
against a fake API server that keeps the objects it is given: the order of the calls, the claim and pod it
creates, the readout read from the pod's log, and the test objects removed whatever happens (a failed
judgement, a claim never allocated, an API error after the creation)."""
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
INSUFFICIENT = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
TOPO = {"mode": "grouped", "max_vm_host_cpus": 6, "nodes": {"real01": {}}}
POOL = {"name": "real01", "generation": 1, "resourceSliceCount": 1}
DEVICE = {"name": "cpudevnuma001", "attributes": {"numaNodeID": {"int": 1}, "resource.kubernetes.io/numaNode": {"int": 1}}}
SLICES = [{"spec": {"driver": "dra.cpu", "nodeName": "real01", "pool": POOL, "devices": [DEVICE]}}]


def container_log(metadata=True, dra_cpuset=True):
    meta = json.dumps({"apiVersion": "metadata.resource.k8s.io/v1beta1", "kind": "DeviceMetadata",
                       "requests": [{"name": "cpu", "devices": [{"driver": "dra.cpu", "pool": "real01",
                                     "name": "cpudevnuma001", "attributes": {
                                         "resource.kubernetes.io/numaNode": {"int": 1},
                                         "dra.cpu/allocatedNumCPUs": {"int": 6}}}]}]})
    m = "@@dra-cpu-verify "
    return "\n".join([m + "metadata", meta if metadata else m + "missing", m + "status", "Cpus_allowed_list:\t6-11",
                      m + "cgroup", "", m + "online", "0-11", m + "nodes",
                      "/sys/devices/system/node/node1/cpulist 6-11", m + "packages", "", m + "env",
                      "DRA_CPUSET_%s=6-11" % UID if dra_cpuset else "HOME=/root", m + "end", ""])


class FakeApi(object):
    """Objects by path; a created claim is allocated and a created pod runs after ``delay`` polls."""

    def __init__(self, allocate=True, run=True, log=None, fail_post_pod=False, accounted=6000, claim_status=None,
                 refusal=INSUFFICIENT, in_event=False):
        self.objects = {}
        self.calls = []
        self.allocate, self.run, self.log = allocate, run, log if log is not None else container_log()
        self.fail_post_pod = fail_post_pod
        # KEP-5517: the millicpus the scheduler counts for the claim, the launcher pod's status entry, the
        # scheduler's words when it refuses a probe pod, and whether they are in an event only
        self.accounted, self.claim_status = accounted, claim_status
        self.refusal, self.in_event = refusal, in_event

    def schedule(self, path):
        """The scheduler's NodeResourcesFit for the probe and control pods: 11899m left without the claim
        (12 allocatable - 100m - the launcher's 1m), less what it counts for the claim and the pods placed."""
        obj = self.objects[path]
        if obj["spec"].get("nodeName") or obj.get("status"):
            return
        placed = sum(int(o["spec"]["containers"][0]["resources"]["requests"]["cpu"][:-1])
                     for p, o in self.objects.items() if p in (PROBE, CONTROL) and o["spec"].get("nodeName"))
        want = int(obj["spec"]["containers"][0]["resources"]["requests"]["cpu"][:-1])
        if want <= 11899 - self.accounted - placed:
            obj["spec"]["nodeName"] = "real01"
            return
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        if not self.in_event:
            condition["message"] = self.refusal
        obj["status"] = {"conditions": [condition]}

    def get_json(self, path, query=None, timeout=None):
        self.calls.append(("GET", path))
        if path == "/apis/resource.k8s.io/v1/resourceslices":
            return {"items": SLICES}
        if path.endswith("/events"):
            if self.in_event and "involvedObject.name=dra-cpu-verify-probe" in (query or {}).get("fieldSelector", ""):
                return {"items": [{"reason": "FailedScheduling", "message": self.refusal}]}
            return {"items": [{"message": "Back-off pulling image"}]}
        if path.startswith("/apis/apps/v1/namespaces/dra-driver-cpu/daemonsets"):
            return {"items": [{"metadata": {"name": "d", "annotations": {
                "meta.helm.sh/release-name": "dra-driver-cpu", "meta.helm.sh/release-namespace": "dra-driver-cpu"}},
                "spec": {"selector": {"matchLabels": {"app": "d"}}}}]}
        if path == "/api/v1/namespaces/dra-driver-cpu/pods":
            return {"items": [{"metadata": {"name": "drv"}, "spec": {"nodeName": "real01"}}]}
        if path == "/api/v1/nodes/real01":
            return {"metadata": {"name": "real01"}, "status": {"allocatable": {"cpu": "12"}}}
        if path == "/api/v1/pods":
            return {"items": [{"spec": {"containers": [{"resources": {"requests": {"cpu": "100m"}}}]},
                               "status": {"phase": "Running"}},
                              {"spec": {"containers": [{"resources": {"requests": {"cpu": "1m"}}}]},
                               "status": {"phase": "Running"}}]}
        if path not in self.objects:
            raise KubeRequestError("not found", status=404)
        obj = self.objects[path]
        if path in (PROBE, CONTROL):
            self.schedule(path)
            return json.loads(json.dumps(obj))
        if path.startswith(CLAIMS) and self.allocate:
            obj.setdefault("status", {})["allocation"] = {"devices": {"results": [
                {"request": "cpu", "driver": "dra.cpu", "pool": "real01", "device": "cpudevnuma001"}]}}
        if path.startswith(PODS) and self.run:
            obj["spec"]["nodeName"] = "real01"
            obj["status"] = {"phase": "Running", "qosClass": "Guaranteed"}
            if self.claim_status is not None:
                obj["status"]["nodeAllocatableResourceClaimStatuses"] = self.claim_status
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
            return ('I1 nri.go:1] %s pod="default/virt-launcher-dra-cpu-verify" container="compute" cpus="6-11"\n' % PINNED_MESSAGE)
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


LAUNCHER = PODS + "/virt-launcher-dra-cpu-verify"
CLAIM = CLAIMS + "/dra-cpu-verify-cpu"
PROBE = PODS + "/dra-cpu-verify-probe"
CONTROL = PODS + "/dra-cpu-verify-probe-control"


def test_a_proven_claim_reports_and_removes_its_objects():
    api = FakeApi()
    r = verify(api)
    assert not r.get("failed"), r
    assert r["passed"] is True and r["cpus"] == 6 and r["node"] == "real01" and r["cleanup"] == ["deleted"]
    assert (r["claim_name"], r["pod_name"], r["claim_only"]) == ("dra-cpu-verify-cpu", "virt-launcher-dra-cpu-verify", False)
    assert api.objects == {}
    posts = [c for c in api.calls if c[0] == "POST"]
    assert posts == [("POST", CLAIMS), ("POST", PODS)]
    # earlier objects removed before the creation, then all after, pods first
    deletes = [c[1] for c in api.calls if c[0] == "DELETE"]
    assert deletes == [CONTROL, PROBE, LAUNCHER, CLAIM] * 2
    assert r["report"][0].startswith("VMI default/dra-cpu-verify (dedicatedCpuPlacement), the largest VM that fits")
    assert r["report"][1].startswith("claim dra-cpu-verify-cpu for 6 CPUs allocated: node real01, device cpudevnuma001")
    # beside it, where the allocated device sits as its slice publishes it (resource.kubernetes.io/numaNode 1)
    assert ("in compute, what virt-launcher reads: DRA_CPUSET_claim-uid=6-11; the allocated device sits at NUMA node 1 "
            "(resource.kubernetes.io/pcieRoot, resource.kubernetes.io/numaNode)") in r["report"]
    assert r["locality"] == {"pcie_roots": [], "numa_node": 1}
    assert "its container pinned to CPUs 6-11 (the driver's log on real01)" in r["report"]
    assert r["ansible_facts"]["dra_cpu_topology"]["max_vm_host_cpus"] == 6
    # the simulated hardware: CPUs 6-11 are CPUs of the kernel here (online 0-11), NUMA node 1 holds them
    assert r["readout"]["cpuset_compared"] and r["readout"]["placement"]["kernel_cpus"] == "6-11"


def test_the_manifests_are_virt_controllers():
    r = verify(FakeApi(), vm_cores=5, vm_isolate_emulator_thread=True)
    assert r["cpus"] == 6 and "5 vCPUs (cores 5 x sockets 1 x threads 1) + 1 for the isolated emulator thread = 6" in r["sizing"]
    assert r["vmi"]["name"] == "dra-cpu-verify" and r["vmi"]["host_cpus"] == 6
    assert r["claim_manifest"]["metadata"]["name"] == "dra-cpu-verify-cpu"
    assert r["claim_manifest"]["spec"]["devices"]["requests"] == [{"name": "cpu", "exactly": {
        "deviceClassName": "dra.cpu", "capacity": {"requests": {"dra.cpu/cpu": "6"}}}}]
    pod = r["pod_manifest"]
    assert pod["metadata"]["name"] == "virt-launcher-dra-cpu-verify"
    assert pod["spec"]["resourceClaims"] == [{"name": "cpu-dra", "resourceClaimName": "dra-cpu-verify-cpu"}]
    assert pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "6"


def test_missing_metadata_passes_and_is_reported():
    r = verify(FakeApi(log=container_log(metadata=False)))
    assert not r.get("failed"), r
    assert any("no KEP-5304 device metadata" in line and "not read by KubeVirt's CPU path" in line for line in r["report"])
    api = FakeApi(log=container_log(metadata=False))
    r = verify(api, require_metadata=True)
    assert r["failed"] and "dra_cpu_verify_require_metadata" in r["msg"] and api.objects == {}


def test_the_deprecated_metadata_option_warns_and_does_nothing():
    r = verify(FakeApi(log=container_log(metadata=False)), allow_missing_metadata=False)
    assert not r.get("failed"), r
    assert r["warnings"] == [V.DEPRECATED_METADATA_OPTION]
    assert "warnings" not in verify(FakeApi())


def test_an_unallocated_claim_fails_with_the_scheduler_and_cleans_up():
    api = FakeApi(allocate=False)
    r = verify(api, timeout=10)
    assert r["failed"] and r["msg"].startswith(
        "ResourceClaim default/dra-cpu-verify-cpu (dra.cpu, 6 CPUs) was not allocated within 10s")
    assert api.objects == {}


def test_a_pod_that_does_not_start_fails_with_its_events():
    api = FakeApi(run=False)
    r = verify(api, timeout=10)
    assert r["failed"] and "pod default/virt-launcher-dra-cpu-verify on node real01 is Pending after 10s" in r["msg"]
    assert "ImagePullBackOff" in r["msg"] and "Back-off pulling image" in r["msg"] and api.objects == {}


def test_an_api_error_after_the_claim_was_created_still_removes_it():
    api = FakeApi(fail_post_pod=True)
    with pytest.raises(KubeRequestError):
        verify(api)
    assert api.objects == {}


def test_check_mode_creates_nothing():
    api = FakeApi()
    r = verify(api, check_mode=True)
    assert not r.get("failed") and [c for c in api.calls if c[0] != "GET"] == []
    assert r["report"][1] == (
        "check mode: would create ResourceClaim default/dra-cpu-verify-cpu (request cpu, device class dra.cpu, "
        "dra.cpu/cpu: 6, one device) and pod virt-launcher-dra-cpu-verify (container compute, pod claim cpu-dra, "
        "CPU requests = limits = 6), read what its container sees, and delete both")


def test_bad_input_fails_before_any_call():
    api = FakeApi()
    r = verify(api, cpus=2, vm_cores=2)
    assert r["failed"] and "dra_cpu_verify_cpus" in r["msg"] and api.calls == []


def test_individual_mode_fails_before_any_change_unless_the_escape_hatch_is_asked_for(monkeypatch):
    """KubeVirt synthesizes grouped claims only; upstream is deprecating individual mode."""
    monkeypatch.setattr(V, "_topology", lambda *a: (dict(TOPO, mode="individual"), None))
    api = FakeApi()
    r = verify(api)
    assert r["failed"] and r["msg"] == V.INDIVIDUAL_MODE and [c for c in api.calls if c[0] != "GET"] == []
    assert "dra_cpu_verify_individual_claim=true" in r["msg"] and "grouped claims only" in r["msg"]
    r = verify(FakeApi(), check_mode=True, individual_claim=True)
    assert not r.get("failed") and r["numa_attribute"] == "resource.kubernetes.io/numaNode"
    assert "matchAttribute resource.kubernetes.io/numaNode" in r["report"][1]


def test_no_vm_fits_fails(monkeypatch):
    monkeypatch.setattr(V, "_topology", lambda *a: (dict(TOPO, max_vm_host_cpus=0), None))
    r = verify(FakeApi())
    assert r["failed"] and "max_vm_host_cpus 0" in r["msg"]


def test_a_topology_failure_is_the_message(monkeypatch):
    monkeypatch.setattr(V, "_topology", lambda *a: ({}, "timed out"))
    assert verify(FakeApi())["msg"] == "timed out"


STATUS = [{"resourceClaimName": "dra-cpu-verify-cpu", "containers": ["compute"],
           "mapping": [{"name": "cpu", "quantity": "6"}]}]


@pytest.fixture
def kep5517(monkeypatch):
    monkeypatch.setattr(V, "_topology", lambda *a: (dict(TOPO, node_allocatable_mapping=True), None))


def test_kep5517_claim_only_pod_its_status_and_the_accounting_probe(kep5517):
    api = FakeApi(claim_status=STATUS)
    r = verify(api)
    assert not r.get("failed"), r
    assert r["claim_only"] and r["pod_manifest"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1m"
    # 12 CPUs allocatable - 100m (another pod) - 1m (the launcher pod) = 11899m left without the claim; beside
    # the claim's 6 CPUs 5899m: the probe asks for one CPU more, the control for exactly that
    na = r["node_allocatable"]
    assert na["probe"] == {"name": "dra-cpu-verify-probe", "cpu_millis": 6899, "outcome": "unschedulable",
                           "message": INSUFFICIENT}
    assert na["control"] == {"name": "dra-cpu-verify-probe-control", "cpu_millis": 5899, "outcome": "scheduled",
                             "message": None}
    assert [c for c in api.calls if c[0] == "POST"] == [("POST", CLAIMS), ("POST", PODS), ("POST", PODS), ("POST", PODS)]
    assert api.objects == {}
    assert ("claim-only pod (KEP-5517): status.nodeAllocatableResourceClaimStatuses names claim dra-cpu-verify-cpu, "
            "containers compute, mapping cpu 6") in r["report"]
    assert any("stays Unschedulable (scheduler: 0/1 nodes are available: 1 Insufficient cpu." in line
               for line in r["report"])
    assert "and no more than them: a control pod asking for 5899m CPU, one CPU less, was scheduled" in r["report"]


def test_kep5517_the_refusal_may_be_said_by_the_event_only(kep5517):
    r = verify(FakeApi(claim_status=STATUS, in_event=True))
    assert not r.get("failed"), r
    assert r["node_allocatable"]["probe"]["outcome"] == "unschedulable"


def test_kep5517_unaccounted_claim_fails(kep5517):
    r = verify(FakeApi(claim_status=STATUS, accounted=0))
    assert r["failed"] and "was scheduled beside the claim" in r["msg"]
    r = verify(FakeApi(claim_status=[]))
    assert r["failed"] and "names no claim dra-cpu-verify-cpu (it has: none)" in r["msg"]


def test_kep5517_a_claim_counted_one_cpu_short_fails(kep5517):
    """The lower bound: the scheduler counts 5 of the claim's 6 CPUs, the probe fits."""
    r = verify(FakeApi(claim_status=STATUS, accounted=5000))
    assert r["failed"] and "one CPU more than node real01 has left beside the claim's 6 CPUs, was scheduled" in r["msg"]


def test_kep5517_a_claim_counted_as_more_than_its_cpus_fails(kep5517):
    """The upper bound: the scheduler counts 7 CPUs for a 6-CPU claim; the probe is still refused for
    insufficient CPU, the control one CPU smaller is refused too."""
    r = verify(FakeApi(claim_status=STATUS, accounted=7000))
    assert r["node_allocatable"]["probe"]["outcome"] == "unschedulable"
    assert r["node_allocatable"]["control"]["outcome"] == "unschedulable"
    assert r["failed"] and "the scheduler counts more than the claim's CPUs" in r["msg"]
    assert "control pod (5899m CPU): unschedulable (scheduler: %s)" % INSUFFICIENT in r["report"]


def test_kep5517_a_probe_refused_for_another_reason_fails(kep5517):
    """Unschedulable is not enough: the scheduler must say insufficient CPU (here a taint refuses it)."""
    taint = "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unschedulable: }."
    r = verify(FakeApi(claim_status=STATUS, refusal=taint))
    assert r["node_allocatable"]["probe"] == {"name": "dra-cpu-verify-probe", "cpu_millis": 6899,
                                              "outcome": "unschedulable, not for insufficient CPU", "message": taint}
    assert r["failed"] and "is Unschedulable, but not for insufficient CPU (scheduler: %s)" % taint in r["msg"]
    assert ("accounting probe (6899m CPU): unschedulable, not for insufficient CPU (scheduler: %s)" % taint
            in r["report"])
    r = verify(FakeApi(claim_status=STATUS, refusal=taint, in_event=True))
    assert r["failed"] and "not for insufficient CPU" in r["msg"]


def run_module(monkeypatch, api, **params):
    """The module's own entry (run_verify, what plugins/modules/verify.py calls) with its argument spec's
    defaults, the client factory answering with the fake API server."""
    class Connected(object):
        pass
    connected = Connected()
    connected.api = api
    monkeypatch.setattr(V.factory, "connect", lambda get_client, source, p: connected)
    return V.run_verify(dict(PARAMS, **params), False, None, None)


def test_a_container_without_dra_cpuset_fails_by_default_and_passes_only_with_the_setting(monkeypatch):
    assert (PARAMS["allow_missing_dra_cpuset"], PARAMS["require_metadata"]) == (False, False)
    # the control: with DRA_CPUSET_<claim uid> the defaults pass
    r = run_module(monkeypatch, FakeApi())
    assert not r.get("failed") and r["passed"], r
    # without it: the defaults fail, naming the setting
    api = FakeApi(log=container_log(dra_cpuset=False))
    r = run_module(monkeypatch, api)
    assert r["failed"] and not r["passed"] and api.objects == {}
    assert "the driver injected no DRA_CPUSET_claim-uid into container compute (it has: none)" in r["msg"]
    assert "Set dra_cpu_verify_allow_missing_dra_cpuset=true" in r["msg"]
    # with the setting: passes, and says what it accepted
    r = run_module(monkeypatch, FakeApi(log=container_log(dra_cpuset=False)), allow_missing_dra_cpuset=True)
    assert not r.get("failed") and r["passed"], r
    assert "no DRA_CPUSET_claim-uid (accepted: dra_cpu_verify_allow_missing_dra_cpuset)" in " ".join(r["report"])
    # the setting does not accept a DRA_CPUSET_* that is there but wrong
    bad = container_log().replace("DRA_CPUSET_%s=6-11" % UID, "DRA_CPUSET_%s=6-8" % UID)
    r = run_module(monkeypatch, FakeApi(log=bad), allow_missing_dra_cpuset=True)
    assert r["failed"] and "holds 3 CPUs, the claim asks for 6" in r["msg"]
