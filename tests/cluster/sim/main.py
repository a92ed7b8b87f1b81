#!/usr/bin/env python3
"""Simulated nodes, kubelets, pods and dra-driver-cpu for the hermetic test cluster (kwok style).

One supervised process (started by tests/cluster/cluster.py), see README.md in this directory:
  - registers Node objects node01..nodeNN with a CPU topology, keeps them Ready (status + Leases)
  - runs ONE kubelet HTTPS server child inside the cluster's network namespace (/configz, logs)
  - drives pods bound to simulated nodes to Running/Ready (or a per-node fault mode)
  - plays dra-driver-cpu for running driver pods: publishes/replaces/deletes ResourceSlices
"""
from __future__ import annotations

import datetime
import hashlib
import heapq
import ipaddress
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import sim_config  # noqa: E402
import sim_cpuset as cpuset  # noqa: E402
import sim_slices  # noqa: E402
from sim_api import MERGE, STRATEGIC, Api, ApiError, informer  # noqa: E402
from sim_topology import (DRIVER_MODE_ANNOTATION, POD_FAULT_ANNOTATION, SpecError, build_node_specs,  # noqa: E402
                          parse_driver_mode, parse_pod_fault)

log = logging.getLogger("sim")

A = "sim.dra-cpu.kubevirtci.io/"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
CRASH_BACKOFF = [10, 20, 40, 80, 160, 300]


def wall():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(t=None):
    return (t or wall()).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro(t=None):
    return (t or wall()).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(s):
    try:
        return datetime.datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return None


def klog(sev, msg, src="driver.go:1"):
    t = wall()
    return f"{sev}{t.strftime('%m%d %H:%M:%S.%f')}       1 {src}] {msg}"


def h(*parts, n=64):
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()[:n]


# --------------------------------------------------------------------------- container logs

class PodLogs:
    """<dir>/<node>/<ns>_<pod>/<container>.log, lines '<RFC3339Nano> <text>' (read by kubelet_server)."""

    def __init__(self, root):
        self.root = root
        self.lock = threading.Lock()
        os.makedirs(root, exist_ok=True)

    def path(self, node, ns, pod, container):
        return os.path.join(self.root, node, f"{ns}_{pod}", f"{container}.log")

    def reset(self, node, ns, pod, containers):
        d = os.path.join(self.root, node, f"{ns}_{pod}")
        os.makedirs(d, exist_ok=True)
        for c in containers:
            open(os.path.join(d, f"{c}.log"), "w").close()

    def write(self, node, ns, pod, container, *lines):
        p = self.path(node, ns, pod, container)
        with self.lock:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "a") as f:
                for ln in lines:
                    f.write(f"{micro()} {ln}\n")

    def remove(self, node, ns, pod):
        d = os.path.join(self.root, node, f"{ns}_{pod}")
        try:
            for x in os.listdir(d):
                os.unlink(os.path.join(d, x))
            os.rmdir(d)
        except OSError:
            pass


# --------------------------------------------------------------------------- runtime records

@dataclass
class PodRt:
    uid: str
    node: str
    ns: str
    name: str
    first_seen: float                   # monotonic
    start_time: str                     # status.startTime
    state: str = ""                     # creating | running | crash
    since: float = 0.0                  # monotonic: entered state
    transition: str = ""                # iso: entered state
    started_at: str = ""                # iso: current container start
    restarts: int = 0
    last_term: dict = field(default_factory=dict)
    next_restart: float = 0.0
    reason: str = ""                    # crash/creating reason text
    crash_containers: tuple = ()
    cfg: object = None                  # DriverConfig for driver pods
    last_sent: str = ""
    pod_ip: str = ""
    is_driver: bool = False


@dataclass
class DrvState:
    generation: int = 0
    pool: str = ""
    fp: str = ""
    names: list = field(default_factory=list)
    published_at: float = 0.0
    bumped_for: str = ""
    gone_since: float | None = None
    pod_uid: str = ""
    noted: str = ""                     # last one-shot log note (avoid repeating)


