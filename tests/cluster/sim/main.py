#!/usr/bin/env python3
"""Simulated nodes, kubelets, pods and dra-driver-cpu for the hermetic test cluster (kwok style).

One supervised process (started by tests/cluster/cluster.py), see README.md in this directory:
  - registers Node objects node01..nodeNN with a CPU topology, keeps them Ready (status + Leases)
  - runs ONE kubelet HTTPS server child inside the cluster's network namespace (/configz, logs)
  - drives pods bound to simulated nodes to Running/Ready (or a per-node fault mode)
  - runs driver pods in the Go test driver's publish mode (`dracpu publish`: their pools), deletes
    a gone driver's ResourceSlices after the kubelet's delay

This file owns the process: the shared state (caches of Nodes, Pods, ConfigMaps, ResourceSlices,
runtime records), the keyed work queue with timers and its workers, the start order (kubelet
endpoints, registration, informers, controller) and signal handling. Must not: hold what a node,
pod, driver or fault does; those are the mixins sim_nodes.py, sim_pods.py, sim_driver_publish.py,
sim_faults.py and sim_kubelet_endpoints.py, over this shared state.
"""
from __future__ import annotations

import heapq
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import sim_cpuset as cpuset  # noqa: E402
from sim_api import Api, informer  # noqa: E402
from sim_driver_publish import SLICES, DriverMixin  # noqa: E402
from sim_faults import FaultsMixin  # noqa: E402
from sim_format import iso  # noqa: E402
from sim_go_publisher import GoPublisher, driver_dir  # noqa: E402
from sim_kubelet_endpoints import KubeletEndpointsMixin, PodLogs  # noqa: E402
from sim_nodes import NodesMixin  # noqa: E402
from sim_pods import PodsMixin  # noqa: E402
from sim_node_specs import build_node_specs  # noqa: E402
from sim_topology import SpecError  # noqa: E402

log = logging.getLogger("sim")


class Sim(NodesMixin, PodsMixin, DriverMixin, FaultsMixin, KubeletEndpointsMixin):
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
        self.publisher: GoPublisher | None = None    # the Go driver's publish mode (run())

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
        if self.simulate_driver:
            binary = os.path.join(driver_dir(self.env), "dracpu")
            self.publisher = GoPublisher(binary, self.env["KUBECONFIG"], qps=float(self.env.get("CLUSTER_SIM_QPS") or 200),
                                         burst=int(self.env.get("CLUSTER_SIM_BURST") or 400), on_log=self.on_driver_log)
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
        if self.publisher is not None:
            self.publisher.close()


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
