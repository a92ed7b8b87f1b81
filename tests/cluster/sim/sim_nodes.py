"""Simulated nodes: Node objects, their status and Leases (the kubelet's part of a node's life).

Owns: the Node body (labels, read-only sim.dra-cpu.kubevirtci.io/ annotations, taints), the node
status (capacity, allocatable, conditions, addresses, nodeInfo), registration, Lease renewal and
status heartbeats in batches, and reacting to Node events (re-posting Ready status; a fault
annotation change marks the node's pods and driver for a new sync).
Must not: drive pods (sim_pods.py), publish ResourceSlices (sim_driver_publish.py) or decide
fault modes (sim_faults.py). A mixin of main.Sim: the shared state lives there.
"""
import json
import logging
import time
from concurrent.futures import wait

import sim_cpuset as cpuset
from sim_api import STRATEGIC, ApiError
from sim_format import h, iso, micro
from sim_faults import DRIVER_MODE_ANNOTATION, POD_FAULT_ANNOTATION

log = logging.getLogger("sim")

A = "sim.dra-cpu.kubevirtci.io/"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


class NodesMixin:
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
