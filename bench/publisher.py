"""Replays a scenario's schedule against the API server and records when each object was stored.

Clock: ``time.time()`` of this process. For every operation we record ``sent`` (just before the
request) and ``stored`` (when the create/update/delete call returned: the object is in etcd and its
watch event has been emitted by then). Detection latency uses ``stored`` of the last required slice;
a waiter whose process exited before that slice's ``sent`` is a false ready (the few milliseconds
in between are ambiguous and never counted against anybody). metadata.creationTimestamp is not used:
it has one-second resolution.
"""
from __future__ import annotations

import copy
import threading
import time
from concurrent.futures import ThreadPoolExecutor

SLICES = "/apis/resource.k8s.io/v1/resourceslices"


class Publisher:
    def __init__(self, api, workers=16):
        self.api = api
        self.workers = workers
        self.objects = {}     # key -> server object
        self.records = []     # per event: dict(t, op, key, node, sent, stored, name, error, required)
        self.lock = threading.Lock()

    def _do(self, ev):
        rec = {"t": ev.t, "op": ev.op, "key": ev.key, "node": ev.node, "required": ev.required, "note": ev.note}
        rec["sent"] = time.time()
        try:
            if ev.op == "create":
                obj = self.api.create(SLICES, copy.deepcopy(ev.body))
            elif ev.op == "update":
                cur = self.objects[ev.key]
                body = copy.deepcopy(ev.body)
                body["metadata"] = dict(cur["metadata"])
                obj = self.api.req("PUT", f"{SLICES}/{cur['metadata']['name']}", body)
            else:
                cur = self.objects[ev.key]
                self.api.delete(f"{SLICES}/{cur['metadata']['name']}")
                obj = None
            rec["stored"] = time.time()
            if obj is not None:
                rec["name"] = obj["metadata"]["name"]
                with self.lock:
                    self.objects[ev.key] = obj
        except Exception as e:  # noqa: BLE001 -- recorded, reported as a broken pass
            rec["stored"] = time.time()
            rec["error"] = str(e)[:300]
        with self.lock:
            self.records.append(rec)
        return rec

    def apply_now(self, events):
        for ev in events:
            self._do(ev)

    def run(self, events, t0):
        """Issue each event at t0 + ev.t (events of one node strictly in order)."""
        last_of_node = {}
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            for ev in sorted(events, key=lambda e: e.t):
                delay = t0 + ev.t - time.time()
                if delay > 0:
                    time.sleep(delay)
                prev = last_of_node.get(ev.node)
                if prev is not None:
                    prev.result()
                last_of_node[ev.node] = pool.submit(self._do, ev)
        return self.records

    def summary(self):
        errors = [r for r in self.records if r.get("error")]
        lags = [r["sent"] - r.get("t0", 0) for r in self.records]
        req = [r for r in self.records if r["required"]]
        last = max(req, key=lambda r: r["stored"]) if req else None
        return {"errors": errors, "last_required": last, "count": len(self.records), "lags": lags}
