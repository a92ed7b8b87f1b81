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


class FakePublisher:
    """Stands in for `dracpu publish` (the Go driver, tested in tests/cluster/driver): records the
    requests; `start` refuses a pod whose args hold --refuse (exit 1, the Go driver's log line),
    and answers every other start with one log line and pool = node."""

    def __init__(self, sim):
        self.sim = sim
        self.calls = []
        self.started = {}

    def request(self, op, node, **fields):
        self.calls.append((op, node, fields.get("fault") or fields.get("pod", "")))
        if op == "start":
            if "--refuse" in fields["args"]:
                return {"ok": False, "exit": 1, "error": "cannot apply x: refused",
                        "log": ['E1204 22:00:00.000000 1 main.go:54] "failed to load configuration" err="refused"']}
            self.started[node] = fields["pod"]
            self.files = fields["files"]
            self.host_root = fields["hostRoot"]
            return {"ok": True, "pool": node, "devices": 2, "slices": 1, "log": [f"I started {fields['args']}"]}
        if op == "stop":
            self.started.pop(node, None)
        return {"ok": True, "pool": node}

    def running_for(self, node):
        return self.started.get(node, "")

    def ops(self, node="node01"):
        return [(op, arg) for op, n, arg in self.calls if n == node and op != "start"]


@pytest.fixture
def sim(tmp_path, monkeypatch):
    monkeypatch.setattr(simmain, "Api", FakeApi)
    env = {"KUBECONFIG": "x", "CLUSTER_STATE_DIR": str(tmp_path), "CLUSTER_NODES": "2",
           "CLUSTER_SLICE_DELETE_DELAY": "0",
           "CLUSTER_NODE_OVERRIDES": json.dumps({"node02": {"cpu_manager_policy": "none"}})}
    s = simmain.Sim(env)
    s.publisher = FakePublisher(s)
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


def slice_of(sim, node="node01", name="00000-dra.cpu-node01-abcde"):
    pool = {"name": node, "generation": 1, "resourceSliceCount": 1}
    body = {"metadata": {"name": name}, "spec": {"driver": "dra.cpu", "nodeName": node, "pool": pool}}
    sim.api.objs[f"{SLICES}/{name}"] = body
    sim.on_slice("ADDED", body)


def test_driver_lifecycle(sim):
    """Running driver pod -> started in the Go driver with its argv, mounted files and fake sysfs,
    then published once; a new pod restarts it; pod gone -> stopped, slices deleted after the delay."""
    sim.on_cm("ADDED", cm("reservedCPUs: 0-1\n"))
    p = driver_pod("d-1")
    add_pod(sim, p)
    st = pod_status(sim, p)
    assert st["phase"] == "Running" and st["podIP"] == "10.213.1.1"
    assert st["containerStatuses"][0]["ready"] is True
    pub = sim.publisher
    assert pub.files == {"/etc/dracpu/config.yaml": "reservedCPUs: 0-1\n"}
    assert os.path.exists(os.path.join(pub.host_root, "sys/devices/system/cpu/online"))
    assert "I started ['--v=4', '--config=/etc/dracpu/config.yaml']" in log_of(sim, p)
    sim.sync_driver("node01")
    sim.sync_driver("node01")          # published already: nothing sent again
    assert pub.ops() == [("publish", "normal")]
    slice_of(sim)

    sim.on_pod("DELETED", p)
    p2 = driver_pod("d-2", created="2026-01-01T00:01:00Z")
    add_pod(sim, p2)
    sim.sync_driver("node01")
    assert pub.ops()[-1] == ("publish", "normal") and pub.running_for("node01") == "uid-d-2"

    sim.on_pod("DELETED", p2)          # driver gone -> stopped, slices deleted after the (0 s) delay
    sim.sync_driver("node01")
    assert pub.ops()[-1] == ("stop", "") and sim.api.slices() == []


def test_refused_start_crashloops_with_the_drivers_log(sim):
    sim.on_cm("ADDED", cm(""))
    p = driver_pod("d-old", args=["/dracpu", "--refuse"])
    add_pod(sim, p)
    cs = pod_status(sim, p)["containerStatuses"][0]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert '"failed to load configuration" err="refused"' in log_of(sim, p)
    sim.sync_driver("node01")
    assert sim.publisher.ops() == []


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


def test_partial_mode_and_back(sim):
    node = copy.deepcopy(sim.api.objs["/api/v1/nodes/node01"])
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "partial:1"
    sim.on_node("MODIFIED", node)
    sim.on_cm("ADDED", cm(""))
    add_pod(sim, driver_pod("d-1", args=["--reserved-cpus=0-1"]))
    sim.sync_driver("node01")
    sim.sync_driver("node01")
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "normal"
    sim.on_node("MODIFIED", node)
    sim.sync_driver("node01")
    assert sim.publisher.ops() == [("publish", "partial:1"), ("publish", "normal")]


def test_simulate_driver_off(sim):
    sim.simulate_driver = False
    sim.on_cm("ADDED", cm("reservedCPUs: 0-1\n"))
    add_pod(sim, driver_pod("d-1"))
    sim.sync_driver("node01")
    assert sim.api.slices() == []


def test_bump_delay_and_none_modes(sim, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(simmain.time, "monotonic", lambda: clock[0])
    sim.on_cm("ADDED", cm(""))
    node = copy.deepcopy(sim.api.objs["/api/v1/nodes/node01"])
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "delay:5"
    sim.on_node("MODIFIED", node)
    add_pod(sim, driver_pod("d-1", args=[]))
    sim.sync_driver("node01")
    assert sim.publisher.ops() == []
    clock[0] += 6
    sim.sync_driver("node01")
    assert sim.publisher.ops() == [("publish", "normal")]
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "bump:3"
    sim.on_node("MODIFIED", node)
    sim.sync_driver("node01")
    assert sim.publisher.ops()[-1] == ("publish", "normal") and len(sim.publisher.ops()) == 1
    clock[0] += 4
    sim.sync_driver("node01")
    clock[0] += 10
    sim.sync_driver("node01")          # bumps once per driver pod
    assert sim.publisher.ops() == [("publish", "normal"), ("publish", "bump")]
    node["metadata"]["annotations"][DRIVER_MODE_ANNOTATION] = "none"
    sim.on_node("MODIFIED", node)
    sim.sync_driver("node01")
    sim.sync_driver("node01")
    assert sim.publisher.ops()[2:] == [("stop", "")]


def test_a_restarted_go_process_gets_the_running_driver_again(sim):
    sim.on_cm("ADDED", cm(""))
    add_pod(sim, driver_pod("d-1"))
    sim.sync_driver("node01")
    sim.publisher.started.clear()      # what GoPublisher does when its child died
    sim.sync_driver("node01")
    starts = [c for c in sim.publisher.calls if c[0] == "start"]
    assert len(starts) == 2 and sim.publisher.ops() == [("publish", "normal")] * 2
