"""Simulated pods: what the kubelet does with every pod bound to a simulated node.

Owns: the pod runtime records (PodRt), the Pod and ConfigMap informer callbacks, the pod state
machine (ContainerCreating while a ConfigMap volume is missing or a fault holds it, Running,
CrashLoopBackOff with the kubelet's back-off), the pod status sent to the API server, deletion of
terminating pods, pod IPs and container ids.
Must not: publish ResourceSlices (sim_driver_publish.py: it is told through mark(("drv", node))),
touch Node objects (sim_nodes.py) or parse fault annotations (sim_faults.py). A mixin of main.Sim.
"""
from __future__ import annotations

import ipaddress
import json
import logging
import time
from dataclasses import dataclass, field

import sim_driver_pod
from sim_api import STRATEGIC, ApiError
from sim_format import h, iso, klog, parse_iso, wall

log = logging.getLogger("sim")

CRASH_BACKOFF = [10, 20, 40, 80, 160, 300]


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
    cfg: dict | None = None             # driver pods: the Go driver's start reply (pool, devices, log)
    crash_log: list = field(default_factory=list)   # driver pods: the log of a refused start
    crash_exit: int = 1                 # driver pods: its exit status (2: a flag error)
    last_sent: str = ""
    pod_ip: str = ""
    is_driver: bool = False


class PodsMixin:
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
        if sim_driver_pod.driver_container(p) is not None:
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

    def get_cm(self, ns, name):
        with self.lock:
            return self.cms.get((ns, name))

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
            rt.is_driver = sim_driver_pod.driver_container(p) is not None
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
        missing = sim_driver_pod.missing_configmaps(p, self.get_cm)
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
            c = sim_driver_pod.driver_container(p)
            reply = self.start_driver(p, rt, c)   # the Go driver's verdict (sim_driver_publish.py)
            if reply.get("ok"):
                rt.cfg = reply
                return "running", "", ()
            rt.cfg, rt.crash_log, rt.crash_exit = None, list(reply.get("log") or []), int(reply.get("exit") or 1)
            return "crash", reply.get("error") or f"exit status {reply.get('exit')}", (c["name"],)
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
                    if rt.is_driver and c is sim_driver_pod.driver_container(p) and self.simulate_driver:
                        self.logs.write(node, rt.ns, rt.name, c["name"], *(rt.cfg or {}).get("log", []))
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
        rt.last_term = {"exitCode": rt.crash_exit if rt.is_driver else 1, "reason": "Error", "startedAt": start,
                        "finishedAt": iso(),
                        "containerID": self.container_id(rt, rt.crash_containers[0] if rt.crash_containers else "")}
        backoff = CRASH_BACKOFF[min(rt.restarts, len(CRASH_BACKOFF) - 1)]
        rt.next_restart = time.monotonic() + backoff
        for c in p["spec"].get("containers") or []:
            if c["name"] not in rt.crash_containers:
                continue
            if rt.is_driver and c is sim_driver_pod.driver_container(p):
                self.logs.write(rt.node, rt.ns, rt.name, c["name"],
                                *(rt.crash_log or [klog("E", rt.reason, "sim_pods.py")]))
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
