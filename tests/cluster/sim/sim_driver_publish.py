"""A simulated node's dra-driver-cpu at run time, as far as the kubelet side goes.

The driver itself is the Go test driver's publish mode (`dracpu publish`, sim_go_publisher.py):
it parses the flags and config.yaml, reads the node's fake sysfs tree, builds devices and chunks
and publishes them through the library's resourceslice controller, which also adopts slices of an
earlier run, updates them in place, picks generations and restores slices someone deleted.

Owns (a mixin of main.Sim): each node's fake sysfs tree (`<state>/sim/hosts/<digest>/sys`, shared
by nodes of the same hardware), starting a driver container in the Go process (start_driver: the
reply decides Running or CrashLoopBackOff), telling it when to publish under the node's driver
mode (delay, partial, bump, none: harness faults), stopping it when the pod goes, deleting the
node's slices CLUSTER_SLICE_DELETE_DELAY s after the driver went (the kubelet's job), the
ResourceSlice cache for that, and the driver's log lines in the pod's log.
Must not: decide devices, slices, config or refusals (the Go driver), change pod status
(sim_pods.py).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass

import sim_driver_pod
from sim_format import klog
from sim_go_publisher import PublisherError

CLUSTER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if CLUSTER_DIR not in sys.path:
    sys.path.insert(0, CLUSTER_DIR)

import fake_sysfs  # noqa: E402  (tests/cluster: the harness's hardware simulation)

log = logging.getLogger("sim")

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
DRIVER = sim_driver_pod.DRIVER_NAME


@dataclass
class DrvState:
    published_for: str = ""             # "<pod uid>/<fault>" last sent to the Go driver
    published_at: float = 0.0
    bumped_for: str = ""
    pool: str = ""
    gone_since: float | None = None
    noted: str = ""                     # last one-shot log note (avoid repeating)


class DriverMixin:
    hosts_lock = threading.Lock()

    # ------------------------------------------------------------ ResourceSlice cache
    def on_slices(self, items):
        with self.lock:
            self.slices = {s["metadata"]["name"]: s for s in items}

    def on_slice(self, etype, s):
        with self.lock:
            if etype == "DELETED":
                self.slices.pop(s["metadata"]["name"], None)
            else:
                self.slices[s["metadata"]["name"]] = s

    def node_slices(self, node, pool=None):
        with self.lock:
            return [s for s in self.slices.values() if s["spec"].get("driver") == DRIVER and (
                s["spec"].get("nodeName") == node or (pool and (s["spec"].get("pool") or {}).get("name") == pool))]

    # ------------------------------------------------------------ the node's hardware
    def host_root(self, node):
        """The node's fake root (sys/devices/system/{cpu,node}), written once per distinct hardware."""
        spec = self.specs[node]
        t = spec.topology
        key = json.dumps([t.summary(), [(c.id, c.core, c.core_id, c.socket, c.numa) for c in t.cpus],
                          t.smt_control], sort_keys=True)
        root = os.path.join(self.state_dir, "sim", "hosts", hashlib.sha256(key.encode()).hexdigest()[:16])
        with self.hosts_lock:
            if not os.path.exists(os.path.join(root, ".complete")):
                fake_sysfs.write_tree(root, t, t.smt_control)
                with open(os.path.join(root, ".complete"), "w") as f:
                    f.write(key + "\n")
        return root

    # ------------------------------------------------------------ driver log
    def on_driver_log(self, node, uid, line):
        """A log line of the Go driver for the pod `uid` on `node` (publisher reader thread)."""
        with self.lock:
            rt = self.rt.get(uid)
            p = self.pods.get(uid)
        c = sim_driver_pod.driver_container(p) if p else None
        if rt and c:
            self.logs.write(node, rt.ns, rt.name, c["name"], line)

    def driver_log(self, node, uid, sev, msg, src="sim_driver_publish.py"):
        self.on_driver_log(node, uid, klog(sev, msg, src))

    # ------------------------------------------------------------ start (called by sim_pods)
    def start_driver(self, p, rt, c):
        """Start the driver container of pod p in the Go process -> its reply: ok (pool, devices,
        log) or a refusal (exit 2: flag error; 1: config, topology; error, log)."""
        ns = p["metadata"]["namespace"]
        return self.publisher.request(
            "start", rt.node, pod=rt.uid, flavor=sim_driver_pod.image_flavor(c.get("image") or ""),
            args=sim_driver_pod.container_argv(c),
            files=sim_driver_pod.mounted_files(p, c, lambda _ns, name: self.get_cm(ns, name)),
            hostRoot=self.host_root(rt.node))

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

    # ------------------------------------------------------------ the node's publication
    def sync_driver(self, node):
        if not self.simulate_driver:
            return
        with self.lock:
            d = self.drv.setdefault(node, DrvState())
        p, rt = self.running_driver(node)
        if p is None:
            self._driver_gone(node, d)
            return
        if d.gone_since is not None:
            log.info("driver on %s is back (pod %s): slice deletion cancelled", node, p["metadata"]["name"])
        d.gone_since = None
        now = time.monotonic()
        if self.publisher.running_for(node) != rt.uid:
            # the Go process restarted, or another pod of the node was started last
            reply = self.start_driver(p, rt, sim_driver_pod.driver_container(p))
            if not reply.get("ok"):
                raise PublisherError(f"restarting the driver of {node}: {reply.get('error')}")
            d.published_for = ""
        d.pool = rt.cfg.get("pool") or node
        kind, arg = self.driver_mode(node)
        if kind == "none":
            if d.noted != f"none/{rt.uid}":
                d.noted, d.published_for = f"none/{rt.uid}", ""
                self.publisher.request("stop", node)
                log.info("driver on %s: driver-mode none: publishing nothing", node)
                self.driver_log(node, rt.uid, "W", "simulated driver-mode none: not publishing ResourceSlices")
            return
        if kind == "delay" and now < rt.since + arg:
            if d.noted != f"delay/{rt.uid}":
                d.noted = f"delay/{rt.uid}"
                log.info("driver on %s: driver-mode delay: publishing in %.0fs", node, rt.since + arg - now)
            self.after(rt.since + arg - now + 0.01, ("drv", node))
            return
        fault = f"partial:{int(arg)}" if kind == "partial" else "normal"
        if d.published_for != f"{rt.uid}/{fault}":
            self._publish(node, rt, d, fault)
        if kind == "bump" and d.bumped_for != rt.uid:
            due = d.published_at + arg
            if now < due:
                self.after(due - now + 0.01, ("drv", node))
                return
            d.bumped_for = rt.uid
            log.info("driver on %s: driver-mode bump: republishing as the next generation", node)
            self._publish(node, rt, d, "bump")

    def _publish(self, node, rt, d, fault):
        reply = self.publisher.request("publish", node, pod=rt.uid, fault=fault)
        if not reply.get("ok"):
            raise PublisherError(f"publish on {node} ({fault}): {reply.get('error')}")
        if fault != "bump":
            d.published_for = f"{rt.uid}/{fault}"
        d.published_at = time.monotonic()
        log.info("driver on %s: publishing pool %s (%s)", node, reply.get("pool") or d.pool, fault)

    def _driver_gone(self, node, d):
        """No running driver pod: stop the Go driver at once, delete the slices after the delay."""
        if self.publisher is not None and self.publisher.running_for(node):
            self.publisher.request("stop", node)
        d.published_for = d.bumped_for = ""
        mine = self.node_slices(node, d.pool or None)
        if not mine:
            d.gone_since = None
            return
        now = time.monotonic()
        if d.gone_since is None:
            d.gone_since = now
            log.info("driver on %s is gone: deleting its ResourceSlices in %.0fs", node, self.delete_delay)
        due = d.gone_since + self.delete_delay
        if now < due:
            self.after(due - now + 0.01, ("drv", node))
            return
        names = sorted(s["metadata"]["name"] for s in mine)
        with self.lock:
            self.drv[node] = DrvState()
        for n in names:
            self.api.delete(f"{SLICES}/{n}")
        log.info("driver on %s gone for %.0fs: deleted %d ResourceSlice(s)", node, now - d.gone_since, len(names))
