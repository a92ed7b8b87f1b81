"""The simulator's node, pod and driver state machines (main.Sim and its mixins) against an in-memory
fake API (no cluster)."""
import copy
import importlib.util
import itertools
import json
import os
import sys

import pytest

from sim_api import ApiError
from sim_driver_publish import SLICES
from sim_format import iso
from sim_nodes import LEASES
from sim_faults import DRIVER_MODE_ANNOTATION, POD_FAULT_ANNOTATION

SIM_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster", "sim"))
_spec = importlib.util.spec_from_file_location("dracpu_sim_main", os.path.join(SIM_DIR, "main.py"))
simmain = importlib.util.module_from_spec(_spec)
sys.modules["dracpu_sim_main"] = simmain
_spec.loader.exec_module(simmain)


def merge(a, b):
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(a.get(k), dict):
            merge(a[k], v)
        else:
            a[k] = copy.deepcopy(v)


class FakeApi:
    def __init__(self, *a, **k):
        self.objs = {}
        self.count = 0
        self.drop_ama = False
        self.n = itertools.count(1)

    def _key(self, path):
        return path[:-len("/status")] if path.endswith("/status") else path

    def create(self, path, body):
        body = copy.deepcopy(body)
        md = body["metadata"]
        if "name" not in md:
            md["name"] = md["generateName"] + f"{next(self.n):05x}"
        md["uid"] = f"uid-{md['name']}"
        key = f"{path}/{md['name']}"
        if key in self.objs:
            raise ApiError(409, "{}", "POST", path)
        if path == SLICES and self.drop_ama:
            for d in body["spec"]["devices"]:
                d.pop("allowMultipleAllocations", None)
        self.objs[key] = body
        return copy.deepcopy(body)

    def update(self, path, body):
        key = self._key(path)
        if key not in self.objs:
            raise ApiError(404, "{}", "PUT", path)
        body = copy.deepcopy(body)
        if path.startswith(SLICES + "/") and self.drop_ama:
            for d in body["spec"]["devices"]:
                d.pop("allowMultipleAllocations", None)
        self.objs[key] = body
        return copy.deepcopy(body)

    def patch(self, path, body, ctype=None):
        key = self._key(path)
        if key not in self.objs:
            raise ApiError(404, "{}", "PATCH", path)
        merge(self.objs[key], body)
        return copy.deepcopy(self.objs[key])

    def delete(self, path, body=None, ignore_missing=True):
        self.objs.pop(path, None)

    def get(self, path, **kw):
        if path not in self.objs:
            raise ApiError(404, "{}", "GET", path)
        return copy.deepcopy(self.objs[path])

    def list_all(self, path, query=None):
        return [copy.deepcopy(v) for k, v in self.objs.items() if k.rsplit("/", 1)[0] == path], "1"

    def slices(self):
        return [v for k, v in self.objs.items() if k.startswith(SLICES + "/")]


@pytest.fixture
def sim(tmp_path, monkeypatch):
    monkeypatch.setattr(simmain, "Api", FakeApi)
    env = {"KUBECONFIG": "x", "CLUSTER_STATE_DIR": str(tmp_path), "CLUSTER_NODES": "2",
           "CLUSTER_SLICE_DELETE_DELAY": "0",
           "CLUSTER_NODE_OVERRIDES": json.dumps({"node02": {"cpu_manager_policy": "none"}})}
    s = simmain.Sim(env)
    s.boot_time = iso()
    s.register_nodes()
    s.on_slices([])
    s.on_cms([])
    yield s
    s.workers.shutdown(wait=False)
    s.beat.shutdown(wait=False)


def driver_pod(name, node="node01", image="registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.3.0", args=None,
               created="2026-01-01T00:00:00Z"):
    return {"metadata": {"name": name, "namespace": "dra-driver-cpu", "uid": f"uid-{name}",
                         "creationTimestamp": created},
            "spec": {"nodeName": node, "hostNetwork": True,
                     "containers": [{"name": "dracpu", "image": image,
                                     "args": args if args is not None else ["--v=4", "--config=/etc/dracpu/config.yaml"],
                                     "volumeMounts": [{"name": "config", "mountPath": "/etc/dracpu"}]}],
                     "volumes": [{"name": "config", "configMap": {"name": "dra-driver-cpu-config"}}]},
            "status": {"phase": "Pending"}}


def cm(text):
    return {"metadata": {"namespace": "dra-driver-cpu", "name": "dra-driver-cpu-config"},
            "data": {"config.yaml": text}}


def add_pod(sim, p):
    sim.api.objs[f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}"] = copy.deepcopy(p)
    sim.on_pod("ADDED", p)
    sim.sync_pod(p["metadata"]["uid"])


def pod_status(sim, p):
    return sim.api.objs[f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}"]["status"]


def log_of(sim, p, node="node01"):
    with open(sim.logs.path(node, "dra-driver-cpu", p["metadata"]["name"], "dracpu")) as f:
        return f.read()


