"""Offline CPU profile of cpu_topology's wait at 1000 nodes x 8 cells (no cluster: a fake API replays
the slices as one list + 1000 ADDED watch events). Load-independent CPU numbers for the latency at
1000 nodes: the wait itself, and what comes after it (topology, table, sizing).

    .venv/bin/python bench/diag/offline_1000.py [--nodes 1000] [--cells 8] [--profile out.txt]
"""
import argparse
import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(REPO, ".collections"))

import timeline  # noqa: E402
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import waiter as W  # noqa: E402
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as M  # noqa: E402


class FakeApi:
    def __init__(self, slices):
        self.slices = slices

    def get_json(self, path, query=None, timeout=None):
        return {"metadata": {"resourceVersion": "1"}, "items": []}

    def watch(self, path, query=None, timeout=None):
        for i, s in enumerate(self.slices):
            s = dict(s)
            s["metadata"] = {"name": f"s{i}", "uid": f"u{i}", "resourceVersion": str(i + 2)}
            yield {"type": "ADDED", "object": s}

    def list_pods(self, *a, **k):
        return []

    def node_exists(self, node):
        return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--cells", type=int, default=8)
    ap.add_argument("--profile")
    a = ap.parse_args()
    sc = timeline.build("spread", a.nodes, a.cells, 1)
    slices = [e.body for e in sorted(sc.events, key=lambda e: e.t)]
    params = {"driver": "dra.cpu", "nodes": sc.targets, "namespace": "x", "pod_selector": "x", "wait": True, "not_ready_nodes": [],
              "timeout": 600, "expected_cells_per_node": None, "expected_cpus_per_node": None,
              "reserved_cpus": "", "min_cell_cpus": None, "log_lines": 0}
    prof = None
    if a.profile:
        import pyinstrument
        prof = pyinstrument.Profiler(interval=0.001)
        prof.start()
    marks = {}
    orig_wait = W.SliceWaiter.wait

    def wait(self, *x, **k):
        c = time.process_time()
        r = orig_wait(self, *x, **k)
        marks["wait_cpu"] = time.process_time() - c
        return r
    W.SliceWaiter.wait = wait
    c0 = time.process_time()
    result, failure = M.run(FakeApi(slices), params, [])
    total = time.process_time() - c0
    if prof:
        prof.stop()
        with open(a.profile, "w") as f:
            f.write(prof.output_text(unicode=False, color=False, show_all=False))
    assert failure is None and not result["pending_nodes"], failure
    from ansible.module_utils.common.parameters import remove_values
    c1 = time.process_time()
    text = json.dumps(remove_values(result, set()))   # what exit_json does with the result
    scrub = time.process_time() - c1
    print(f"{a.nodes} nodes x {a.cells} cells, "
          f"wait ({a.nodes} events) CPU {marks['wait_cpu']:.2f} s, after-wait (topology, table, sizing) CPU "
          f"{total - marks['wait_cpu']:.2f} s, exit_json's scrub + dump of the result {scrub:.2f} s "
          f"({len(text) / 1e6:.2f} MB), peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
