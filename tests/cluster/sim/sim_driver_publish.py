"""The simulated dra-driver-cpu at run time: publishing a node's ResourceSlices like the driver.

Owns: the per-node publisher state (DrvState), the ResourceSlice informer callbacks, finding the
running driver pod of a node, publishing (new generation first, then the old one deleted),
adopting slices after a simulator restart, republishing slices someone deleted, deleting slices
CLUSTER_SLICE_DELETE_DELAY s after the driver went, the driver modes (delay, partial, bump, none),
the "fields dropped" report, and the driver container's log lines.
Must not: compute devices or slice bodies (sim_slices.py, pure), resolve the driver config
(sim_config.py, pure), or change pod status (sim_pods.py). A mixin of main.Sim.
"""
from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass, field

import sim_config
import sim_cpuset as cpuset
import sim_slices
from sim_format import klog

log = logging.getLogger("sim")

SLICES = "/apis/resource.k8s.io/v1/resourceslices"


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


class DriverMixin:
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
        """The ResourceSlice controller's syncPool (k8s.io/dynamic-resource-allocation resourceslice):
        slices of lower generations and those whose name's index prefix matches no desired slice
        are obsolete and deleted first; matched slices are updated in place; the generation is kept
        when no slice is added and at most one changed, bumped by one otherwise (or when the
        driver asks, driver-mode bump); missing slices are created. With no devices at all the
        driver never calls PublishResources (upstream), so earlier slices stay."""
        with self.lock:
            existing = sorted((s for s in self.slices.values()
                               if (s["spec"].get("pool") or {}).get("name") == pool
                               and s["spec"].get("driver") == sim_slices.DRIVER), key=lambda s: s["metadata"]["name"])
        if count == 0:
            with self.lock:
                d.fp, d.pool, d.published_at, d.pod_uid = fp, pool, time.monotonic(), rt.uid
                d.names = [s["metadata"]["name"] for s in existing]
            msg = (f"no CPUs left after reserving {cpuset.format(cfg.reserved_cpus)}: not publishing"
                   + (f" ({len(existing)} earlier slice(s) stay)" if existing else ""))
            log.info("driver on %s: %s", node, msg)
            self.driver_log(node, rt.uid, "I", msg, "driver.go:120")
            return
        gen_of = lambda s: int((s["spec"].get("pool") or {}).get("generation") or 0)  # noqa: E731
        generation = max([gen_of(s) for s in existing] or [0])
        plen = sim_slices.index_length(count)
        matched, obsolete = {}, []
        for s in existing:
            i = sim_slices.decode_index(s["metadata"]["name"], plen) if gen_of(s) == generation else None
            # (driver-mode partial publishes the first k of `count`: the others count as obsolete)
            if i is not None and 0 <= i < len(bodies) and i not in matched:
                matched[i] = s
            else:
                obsolete.append(s)
        if d.pool and d.pool != pool:   # a renamed pool (hostname override): the old one goes
            obsolete += self.node_slices(d.pool, d.pool)
        desired = {"name": pool, "generation": generation, "resourceSliceCount": count}
        changed = {i for i, s in matched.items()
                   if s["spec"].get("pool") != desired or sim_slices.fingerprint([s["spec"].get("devices") or []])
                   != sim_slices.fingerprint([bodies[i]["spec"]["devices"]])}
        new = len(bodies) - len(matched)
        bumped = force or not (new == 0 and len(changed) <= 1)
        if bumped:
            generation += 1
        for s in obsolete:
            self.api.delete(f"{SLICES}/{s['metadata']['name']}")
            with self.lock:
                self.slices.pop(s["metadata"]["name"], None)
        names, devices, updated = [], 0, 0
        for i, b in enumerate(bodies):
            b["spec"]["pool"]["generation"] = generation
            if i in matched:
                if i not in changed and not bumped:
                    names.append(matched[i]["metadata"]["name"])
                    devices += len(b["spec"]["devices"])
                    continue
                body = copy.deepcopy(matched[i])
                body["spec"]["pool"], body["spec"]["devices"] = b["spec"]["pool"], b["spec"]["devices"]
                stored = self.api.update(f"{SLICES}/{body['metadata']['name']}", body)
                updated += 1
            else:
                stored = self.api.create(SLICES, b)
            names.append(stored["metadata"]["name"])
            devices += len(b["spec"]["devices"])
            dropped = sim_slices.dropped_fields(b["spec"]["devices"], stored["spec"].get("devices") or [])
            if dropped:
                gates = " ".join("DRAConsumableCapacity" if f == "allowMultipleAllocations" else f"unknown({f})"
                                 for f in dropped)
                msg = (f'{"update" if i in matched else "create"} ResourceSlice: pool "{pool}", slice #{i}: some '
                       f"fields were dropped by the apiserver, probably because these features are disabled: {gates}")
                log.warning("driver on %s: %s", node, msg)
                self.driver_log(node, rt.uid, "E", msg, "resourceslicecontroller.go:560")
            with self.lock:
                self.slices[stored["metadata"]["name"]] = stored
        with self.lock:
            d.generation, d.fp, d.names, d.pool = generation, fp, names, pool
            d.published_at, d.pod_uid = time.monotonic(), rt.uid
        old = obsolete
        shown = " ".join(f"{x['name']}({x['capacity'][sim_slices.D + 'cpu']['value']})" if "capacity" in x
                         else x["name"] for b in bodies for x in b["spec"]["devices"][:8])
        more = " ..." if devices > 8 else ""
        msg = (f'Published ResourceSlices for pool "{pool}": generation {generation}, {len(bodies)} of {count} '
               f"slice(s), {devices} device(s): {shown}{more}"
               + (" [republished: generation bump]" if force else "")
               + (f"; updated {updated} in place" if updated else "")
               + (f"; deleted {len(old)} obsolete slice(s)" if old else ""))
        log.info("driver on %s: %s", node, msg)
        self.driver_log(node, rt.uid, "I", msg, "resourceslicecontroller.go:420")
