# -*- coding: utf-8 -*-
"""DIAGNOSTIC ONLY (bench/diag/playbook_offline_1000.py): a callback plugin that loads automatically
(CALLBACK_NEEDS_ENABLED False) when ANSIBLE_CALLBACK_PLUGINS names this directory and
DIAG_OFFLINE_NODES is set. It implements no callback method (send_callback never copies a result for
it); its __init__, in the ansible-playbook process before any worker forks, replaces the cluster for
cpu_topology's run with bench/diag/offline_1000.py's kind of fake API (a list + one ADDED watch event
per slice of bench/timeline.py's "spread" 1000 x 8 schedule) and timestamps:
  wait_end       SliceWaiter.wait returned (the module's "wait satisfied")
  action_return  runner.run_in_process returned (the action plugin's result is built)
  worker_sent    the worker put the result on the queue (WorkerProcess._run returned)
as JSON lines in $DIAG_MARKS. With $DIAG_PROFILE_WORKER=<path> the cpu_topology task's worker runs under
cProfile (stats dumped to <path>); with $DIAG_PROFILE_MAIN_AFTER=<path> ansible-playbook's main thread is
profiled from the moment the cpu_topology result is taken off the queue. Also marked: main_result_seen,
main_result_done (the strategy's processing of that result), atexit_last. Nothing here is product code.
"""
from __future__ import annotations

import json
import os
import sys
import time

from ansible.plugins.callback import CallbackBase

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(os.path.dirname(HERE))


def _mark(tag, **extra):
    path = os.environ.get("DIAG_MARKS")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(dict(tag=tag, t=time.time(), pid=os.getpid(), **extra)) + "\n")


class _GcTimer:
    """Time spent in the cyclic garbage collector (gc.callbacks), per generation."""

    def __init__(self):
        self.total = {0: 0.0, 1: 0.0, 2: 0.0}
        self.count = {0: 0, 1: 0, 2: 0}
        self._t = None
        import gc
        gc.callbacks.append(self._cb)

    def _cb(self, phase, info):
        if phase == "start":
            self._t = time.perf_counter()
        elif self._t is not None:
            g = info["generation"]
            self.total[g] += time.perf_counter() - self._t
            self.count[g] += 1

    def summary(self):
        return {"gc_s": round(sum(self.total.values()), 4), "gc_gen2_s": round(self.total[2], 4),
                "gc_runs": dict(self.count)}


