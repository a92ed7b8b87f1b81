#!/usr/bin/env python3
"""Measures `dracpu publish` at scale: N nodes' pools published through N resourceslice controllers.

Not part of the simulator: a tool for its README's figures. Against a running test cluster
(KUBECONFIG), it creates N bare Node objects `pubscale-NNNN` (no kubelet: only the owner the
controllers look up), one fake sysfs tree (CPUS CPUs, CELLS cells) shared by all, starts one
`dracpu publish` (sim_go_publisher.GoPublisher), sends `start` for every node, then `publish` for
every node, and waits until every pool's slice is listed. Prints the start time, the publish time
(first publish request -> N slices listed), the Go process's peak RSS and CPU seconds, then
stops the controllers and deletes the slices and Nodes.

    .venv/bin/python tests/cluster/sim/publish_scale.py 200 [--cpus 8 --cells 1]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
for _p in (HERE, os.path.dirname(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import fake_sysfs  # noqa: E402
from sim_api import Api  # noqa: E402
from sim_go_publisher import GoPublisher, driver_dir  # noqa: E402
from sim_topology import build_topology  # noqa: E402

SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def proc_stats(pid: int) -> tuple[int, float]:
    """(peak RSS in MiB, CPU seconds) of a live process."""
    with open(f"/proc/{pid}/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return peak // 1024, (int(fields[11]) + int(fields[12])) / ticks


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("nodes", type=int)
    ap.add_argument("--cpus", type=int, default=8)
    ap.add_argument("--cells", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900)
    a = ap.parse_args()
    api = Api(os.environ["KUBECONFIG"], qps=200, burst=400)
    names = [f"pubscale-{i:04d}" for i in range(1, a.nodes + 1)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                             "metadata": {"name": n}}), names))
    root = tempfile.mkdtemp(prefix="dracpu-pubscale-")
    fake_sysfs.write_tree(root, build_topology(cpus=a.cpus, numa_nodes=a.cells))
    pub = GoPublisher(os.path.join(driver_dir(os.environ), "dracpu"), os.environ["KUBECONFIG"], 200, 400,
                      on_log=lambda *_: None)
    try:
        t0 = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            replies = list(pool.map(lambda n: pub.request("start", n, pod=f"uid-{n}", args=["--v=1"], hostRoot=root),
                                    names))
        bad = [r for r in replies if not r.get("ok")]
        t1 = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: pub.request("publish", n, pod=f"uid-{n}"), names))
        t2 = time.monotonic()
        count = 0
        while time.monotonic() - t1 < a.timeout:
            items, _ = api.list_all(SLICES, [("fieldSelector", "spec.driver=dra.cpu")])
            count = len({s["spec"]["nodeName"] for s in items if s["spec"]["nodeName"].startswith("pubscale-")})
            if count >= a.nodes:
                break
            time.sleep(0.5)
        t3 = time.monotonic()
        assert pub.proc is not None
        rss, cpu = proc_stats(pub.proc.pid)
        print(f"nodes={a.nodes} cpus={a.cpus} cells={a.cells}: start {t1 - t0:.1f}s ({len(bad)} refused), "
              f"publish requests {t2 - t1:.1f}s, all {count} pools listed {t3 - t1:.1f}s after the first "
              f"publish; dracpu publish peak RSS {rss} MiB, CPU {cpu:.1f}s; load {os.getloadavg()[0]:.1f}")
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: pub.request("stop", n), names))
        t4 = time.monotonic()
        print(f"stop of {a.nodes} controllers {t4 - t3:.1f}s")
    finally:
        pub.close()
        items, _ = api.list_all(SLICES, [("fieldSelector", "spec.driver=dra.cpu")])
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda s: api.delete(f"{SLICES}/{s['metadata']['name']}"),
                          [s for s in items if s["spec"]["nodeName"].startswith("pubscale-")]))
            list(pool.map(lambda n: api.delete(f"/api/v1/nodes/{n}"), names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