def test_registration(sim):
    n1 = sim.api.objs["/api/v1/nodes/node01"]
    assert n1["metadata"]["labels"]["kubernetes.io/hostname"] == "node01"
    assert n1["metadata"]["annotations"]["sim.dra-cpu.kubevirtci.io/numa1-cpus"] == "6-11"
    st = n1["status"]
    assert st["addresses"] == [{"type": "InternalIP", "address": "10.213.1.1"}]
    assert st["nodeInfo"]["containerRuntimeVersion"] == "cri-o://1.36.1"
    assert st["capacity"]["cpu"] == "12" and st["allocatable"]["cpu"] == "12"
    assert st["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    lease = sim.api.objs[LEASES + "/node02"]
    assert lease["spec"]["holderIdentity"] == "node02"
    assert lease["metadata"]["ownerReferences"][0]["uid"] == "uid-node02"


def test_driver_lifecycle(sim):
    sim.on_cm("ADDED", cm("reservedCPUs: 0-1\n"))
    p = driver_pod("d-1")
    add_pod(sim, p)
    st = pod_status(sim, p)
    assert st["phase"] == "Running" and st["podIP"] == "10.213.1.1"
    assert st["containerStatuses"][0]["ready"] is True
    sim.sync_driver("node01")
    (s1,) = sim.api.slices()
    assert s1["metadata"]["name"].startswith("00000-dra.cpu-node01-")
    assert s1["spec"]["pool"] == {"name": "node01", "generation": 1, "resourceSliceCount": 1}
    assert [d["capacity"]["dra.cpu/cpu"]["value"] for d in s1["spec"]["devices"]] == ["4", "6"]
    assert s1["spec"]["devices"][0]["attributes"]["resource.kubernetes.io/numaNode"] == {"int": 0}
    assert s1["metadata"]["ownerReferences"][0]["uid"] == "uid-node01"
    text = log_of(sim, p)
    assert "Read driver config file /etc/dracpu/config.yaml" in text and "generation 1" in text
    sim.sync_driver("node01")          # same content: nothing changes
    assert [s["metadata"]["name"] for s in sim.api.slices()] == [s1["metadata"]["name"]]

    # helm upgrade: new config, old pod replaced. The resourceslice controller's syncPool updates
    # the one slice in place and keeps the generation (no slice added, at most one changed)
    sim.on_cm("MODIFIED", cm("reservedCPUs: 0-1\ngroupBy: machine\n"))
    sim.on_pod("DELETED", p)
    p2 = driver_pod("d-2", created="2026-01-01T00:01:00Z")
    add_pod(sim, p2)
    sim.sync_driver("node01")
    (s2,) = sim.api.slices()
    assert s2["metadata"]["name"] == s1["metadata"]["name"]
    assert s2["spec"]["pool"]["generation"] == 1
    assert [d["name"] for d in s2["spec"]["devices"]] == ["cpudevmachine"]
    assert "updated 1 in place" in log_of(sim, p2)

    # driver gone -> slices deleted after the (here 0 s) delay
    sim.on_pod("DELETED", p2)
    sim.sync_driver("node01")
    assert sim.api.slices() == []


def test_v02_with_config_crashloops(sim):
    sim.on_cm("ADDED", cm("reservedCPUs: 0-1\n"))
    p = driver_pod("d-old", image="x/dra-driver-cpu:v0.2.0")
    add_pod(sim, p)
    cs = pod_status(sim, p)["containerStatuses"][0]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert "flag provided but not defined: -config" in log_of(sim, p)
    sim.sync_driver("node01")
    assert sim.api.slices() == []


def test_missing_configmap_waits(sim):
    p = driver_pod("d-1")
    add_pod(sim, p)
    st = pod_status(sim, p)
    assert st["phase"] == "Pending"
    assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    sim.on_cm("ADDED", cm("groupBy: socket\n"))
    sim.sync_pod(p["metadata"]["uid"])
    assert pod_status(sim, p)["phase"] == "Running"


def test_pod_fault_annotation_and_deletion(sim):
    node = copy.deepcopy(sim.api.objs["/api/v1/nodes/node02"])
    node["metadata"]["annotations"][POD_FAULT_ANNOTATION] = "never"
    sim.on_node("MODIFIED", node)
    p = {"metadata": {"name": "web", "namespace": "default", "uid": "uid-web"},
         "spec": {"nodeName": "node02", "containers": [{"name": "c", "image": "nginx"}]}, "status": {}}
    add_pod(sim, p)
    assert pod_status(sim, p)["phase"] == "Pending"
    node["metadata"]["annotations"][POD_FAULT_ANNOTATION] = "crashloop"
    sim.on_node("MODIFIED", node)
    sim.sync_pod("uid-web")
    assert pod_status(sim, p)["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    del node["metadata"]["annotations"][POD_FAULT_ANNOTATION]
    sim.on_node("MODIFIED", node)
    sim.sync_pod("uid-web")
    st = pod_status(sim, p)
    assert st["phase"] == "Running" and st["podIP"].startswith("100.64.")
    assert st["containerStatuses"][0]["restartCount"] == 1
    p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    sim.on_pod("MODIFIED", p)
    sim.sync_pod("uid-web")
    assert "/api/v1/namespaces/default/pods/web" not in sim.api.objs


def test_partial_and_dropped_fields(sim):
    sim.api.drop_ama = True
    node = copy.deepcopy(sim.api.objs["/api/v1/nodes/node01"])
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "partial:1"
    sim.on_node("MODIFIED", node)
    sim.on_cm("ADDED", cm(""))
    p = driver_pod("d-1", args=["--reserved-cpus=0-1"])
    add_pod(sim, p)
    sim.sync_driver("node01")
    (s,) = sim.api.slices()
    assert s["spec"]["pool"]["resourceSliceCount"] == 2 and len(s["spec"]["devices"]) == 1
    assert "some fields were dropped by the apiserver, probably because these features are disabled: " \
           "DRAConsumableCapacity" in log_of(sim, p)
    sim.sync_driver("node01")       # stored lacks the dropped field: no republish loop
    assert len(sim.api.slices()) == 1 and sim.api.slices()[0]["spec"]["pool"]["generation"] == 1
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "normal"
    sim.on_node("MODIFIED", node)
    sim.sync_driver("node01")
    # syncPool: the one matched slice (index 00000) changes (count 2 -> 1), none is added: updated
    # in place at the same generation
    assert [x["spec"]["pool"] for x in sim.api.slices()] == [
        {"name": "node01", "generation": 1, "resourceSliceCount": 1}]


def test_simulate_driver_off(sim):
    sim.simulate_driver = False
    sim.on_cm("ADDED", cm("reservedCPUs: 0-1\n"))
    add_pod(sim, driver_pod("d-1"))
    sim.sync_driver("node01")
    assert sim.api.slices() == []


def test_bump_and_delay_modes(sim, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(simmain.time, "monotonic", lambda: clock[0])
    sim.on_cm("ADDED", cm(""))
    node = copy.deepcopy(sim.api.objs["/api/v1/nodes/node01"])
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "delay:5"
    sim.on_node("MODIFIED", node)
    p = driver_pod("d-1", args=[])
    add_pod(sim, p)
    sim.sync_driver("node01")
    assert sim.api.slices() == []
    clock[0] += 6
    sim.sync_driver("node01")
    assert [s["spec"]["pool"]["generation"] for s in sim.api.slices()] == [1]
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "bump:3"
    sim.on_node("MODIFIED", node)
    sim.sync_driver("node01")
    assert [s["spec"]["pool"]["generation"] for s in sim.api.slices()] == [1]
    clock[0] += 4
    sim.sync_driver("node01")
    assert [s["spec"]["pool"]["generation"] for s in sim.api.slices()] == [2]
    clock[0] += 10
    sim.sync_driver("node01")          # bumps once per driver pod
    assert [s["spec"]["pool"]["generation"] for s in sim.api.slices()] == [2]
    # a slice deleted behind the driver's back is restored; with no slice of the pool left, syncPool
    # starts again from generation 0 + 1
    name = sim.api.slices()[0]["metadata"]["name"]
    gone = sim.api.objs.pop(f"{SLICES}/{name}")
    sim.on_slice("DELETED", gone)
    sim.sync_driver("node01")
    assert [s["spec"]["pool"]["generation"] for s in sim.api.slices()] == [1]


def test_sync_pool_bumps_when_a_slice_is_added_and_keeps_slices_when_all_cpus_are_reserved(sim):
    """syncPool: an added slice bumps the generation by one, the matched one is updated in place
    (same name); with every CPU reserved the driver never calls PublishResources, so the slices an
    earlier driver published stay (upstream: PublishResources returns before the helper)."""
    sim.on_cm("ADDED", cm("reservedCPUs: 0-1\ncpuDeviceMode: individual\n"))
    node = copy.deepcopy(sim.api.objs["/api/v1/nodes/node01"])
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "partial:1"   # 2 chunks, 1 published
    sim.on_node("MODIFIED", node)
    p = driver_pod("d-1")
    add_pod(sim, p)
    sim.sync_driver("node01")
    (first,) = [s["metadata"]["name"] for s in sim.api.slices()]
    assert first.startswith("00000-dra.cpu-node01-")
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "partial:2"   # 3 chunks, 2 published
    sim.on_node("MODIFIED", node)
    sim.sync_driver("node01")
    by_name = {s["metadata"]["name"]: s["spec"]["pool"] for s in sim.api.slices()}
    assert sorted(n[:6] for n in by_name) == ["00000-", "00001-"] and first in by_name
    pools = list(by_name.values())
    assert pools == [{"name": "node01", "generation": 2, "resourceSliceCount": 3}] * 2

    sim.on_cm("MODIFIED", cm("reservedCPUs: 0-11\n"))
    sim.on_pod("DELETED", p)
    p3 = driver_pod("d-3", created="2026-01-01T00:02:00Z")
    add_pod(sim, p3)
    sim.sync_driver("node01")
    assert [s["spec"]["pool"] for s in sim.api.slices()] == pools
    assert "no CPUs left after reserving 0-11: not publishing (2 earlier slice(s) stay)" in log_of(sim, p3)