class FakeApi:
    """The API calls of run_cpu_topology without `nodes`: the release's DaemonSet, its pods (one per
    node), an empty slice list, then one watch delivering every slice."""

    def __init__(self, nodes, cells):
        if BENCH not in sys.path:
            sys.path.insert(0, BENCH)
        import timeline
        sc = timeline.build("spread", nodes, cells, 1)
        self.targets = list(sc.targets)
        self.slices = [e.body for e in sorted(sc.events, key=lambda e: e.t)]

    def get_json(self, path, query=None, timeout=None):
        if "daemonsets" in path:
            return {"items": [{"metadata": {"name": "dra-driver-cpu", "annotations": {
                "meta.helm.sh/release-name": "dra-driver-cpu", "meta.helm.sh/release-namespace": "dra-driver-cpu"}},
                "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "dra-driver-cpu"}}}}]}
        return {"metadata": {"resourceVersion": "1"}, "items": []}

    def list_pods(self, namespace, label_selector=None):
        return [{"metadata": {"name": "p-%s" % n, "uid": "pu-%s" % n}, "spec": {"nodeName": n},
                 "status": {"phase": "Running"}} for n in self.targets]

    def watch(self, path, query=None, timeout=None):
        for i, s in enumerate(self.slices):
            s = dict(s)
            s["metadata"] = {"name": "s%d" % i, "uid": "u%d" % i, "resourceVersion": str(i + 2)}
            yield {"type": "ADDED", "object": s}

    def node_exists(self, node):
        return True

    def list_nodes(self):
        return []


class _FakeClient:
    client = None


_WORKER = {}


def _patch_worker(nodes, cells):
    """In the cpu_topology task's worker (after the fork): the fake API and the marks. Done here, not
    in ansible-playbook's process, so that process imports nothing it would not import anyway."""
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as kc
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as R, waiter as W
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import runner

    def get_api_client(module=None, **kwargs):
        return _FakeClient()
    kc.get_api_client = get_api_client
    act = sys.modules.get("ansible_collections.kubevirtci.dra_cpu.plugins.action.cpu_topology")
    if act is not None:
        act.get_api_client = get_api_client
    R.RawApi = lambda _client: FakeApi(nodes, cells)

    orig_wait = W.SliceWaiter.wait

    def wait(self, *a, **k):
        r = orig_wait(self, *a, **k)
        _mark("wait_end")
        return r
    W.SliceWaiter.wait = wait

    orig_run = runner.run_in_process

    def run_in_process(*a, **k):
        r = orig_run(*a, **k)
        _mark("action_return")
        _WORKER["gc"] = _GcTimer()   # from here to the send: ansible-core's handling in the worker
        return r
    runner.run_in_process = run_in_process


def _install():
    nodes = int(os.environ["DIAG_OFFLINE_NODES"])
    cells = int(os.environ.get("DIAG_OFFLINE_CELLS", "8"))

    from ansible.executor.process import worker as WP
    orig_worker_run = WP.WorkerProcess._run

    def worker_run(self):
        if "cpu_topology" not in (self._task.action or ""):
            return orig_worker_run(self)
        _patch_worker(nodes, cells)
        profile = os.environ.get("DIAG_PROFILE_WORKER")
        if not profile:
            try:
                return orig_worker_run(self)
            finally:
                _mark("worker_sent", **(_WORKER["gc"].summary() if "gc" in _WORKER else {}))
        import cProfile
        prof = cProfile.Profile()
        try:
            return prof.runcall(orig_worker_run, self)
        finally:
            _mark("worker_sent")
            prof.dump_stats(profile)

    WP.WorkerProcess._run = worker_run

    # ansible-playbook's own process: when the cpu_topology result is on the results deque, mark it
    # and (with $DIAG_PROFILE_MAIN_AFTER=<path>) profile this thread from there to the atexit handlers
    import atexit
    from ansible.plugins.strategy import StrategyBase
    orig_process = StrategyBase._process_pending_results
    state = {"seen": False, "prof": None}

    def process_pending_results(self, *a, **k):
        if not state["seen"] and any("cpu_topology" in (r.task.action or "") for r in list(self._results)):
            state["seen"] = True
            import gc
            _mark("main_result_seen", gc_tracked=len(gc.get_objects()), kubernetes_in_main="kubernetes" in sys.modules)
            state["gc"] = _GcTimer()
            if os.environ.get("DIAG_MAIN_GC_FREEZE"):   # what-if only: ansible-core's process, not ours to tune
                import gc
                gc.freeze()
            path = os.environ.get("DIAG_PROFILE_MAIN_AFTER")
            if path:
                import cProfile
                state["prof"] = cProfile.Profile()
                state["prof"].enable()

                def dump():
                    state["prof"].disable()
                    state["prof"].dump_stats(path)
                atexit.register(dump)
            r = orig_process(self, *a, **k)
            _mark("main_result_done")
            return r
        return orig_process(self, *a, **k)
    StrategyBase._process_pending_results = process_pending_results

    if os.environ.get("DIAG_TRACE_GETVARS"):
        # which get_vars calls come after the cpu_topology result (each walks the facts: namespace_facts
        # and clean_facts), with the caller and the task
        import traceback
        from ansible.vars.manager import VariableManager
        orig_get_vars = VariableManager.get_vars

        def get_vars(self, *a, **k):
            t0 = time.time()
            r = orig_get_vars(self, *a, **k)
            if state["seen"]:
                caller = traceback.extract_stack(limit=3)[0]
                sys.stderr.write("DIAG get_vars %.3f s task=%r caller=%s:%d %s\n" % (
                    time.time() - t0, k.get("task"), caller.filename.rsplit("/", 3)[-1], caller.lineno, caller.name))
            return r
        VariableManager.get_vars = get_vars
    atexit.register(lambda: _mark("atexit_last", **(state["gc"].summary() if state.get("gc") else {})))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "diag_offline_api"
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        if os.environ.get("DIAG_OFFLINE_NODES"):
            _install()