class Sim:
    def __init__(self, env):
        self.env = env
        self.specs = {s.name: s for s in build_node_specs(env)}
        self.order = sorted(self.specs)
        self.state_dir = env.get("CLUSTER_STATE_DIR") or os.path.join(os.getcwd(), ".cluster")
        self.simulate_driver = (env.get("CLUSTER_SIMULATE_DRIVER") or "true").lower() in ("true", "1", "yes")
        self.delete_delay = float(env.get("CLUSTER_SLICE_DELETE_DELAY") or 30)
        n = len(self.specs)
        self.lease_interval = float(env.get("CLUSTER_SIM_LEASE_INTERVAL") or (10 if n <= 200 else min(20, n / 50)))
        self.status_interval = float(env.get("CLUSTER_SIM_STATUS_INTERVAL") or (60 if n <= 200 else 300))
        self.api = Api(env["KUBECONFIG"], qps=float(env.get("CLUSTER_SIM_QPS") or 200),
                       burst=int(env.get("CLUSTER_SIM_BURST") or 400))
        self.netns = env.get("CLUSTER_NETNS") or ""
        self.stop = threading.Event()
        self.lock = threading.RLock()
        self.cv = threading.Condition(self.lock)
        self.nodes: dict = {}          # name -> Node object
        self.pods: dict = {}           # uid -> Pod object (simulated nodes only)
        self.pods_by_node: dict = {n_: set() for n_ in self.specs}
        self.cms: dict = {}            # (ns, name) -> ConfigMap
        self.slices: dict = {}         # name -> ResourceSlice (driver dra.cpu)
        self.rt: dict = {}             # uid -> PodRt
        self.drv: dict = {}            # node -> DrvState
        self.dirty: set = set()
        self.inflight: set = set()
        self.redo: set = set()
        self.timers: list = []
        self.seq = 0
        self.pod_ip_seq: dict = {}
        self.warned: set = set()
        self.workers = ThreadPoolExecutor(max_workers=int(env.get("CLUSTER_SIM_WORKERS") or 8),
                                          thread_name_prefix="work")
        self.beat = ThreadPoolExecutor(max_workers=int(env.get("CLUSTER_SIM_HEARTBEAT_WORKERS") or 16),
                                       thread_name_prefix="beat")
        self.logs = PodLogs(os.path.join(self.state_dir, "sim", "logs"))
        self.child = None
        self.registered: set = set()

    # ------------------------------------------------------------------ queue / timers
    def mark(self, *keys):
        with self.cv:
            self.dirty.update(keys)
            self.cv.notify()

    def after(self, seconds, key):
        with self.cv:
            self.seq += 1
            heapq.heappush(self.timers, (time.monotonic() + max(0.0, seconds), self.seq, key))
            self.cv.notify()

    def controller_loop(self):
        while not self.stop.is_set():
            with self.cv:
                now = time.monotonic()
                while self.timers and self.timers[0][0] <= now:
                    self.dirty.add(heapq.heappop(self.timers)[2])
                if not self.dirty:
                    wait_s = min(1.0, self.timers[0][0] - now) if self.timers else 1.0
                    self.cv.wait(max(0.01, wait_s))
                    continue
                keys, self.dirty = self.dirty, set()
                run = []
                for k in keys:
                    if k in self.inflight:
                        self.redo.add(k)
                    else:
                        self.inflight.add(k)
                        run.append(k)
            for k in run:
                self.workers.submit(self._run, k)

    def _run(self, key):
        try:
            kind, arg = key
            if kind == "pod":
                self.sync_pod(arg)
            elif kind == "drv":
                self.sync_driver(arg)
            elif kind == "status":
                self.post_status(arg)
        except Exception:  # noqa: BLE001
            log.exception("sync %s failed; retrying in 2s", key)
            self.after(2, key)
        finally:
            with self.cv:
                self.inflight.discard(key)
                if key in self.redo:
                    self.redo.discard(key)
                    self.dirty.add(key)
                    self.cv.notify()

    def warn_once(self, key, msg, *args):
        if key not in self.warned:
            self.warned.add(key)
            log.warning(msg, *args)

    # ------------------------------------------------------------------ node objects
    def node_labels(self, s):
        labels = {"kubernetes.io/hostname": s.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}
        labels.update(s.labels)
        return labels

    def node_annotations(self, s):
        t = s.topology
        ann = {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            A + "simulated": "true",
            A + "topology": json.dumps(t.summary(), sort_keys=True),
            A + "numa-nodes": str(len(t.cells)),
            A + "cpus": str(len(t.cpus)),
            A + "sockets": str(t.sockets),
            A + "threads-per-core": str(t.threads_per_core),
            A + "cpu-manager-policy": s.cpu_manager_policy,
            A + "spec-pod-fault": s.pod_fault,
            A + "spec-driver-mode": s.driver_mode,
        }
        for i, ids in sorted(t.cells.items()):
            ann[A + f"numa{i}-cpus"] = cpuset.format(ids)
        ann.update(s.annotations)
        return ann

    def node_body(self, s):
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": s.name, "labels": self.node_labels(s), "annotations": self.node_annotations(s)},
                "spec": {"taints": s.taints} if s.taints else {}}

    def node_status(self, s):
        now = iso()
        cap = {"cpu": str(s.cpu_capacity), "memory": s.memory, "pods": str(s.pods),
               "ephemeral-storage": "50Gi", "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
        alloc = dict(cap)
        m = s.allocatable_cpu_millis()
        alloc["cpu"] = str(m // 1000) if m % 1000 == 0 else f"{m}m"

        def cond(t, st, reason, msg):
            return {"type": t, "status": st, "reason": reason, "message": msg, "lastHeartbeatTime": now,
                    "lastTransitionTime": self.boot_time}
        return {"status": {
            "capacity": cap, "allocatable": alloc,
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            # only InternalIP: the API server's default preferred address types try Hostname first
            "addresses": [{"type": "InternalIP", "address": s.address}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": h("machine", s.name, n=32), "systemUUID": h("uuid", s.name, n=32),
                "bootID": h("boot", s.name, self.boot_time, n=32),
                "kernelVersion": s.kernel_version, "osImage": s.os_image,
                "containerRuntimeVersion": s.container_runtime, "kubeletVersion": s.kubelet_version,
                "operatingSystem": "linux", "architecture": "amd64",
            },
        }}

    def register_nodes(self):
        existing, _ = self.api.list_all("/api/v1/nodes")
        have = {n["metadata"]["name"]: n for n in existing}
        leases = {x["metadata"]["name"] for x in self.api.list_all(LEASES)[0]}

        def one(name):
            s = self.specs[name]
            if name not in have:
                try:
                    obj = self.api.create("/api/v1/nodes", self.node_body(s))
                except ApiError as e:
                    if e.status != 409:
                        raise
                    obj = self.api.get(f"/api/v1/nodes/{name}")
            else:
                cur = have[name]
                taints = list((cur.get("spec") or {}).get("taints") or [])
                keys = {(t.get("key"), t.get("effect")) for t in taints}
                taints += [t for t in s.taints if (t.get("key"), t.get("effect")) not in keys]
                patch = {"metadata": {"labels": self.node_labels(s), "annotations": self.node_annotations(s)}}
                if s.taints:
                    patch["spec"] = {"taints": taints}
                obj = self.api.patch(f"/api/v1/nodes/{name}", patch)
            with self.lock:
                self.nodes[name] = obj
            self.api.patch(f"/api/v1/nodes/{name}/status", self.node_status(s), STRATEGIC)
            self.renew_lease(name, obj["metadata"]["uid"], exists=name in leases)
            with self.lock:
                self.registered.add(name)
            return name

        futs = [self.beat.submit(one, n) for n in self.order]
        wait(futs)
        errors = [f.exception() for f in futs if f.exception()]
        if errors:
            raise RuntimeError(f"{len(errors)} node(s) failed to register, first: {errors[0]}")

    def renew_lease(self, name, uid=None, exists=True):
        path = f"{LEASES}/{name}"
        try:
            if not exists:
                raise ApiError(404, "", "PATCH", path)
            self.api.patch(path, {"spec": {"renewTime": micro(), "holderIdentity": name,
                                           "leaseDurationSeconds": 40}})
        except ApiError as e:
            if e.status != 404:
                raise
            if uid is None:
                with self.lock:
                    uid = ((self.nodes.get(name) or {}).get("metadata") or {}).get("uid")
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": "kube-node-lease"},
                    "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": micro()}}
            if uid:
                body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]
            try:
                self.api.create(LEASES, body)
            except ApiError as e2:
                if e2.status != 409:
                    raise

    def heartbeat_loop(self):
        next_lease = time.monotonic() + self.lease_interval
        next_status = time.monotonic() + self.status_interval
        while not self.stop.wait(max(0.1, min(next_lease, next_status) - time.monotonic())):
            now = time.monotonic()
            if now >= next_lease:
                next_lease = now + self.lease_interval
                self._batch("lease", self.renew_lease)
            if now >= next_status:
                next_status = now + self.status_interval
                self._batch("status", self.post_status)

    def post_status(self, name):
        self.api.patch(f"/api/v1/nodes/{name}/status", self.node_status(self.specs[name]), STRATEGIC)

    def _batch(self, what, fn):
        t0 = time.monotonic()
        with self.lock:
            names = sorted(self.registered)
        futs = {self.beat.submit(fn, n): n for n in names}
        wait(futs)
        bad = [(futs[f], f.exception()) for f in futs if f.exception()]
        for n, e in bad[:3]:
            log.warning("%s %s: %s", what, n, e)
        if len(bad) > 3:
            log.warning("%s: %d more failures", what, len(bad) - 3)
        dt = time.monotonic() - t0
        if dt > self.lease_interval / 2:
            log.warning("%s renewal of %d nodes took %.1fs", what, len(futs), dt)

    # ------------------------------------------------------------------ informers
    def on_nodes(self, items):
        with self.lock:
            self.nodes.update({n["metadata"]["name"]: n for n in items if n["metadata"]["name"] in self.specs})
        self.mark(*[("drv", n) for n in self.specs])

    def on_node(self, etype, obj):
        name = obj["metadata"]["name"]
        if name not in self.specs:
            return
        with self.lock:
            old = self.nodes.get(name)
            if etype == "DELETED":
                self.nodes.pop(name, None)
                log.warning("node %s was deleted by someone else (the simulator does not re-register it)", name)
                return
            self.nodes[name] = obj
            oldann = ((old or {}).get("metadata") or {}).get("annotations") or {}
            newann = obj["metadata"].get("annotations") or {}
            changed = any(oldann.get(k) != newann.get(k) for k in (POD_FAULT_ANNOTATION, DRIVER_MODE_ANNOTATION))
            uids = list(self.pods_by_node.get(name, ()))
        ready = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
        if name in self.registered and (not ready or ready[0].get("status") != "True"):
            # the node lifecycle controller marked it Unknown (e.g. missed heartbeats): the kubelet
            # posts its (Ready) status again on its next status update
            self.warn_once(("unready", name, ready[0].get("lastTransitionTime") if ready else ""),
                           "node %s is %s on the server: posting Ready status", name,
                           ready[0].get("reason") if ready else "without Ready condition")
            self.after(1, ("status", name))
        if changed or old is None:
            log.info("node %s: pod-fault=%s driver-mode=%s", name, self.pod_fault(name), self.driver_mode(name))
            self.mark(*[("pod", u) for u in uids], ("drv", name))

    def on_pods(self, items):
        with self.lock:
            seen = set()
            for p in items:
                if self._store_pod(p):
                    seen.add(p["metadata"]["uid"])
            for uid in list(self.pods):
                if uid not in seen:
                    self._forget_pod(uid)
            keys = [("pod", u) for u in self.pods]
        self.mark(*keys, *[("drv", n) for n in self.specs])

    def _store_pod(self, p):
        node = (p.get("spec") or {}).get("nodeName")
        if node not in self.specs:
            return False
        uid = p["metadata"]["uid"]
        self.pods[uid] = p
        self.pods_by_node[node].add(uid)
        return True

    def _forget_pod(self, uid):
        p = self.pods.pop(uid, None)
        rt = self.rt.pop(uid, None)
        if p:
            node = p["spec"]["nodeName"]
            self.pods_by_node[node].discard(uid)
            if rt:
                self.logs.remove(node, rt.ns, rt.name)
            return node
        return None

    def on_pod(self, etype, p):
        node = (p.get("spec") or {}).get("nodeName")
        if node not in self.specs:
            return
        uid = p["metadata"]["uid"]
        with self.lock:
            if etype == "DELETED":
                self._forget_pod(uid)
            else:
                self._store_pod(p)
        self.mark(("pod", uid))
        if sim_config.driver_container(p) is not None:
            self.mark(("drv", node))

    def on_cms(self, items):
        with self.lock:
            self.cms = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in items}
            keys = [("pod", u) for u in self.pods]
        self.mark(*keys)

    def on_cm(self, etype, c):
        k = (c["metadata"]["namespace"], c["metadata"]["name"])
        with self.lock:
            if etype == "DELETED":
                self.cms.pop(k, None)
            else:
                self.cms[k] = c
            # pods waiting for this ConfigMap (mount) in that namespace
            keys = [("pod", u) for u, p in self.pods.items() if p["metadata"]["namespace"] == k[0]
                    and self.rt.get(u) is not None and self.rt[u].state == "creating"]
        self.mark(*keys)

    def on_slices(self, items):
        with self.lock:
            self.slices = {s["metadata"]["name"]: s for s in items}

    def on_slice(self, etype, s):
        name = s["metadata"]["name"]
        with self.lock:
            if etype == "DELETED":
                self.slices.pop(name, None)
                for node, d in self.drv.items():
                    if name in d.names:
                        d.names = [x for x in d.names if x != name]
                        d.fp = ""           # the real publisher restores deleted slices
                        log.info("slice %s of node %s deleted by someone else: republishing", name, node)
                        self.mark(("drv", node))
            else:
                self.slices[name] = s

    def get_cm(self, ns, name):
        with self.lock:
            return self.cms.get((ns, name))

    # ------------------------------------------------------------------ faults
    def pod_fault(self, node):
        with self.lock:
            ann = (((self.nodes.get(node) or {}).get("metadata") or {}).get("annotations") or {})
        v = ann.get(POD_FAULT_ANNOTATION)
        if v is not None:
            try:
                return parse_pod_fault(v)
            except SpecError as e:
                self.warn_once(("pf", node, v), "node %s: ignoring annotation: %s", node, e)
        return parse_pod_fault(self.specs[node].pod_fault)

    def driver_mode(self, node):
        with self.lock:
            ann = (((self.nodes.get(node) or {}).get("metadata") or {}).get("annotations") or {})
        v = ann.get(DRIVER_MODE_ANNOTATION)
        if v is not None:
            try:
                return parse_driver_mode(v)
            except SpecError as e:
                self.warn_once(("dm", node, v), "node %s: ignoring annotation: %s", node, e)
        return parse_driver_mode(self.specs[node].driver_mode)

    # ------------------------------------------------------------------ pods
    def alloc_pod_ip(self, node):
        s = self.specs[node]
        with self.lock:
            k = self.pod_ip_seq.get(node, 0)
            self.pod_ip_seq[node] = k + 1
        base = ipaddress.ip_address("100.64.0.0") + (s.index << 8)
        return str(base + (k % 254) + 1)

    def sync_pod(self, uid):
        with self.lock:
            p = self.pods.get(uid)
            rt = self.rt.get(uid)
        if p is None:
            return
        meta, spec = p["metadata"], p["spec"]
        node = spec["nodeName"]
        if meta.get("deletionTimestamp"):
            # the kubelet stopped the containers: remove the pod for good
            self.api.delete(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                            {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                             "preconditions": {"uid": uid}})
            if rt and rt.is_driver:
                self.mark(("drv", node))
            return
        if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        containers = [c["name"] for c in spec.get("containers") or []]
        if rt is None:
            st = p.get("status") or {}
            started = parse_iso(st.get("startTime"))
            age = (wall() - started).total_seconds() if started else 0.0
            rt = PodRt(uid=uid, node=node, ns=meta["namespace"], name=meta["name"],
                       first_seen=time.monotonic() - max(0.0, age), start_time=st.get("startTime") or iso())
            rt.is_driver = sim_config.driver_container(p) is not None
            rt.pod_ip = self.specs[node].address if spec.get("hostNetwork") else (st.get("podIP") or self.alloc_pod_ip(node))
            # adopt a container already running (simulator restart) instead of restarting it
            for cs in st.get("containerStatuses") or []:
                if (cs.get("state") or {}).get("running"):
                    rt.started_at = cs["state"]["running"].get("startedAt", "")
                rt.restarts = max(rt.restarts, int(cs.get("restartCount") or 0))
            if not rt.started_at:
                self.logs.reset(node, rt.ns, rt.name, containers)
            with self.lock:
                if uid not in self.pods:
                    return
                self.rt[uid] = rt
        want, reason, crash_containers = self.desired_state(p, rt)
        now = time.monotonic()
        if want != rt.state:
            self.enter(p, rt, want, reason, crash_containers)
        elif want == "crash" and now >= rt.next_restart:
            self.crash_again(p, rt)
        elif want == "creating" and reason != rt.reason:
            rt.reason = reason
        if rt.state == "crash":
            self.after(rt.next_restart - now + 0.01, ("pod", uid))
        status = self.pod_status(p, rt)
        digest = h(json.dumps(status, sort_keys=True))
        if digest != rt.last_sent:
            try:
                self.api.patch(f"/api/v1/namespaces/{rt.ns}/pods/{rt.name}/status", {"status": status}, STRATEGIC)
            except ApiError as e:
                if e.status == 404:
                    return
                raise
            rt.last_sent = digest

    def desired_state(self, p, rt):
        """-> (creating|running|crash, reason, crashing containers)."""
        node = rt.node
        fault, arg = self.pod_fault(node)
        missing = sim_config.missing_configmaps(p, self.get_cm)
        if missing:
            return "creating", f'MountVolume.SetUp failed for volume: configmap "{missing[0]}" not found', ()
        if fault == "never":
            return "creating", "", ()
        if fault == "delay" and time.monotonic() < rt.first_seen + arg:
            self.after(rt.first_seen + arg - time.monotonic() + 0.01, ("pod", rt.uid))
            return "creating", "", ()
        names = tuple(c["name"] for c in p["spec"].get("containers") or [])
        if fault == "crashloop":
            return "crash", "simulated crash (pod-fault crashloop)", names
        if rt.is_driver and self.simulate_driver:
            if rt.state == "running" and rt.cfg is not None:
                return "running", "", ()     # the driver reads its config once, at start
            c = sim_config.driver_container(p)
            try:
                rt.cfg = sim_config.resolve(p, self.get_cm, c)
            except sim_config.ConfigMapMissing as e:
                return "creating", str(e), ()
            except sim_config.DriverConfigError as e:
                rt.cfg = None
                return "crash", str(e), (c["name"],)
        return "running", "", ()

    def enter(self, p, rt, want, reason, crash_containers):
        prev = rt.state
        rt.state, rt.reason, rt.crash_containers = want, reason, crash_containers
        rt.since, rt.transition = time.monotonic(), iso()
        node = rt.node
        if want == "running":
            if not rt.started_at or prev:
                rt.started_at = iso()
                if prev == "crash":
                    rt.restarts += 1
                for c in p["spec"].get("containers") or []:
                    if rt.is_driver and c is sim_config.driver_container(p) and self.simulate_driver:
                        self.driver_start_log(p, rt, c)
                    else:
                        self.logs.write(node, rt.ns, rt.name, c["name"],
                                        f"simulated container {c['name']} ({c.get('image', '')}) started on {node}")
            log.info("pod %s/%s on %s: Running%s", rt.ns, rt.name, node, " (driver)" if rt.is_driver else "")
            if rt.is_driver and self.specs[node].cpu_manager_policy == "static":
                self.warn_once(("static", node), "driver pod runs on %s whose kubelet has cpuManagerPolicy=static "
                               "(the real driver's CPU preparation would conflict there)", node)
            if rt.is_driver:
                self.mark(("drv", node))
        elif want == "crash":
            rt.next_restart = 0  # first crash happens now
            self.crash_again(p, rt)
            log.info("pod %s/%s on %s: CrashLoopBackOff: %s", rt.ns, rt.name, node, reason)
            if rt.is_driver:
                self.mark(("drv", node))
        else:
            log.info("pod %s/%s on %s: ContainerCreating%s", rt.ns, rt.name, node, f" ({reason})" if reason else "")
            if prev and rt.is_driver:
                self.mark(("drv", node))

    def crash_again(self, p, rt):
        """One (more) container start that fails at once."""
        start = iso()
        if rt.next_restart:            # a restart happened
            rt.restarts += 1
        rt.last_term = {"exitCode": 1, "reason": "Error", "startedAt": start, "finishedAt": iso(),
                        "containerID": self.container_id(rt, rt.crash_containers[0] if rt.crash_containers else "")}
        backoff = CRASH_BACKOFF[min(rt.restarts, len(CRASH_BACKOFF) - 1)]
        rt.next_restart = time.monotonic() + backoff
        for c in p["spec"].get("containers") or []:
            if c["name"] not in rt.crash_containers:
                continue
            if rt.is_driver and c is sim_config.driver_container(p):
                self.logs.write(rt.node, rt.ns, rt.name, c["name"],
                                klog("I", f"dra-driver-cpu {self._version(c)} starting (simulated) on {rt.node}",
                                     "main.go:80"),
                                klog("E", rt.reason, "main.go:95"),
                                klog("F", f"failed to start the driver: {rt.reason}", "main.go:96"))
            else:
                self.logs.write(rt.node, rt.ns, rt.name, c["name"],
                                f"simulated container {c['name']} starting", f"fatal: {rt.reason}; exit 1")

    def container_id(self, rt, cname):
        rtm = self.specs[rt.node].container_runtime.split("://", 1)[0] or "cri-o"
        return f"{rtm}://{h(rt.uid, cname, rt.restarts)}"

    def pod_status(self, p, rt):
        spec = p["spec"]
        node = self.specs[rt.node]
        creating = rt.state == "creating"
        statuses = []
        for c in spec.get("containers") or []:
            image = c.get("image", "")
            cs = {"name": c["name"], "image": image, "imageID": "", "restartCount": rt.restarts,
                  "ready": False, "started": False}
            if creating:
                w = {"reason": "ContainerCreating"}
                cs["state"] = {"waiting": w}
                cs["restartCount"] = 0 if not rt.restarts else rt.restarts
            elif rt.state == "crash" and c["name"] in rt.crash_containers:
                cs["imageID"] = f"{image.split('@')[0]}@sha256:{h('img', image)}"
                cs["state"] = {"waiting": {"reason": "CrashLoopBackOff",
                                           "message": f"back-off {CRASH_BACKOFF[min(rt.restarts, 5)]}s restarting "
                                                      f"failed container={c['name']} pod={rt.name}_{rt.ns}({rt.uid})"}}
                cs["lastState"] = {"terminated": rt.last_term}
                cs["containerID"] = rt.last_term.get("containerID", "")
            else:
                cs["imageID"] = f"{image.split('@')[0]}@sha256:{h('img', image)}"
                cs["containerID"] = self.container_id(rt, c["name"])
                cs["state"] = {"running": {"startedAt": rt.started_at or iso()}}
                cs["ready"] = cs["started"] = True
                if rt.last_term and rt.restarts:
                    cs["lastState"] = {"terminated": rt.last_term}
            statuses.append(cs)
        all_ready = all(cs["ready"] for cs in statuses)
        unready = [cs["name"] for cs in statuses if not cs["ready"]]

        def cond(t, ok, reason=""):
            d = {"type": t, "status": "True" if ok else "False", "lastProbeTime": None,
                 "lastTransitionTime": rt.transition or iso()}
            if not ok and reason:
                d["reason"] = reason
                d["message"] = f"containers with unready status: [{' '.join(unready)}]"
            return d
        inits = spec.get("initContainers") or []
        status = {
            "phase": "Pending" if creating else "Running",
            "conditions": [
                cond("PodReadyToStartContainers", not creating),
                cond("Initialized", not (creating and inits)),
                cond("ContainersReady", all_ready, "ContainersNotReady"),
                cond("Ready", all_ready, "ContainersNotReady"),
                {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                 "lastTransitionTime": rt.start_time},
            ],
            "hostIP": node.address, "hostIPs": [{"ip": node.address}],
            "startTime": rt.start_time,
            "containerStatuses": statuses,
        }
        if not creating or spec.get("hostNetwork"):
            status["podIP"] = rt.pod_ip
            status["podIPs"] = [{"ip": rt.pod_ip}]
        if inits:
            status["initContainerStatuses"] = [
                {"name": c["name"], "image": c.get("image", ""), "imageID": "", "restartCount": 0, "ready": not creating,
                 "started": False,
                 "state": ({"waiting": {"reason": "PodInitializing"}} if creating else
                           {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": rt.start_time,
                                           "finishedAt": rt.start_time,
                                           "containerID": self.container_id(rt, c["name"])}})}
                for c in inits]
        return status

    # ------------------------------------------------------------------ driver
    @staticmethod
    def _version(c):
        img = c.get("image", "")
        last = img.split("@")[0].rsplit("/", 1)[-1]
        return last.split(":", 1)[1] if ":" in last else "(untagged)"

    def driver_start_log(self, p, rt, c):
        cfg = rt.cfg
        s = self.specs[rt.node]
        t = s.topology
        lines = [klog("I", f"dra-driver-cpu {self._version(c)} starting (simulated by tests/cluster/sim) on {rt.node}",
                      "main.go:80")]
        if cfg is not None:
            if cfg.config_path:
                lines.append(klog("I", f"Read driver config file {cfg.config_path} ({cfg.config_source})", "config.go:60"))
            lines.append(klog("I", f"Effective configuration: {cfg.describe()}", "main.go:120"))
            cells = ", ".join(f"NUMA {i}: {cpuset.format(ids)}" for i, ids in sorted(t.cells.items()))
            avail = [c_.id for c_ in t.cpus if c_.id not in set(cfg.reserved_cpus)]
            lines.append(klog("I", f"CPU topology: {len(t.cpus)} CPUs, {t.sockets} socket(s), "
                                   f"{t.threads_per_core} thread(s) per core, {cells}; reserved "
                                   f"{cpuset.format(cfg.reserved_cpus) or 'none'}, available "
                                   f"{cpuset.format(avail) or 'none'}", "cpuinfo.go:140"))
        self.logs.write(rt.node, rt.ns, rt.name, c["name"], *lines)

    def driver_log(self, node, uid, sev, msg, src="driver.go:300"):
        with self.lock:
            rt = self.rt.get(uid)
            p = self.pods.get(uid)
        if rt and p:
            c = sim_config.driver_container(p)
            self.logs.write(node, rt.ns, rt.name, c["name"], klog(sev, msg, src))

    def running_driver(self, node):
        """(pod, rt) of the newest running driver pod on the node, or (None, None)."""
        best = (None, None)
        with self.lock:
            for uid in self.pods_by_node.get(node, ()):
                p, rt = self.pods[uid], self.rt.get(uid)
                if rt is None or not rt.is_driver or rt.state != "running" or rt.cfg is None:
                    continue
                if p["metadata"].get("deletionTimestamp"):
                    continue
                if best[0] is None or p["metadata"].get("creationTimestamp", "") > best[0]["metadata"].get(
                        "creationTimestamp", ""):
                    best = (p, rt)
        return best

    def node_slices(self, node, pool=None):
        with self.lock:
            return [s for s in self.slices.values() if s["spec"].get("driver") == sim_slices.DRIVER and (
                s["spec"].get("nodeName") == node or (pool and (s["spec"].get("pool") or {}).get("name") == pool))]

    def sync_driver(self, node):
        if not self.simulate_driver:
            return
        with self.lock:
            d = self.drv.setdefault(node, DrvState())
        p, rt = self.running_driver(node)
        now = time.monotonic()
        if p is None:
            mine = self.node_slices(node, d.pool or None)
            if not mine and not d.names:
                d.gone_since = None
                return
            if d.gone_since is None:
                d.gone_since = now
                log.info("driver on %s is gone: deleting its ResourceSlices in %.0fs", node, self.delete_delay)
            due = d.gone_since + self.delete_delay
            if now < due:
                self.after(due - now + 0.01, ("drv", node))
                return
            names = sorted({s["metadata"]["name"] for s in mine} | set(d.names))
            with self.lock:
                self.drv[node] = DrvState()
            for n in names:
                self.api.delete(f"{SLICES}/{n}")
            log.info("driver on %s gone for %.0fs: deleted %d ResourceSlice(s)", node, now - d.gone_since, len(names))
            return
        if d.gone_since is not None:
            log.info("driver on %s is back (pod %s): slice deletion cancelled", node, p["metadata"]["name"])
        d.gone_since = None
        cfg = rt.cfg
        kind, arg = self.driver_mode(node)
        if kind == "none":
            if d.noted != f"none/{rt.uid}":
                d.noted = f"none/{rt.uid}"
                log.info("driver on %s: driver-mode none: publishing nothing", node)
                self.driver_log(node, rt.uid, "W", "simulated driver-mode none: not publishing ResourceSlices")
            return
        if kind == "delay" and now < rt.since + arg:
            if d.noted != f"delay/{rt.uid}":
                d.noted = f"delay/{rt.uid}"
                log.info("driver on %s: driver-mode delay: publishing in %.0fs", node, rt.since + arg - now)
            self.after(rt.since + arg - now + 0.01, ("drv", node))
            return
        pool = (cfg.hostname_override or node).lower()
        with self.lock:
            owner = self.nodes.get(pool)
        if owner is None:
            msg = f'failed to get node "{pool}": nodes "{pool}" not found'
            if d.noted != f"owner/{rt.uid}/{pool}":
                d.noted = f"owner/{rt.uid}/{pool}"
                log.warning("driver on %s: %s", node, msg)
                self.driver_log(node, rt.uid, "E", msg)
            self.after(10, ("drv", node))
            return
        topo = self.specs[node].topology
        k = int(arg) if kind == "partial" else 0
        min_chunks = k + 1 if kind == "partial" else 1
        bodies = sim_slices.build_slices(topo, cfg, pool, owner["metadata"]["uid"], 0, min_chunks)
        publish = bodies[:k] if kind == "partial" else bodies
        fp = f"{pool}/{len(bodies)}/" + sim_slices.fingerprint([b["spec"]["devices"] for b in publish])
        if not d.fp and d.generation == 0:
            d.generation, d.fp, d.names = self.adopt(pool, node)
            d.pool = pool if d.fp else ""
        force = False
        if d.fp == fp:
            if kind == "bump" and d.bumped_for != rt.uid:
                due = d.published_at + arg
                if now < due:
                    self.after(due - now + 0.01, ("drv", node))
                    return
                d.bumped_for = rt.uid
                force = True
                log.info("driver on %s: driver-mode bump: republishing as the next generation", node)
            else:
                return
        self.publish(node, rt, d, pool, cfg, publish, len(bodies), fp, force)
        if kind == "bump" and d.bumped_for != rt.uid:
            self.after(arg + 0.01, ("drv", node))

    def adopt(self, pool, node):
        """Slices already stored for this pool (simulator restart) -> (generation, fingerprint, names)."""
        with self.lock:
            ss = [s for s in self.slices.values() if s["spec"].get("driver") == sim_slices.DRIVER
                  and (s["spec"].get("pool") or {}).get("name") == pool]
        if not ss:
            return 0, "", []
        gen = max(int(s["spec"]["pool"].get("generation") or 0) for s in ss)
        top = sorted((s for s in ss if int(s["spec"]["pool"].get("generation") or 0) == gen),
                     key=lambda s: (s["spec"].get("devices") or [{}])[0].get("name", ""))
        count = int(top[0]["spec"]["pool"].get("resourceSliceCount") or len(top))
        fp = f"{pool}/{count}/" + sim_slices.fingerprint([s["spec"].get("devices") or [] for s in top])
        return gen, fp, [s["metadata"]["name"] for s in top]

    def publish(self, node, rt, d, pool, cfg, bodies, count, fp, force):
        with self.lock:
            gens = [int((s["spec"].get("pool") or {}).get("generation") or 0) for s in self.slices.values()
                    if (s["spec"].get("pool") or {}).get("name") == pool and s["spec"].get("driver") == sim_slices.DRIVER]
        gen = max([d.generation] + gens) + 1
        old = {s["metadata"]["name"] for s in self.node_slices(node, pool)} | set(d.names)
        if d.pool and d.pool != pool:
            old |= {s["metadata"]["name"] for s in self.node_slices(d.pool, d.pool)}
        created, devices = [], 0
        for i, b in enumerate(bodies):
            b["spec"]["pool"]["generation"] = gen
            stored = self.api.create(SLICES, b)
            created.append(stored["metadata"]["name"])
            devices += len(b["spec"]["devices"])
            dropped = sim_slices.dropped_fields(b["spec"]["devices"], stored["spec"].get("devices") or [])
            if dropped:
                gates = " ".join("DRAConsumableCapacity" if f == "allowMultipleAllocations" else f"unknown({f})"
                                 for f in dropped)
                msg = (f'create ResourceSlice: pool "{pool}", slice #{i}: some fields were dropped by the '
                       f"apiserver, probably because these features are disabled: {gates}")
                log.warning("driver on %s: %s", node, msg)
                self.driver_log(node, rt.uid, "E", msg, "resourceslicecontroller.go:560")
            with self.lock:
                self.slices[stored["metadata"]["name"]] = stored
        with self.lock:
            d.generation, d.fp, d.names, d.pool = gen, fp, created, pool
            d.published_at, d.pod_uid = time.monotonic(), rt.uid
        for n in sorted(old - set(created)):   # new generation first, then the old one goes
            self.api.delete(f"{SLICES}/{n}")
        if count == 0:
            msg = (f"no CPUs left after reserving {cpuset.format(cfg.reserved_cpus)}: publishing no devices"
                   + (f" (removed {len(old)} old slice(s))" if old else ""))
        else:
            names = " ".join(f"{x['name']}({x['capacity'][sim_slices.D + 'cpu']['value']})" if "capacity" in x
                             else x["name"] for b in bodies for x in b["spec"]["devices"][:8])
            more = " ..." if devices > 8 else ""
            msg = (f'Published ResourceSlices for pool "{pool}": generation {gen}, {len(bodies)} of {count} '
                   f"slice(s), {devices} device(s): {names}{more}"
                   + (" [republished: generation bump]" if force else "")
                   + (f"; deleted {len(old - set(created))} slice(s) of older generations" if old - set(created) else ""))
        log.info("driver on %s: %s", node, msg)
        self.driver_log(node, rt.uid, "I", msg, "resourceslicecontroller.go:420")

    # ------------------------------------------------------------------ kubelet server child
    def state_file(self):
        return os.path.join(self.state_dir, "sim", "kubelets.json")

    def write_state(self):
        data = {"logDir": self.logs.root, "nodes": {
            s.address: {"name": s.name, "configz": {"kubeletconfig": s.kubelet_config()}}
            for s in self.specs.values()}}
        p = self.state_file()
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p + ".tmp", "w") as f:
            json.dump(data, f)
        os.replace(p + ".tmp", p)

    def netns_iface(self):
        want = self.env.get("CLUSTER_NETNS_IFACE")
        if want:
            return want
        cidr = ipaddress.ip_network(self.env.get("CLUSTER_NODE_CIDR") or "10.213.0.0/16", strict=False)
        out = subprocess.run(["ip", "-n", self.netns, "-o", "-4", "addr", "show"], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[2] == "inet" and ipaddress.ip_address(parts[3].split("/")[0]) in cidr:
                return parts[1].split("@")[0]
        out = subprocess.run(["ip", "-n", self.netns, "-o", "link"], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            name = line.split(":")[1].strip().split("@")[0]
            if name != "lo":
                return name
        raise RuntimeError(f"no interface found in network namespace {self.netns}")

    def setup_netns(self):
        iface = self.netns_iface()
        cmds = "".join(f"addr replace {s.address}/32 dev {iface}\n" for s in self.specs.values())
        r = subprocess.run(["ip", "-n", self.netns, "-force", "-batch", "-"], input=cmds, capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise RuntimeError(f"adding node addresses in {self.netns}: {r.stderr.strip()}")
        log.info("added %d node address(es) to %s in network namespace %s", len(self.specs), iface, self.netns)

    def start_child(self):
        cmd = ["ip", "netns", "exec", self.netns, sys.executable, os.path.join(HERE, "kubelet_server.py"),
               "--state", self.state_file(), "--cert-dir", os.path.join(self.state_dir, "sim", "kubelet-pki")]
        self.child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
        log.info("kubelet server started (pid %d) in network namespace %s", self.child.pid, self.netns)

    def supervise_child(self):
        while not self.stop.wait(2):
            if self.child and self.child.poll() is not None and not self.stop.is_set():
                log.warning("kubelet server exited with %s: restarting", self.child.returncode)
                self.start_child()

    def stop_child(self):
        c = self.child
        if c and c.poll() is None:
            c.terminate()
            try:
                c.wait(5)
            except subprocess.TimeoutExpired:
                c.kill()
                c.wait(5)

    # ------------------------------------------------------------------ main
    def run(self):
        self.boot_time = iso()
        ready = os.path.join(self.state_dir, "sim.ready")
        if os.path.exists(ready):
            os.unlink(ready)
        log.info("simulating %d node(s) (%s); driver simulation %s, slice delete delay %.0fs, lease every %.0fs",
                 len(self.specs), ", ".join(self.order[:5]) + (" ..." if len(self.order) > 5 else ""),
                 "on" if self.simulate_driver else "off", self.delete_delay, self.lease_interval)
        for s in list(self.specs.values())[:20]:
            t = s.topology
            log.info("  %s %s: %d CPUs, NUMA %s, %d socket(s) x %d thread(s)/core, cpuManagerPolicy=%s, %s, "
                     "pod-fault=%s driver-mode=%s", s.name, s.address, len(t.cpus),
                     " ".join(cpuset.format(v) for _, v in sorted(t.cells.items())), t.sockets, t.threads_per_core,
                     s.cpu_manager_policy, s.container_runtime, s.pod_fault, s.driver_mode)
        self.write_state()
        if self.netns:
            self.setup_netns()
            self.start_child()
            threading.Thread(target=self.supervise_child, name="child", daemon=True).start()
        else:
            log.info("CLUSTER_NETNS is empty: no kubelet endpoints (/configz, logs) are served")
        t0 = time.monotonic()
        # heartbeats run while registering (1,000 nodes take a while): registered nodes stay Ready
        threading.Thread(target=self.heartbeat_loop, name="heartbeat", daemon=True).start()
        self.register_nodes()
        log.info("registered %d node(s) in %.1fs", len(self.specs), time.monotonic() - t0)
        synced = []
        watches = [("nodes", "/api/v1/nodes", [], self.on_nodes, self.on_node),
                   ("configmaps", "/api/v1/configmaps", [], self.on_cms, self.on_cm),
                   ("pods", "/api/v1/pods", [("fieldSelector", "spec.nodeName!=")], self.on_pods, self.on_pod)]
        if self.simulate_driver:
            watches.insert(0, ("resourceslices", SLICES, [("fieldSelector", "spec.driver=dra.cpu")],
                               self.on_slices, self.on_slice))
        for name, path, q, on_list, on_ev in watches:
            ev = threading.Event()
            synced.append(ev)
            threading.Thread(target=informer, name=f"watch-{name}", daemon=True,
                             args=(self.api, name, path, q, on_list, on_ev, self.stop, ev)).start()
            ev.wait(60)   # in order: slices known before pods are driven
        threading.Thread(target=self.controller_loop, name="controller", daemon=True).start()
        with open(ready + ".tmp", "w") as f:
            f.write(f"{len(self.specs)}\n")
        os.replace(ready + ".tmp", ready)
        log.info("ready: %d node(s) registered (%s)", len(self.specs), ready)
        last = time.monotonic()
        while not self.stop.wait(1):
            if time.monotonic() - last >= 300:
                last = time.monotonic()
                with self.lock:
                    log.info("alive: %d pods on simulated nodes, %d dra.cpu slices, %d API requests so far",
                             len(self.pods), len(self.slices), self.api.count)
        log.info("stopping")
        self.stop_child()


def main():
    logging.basicConfig(level=logging.DEBUG if os.environ.get("SIM_DEBUG") else logging.INFO,
                        format="%(asctime)s.%(msecs)03d %(levelname)s %(threadName)s: %(message)s",
                        datefmt="%Y-%m-%dT%H:%M:%S", stream=sys.stdout)
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    try:
        sim = Sim(os.environ)
    except (SpecError, cpuset.CpusetError) as e:
        log.error("invalid simulated node specification: %s", e)
        return 2

    def on_signal(signum, _frame):
        log.info("received signal %d", signum)
        sim.stop.set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        sim.run()
    except Exception:  # noqa: BLE001
        log.exception("simulator failed")
        sim.stop.set()
        sim.stop_child()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
