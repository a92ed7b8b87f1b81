"""The slices the bench publishes in the driver's place (its clusters run with
CLUSTER_SIMULATE_DRIVER=false): devices and chunks from the project's Go driver, bodies in the
resourceslice controller's shape.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CLUSTER = os.path.join(REPO, "tests", "cluster")
for _p in (CLUSTER, os.path.join(CLUSTER, "sim")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import fake_sysfs  # noqa: E402  (the harness's hardware simulation)
import sim_topology  # noqa: E402

DRIVER = "dra.cpu"
INDEX_MIN_LENGTH = 5    # the resourceslice controller's minimum index prefix length


@functools.lru_cache(maxsize=1)
def devices_binary() -> str:
    """`devices` of the driver build (DRACPU_TEST_DRIVER_DIR, else tests/cluster/driver/build.sh)."""
    d = os.environ.get("DRACPU_TEST_DRIVER_DIR") or os.environ.get("CLUSTER_DRIVER_DIR") or ""
    if not d:
        out = subprocess.run([os.path.join(CLUSTER, "driver", "build.sh")], check=True, stdout=subprocess.PIPE,
                             text=True)
        d = out.stdout.strip().splitlines()[-1]
    return os.path.join(d, "devices")


@functools.lru_cache(maxsize=None)
def driver_chunks(cpus: int, cells: int, reserved: tuple, mode: str) -> tuple:
    """The driver's (main flavour) chunks of devices for that hardware and config: a tuple of device
    lists (API JSON); () when every CPU is reserved. From the project's driver (tests/cluster/driver, the
    only implementation of upstream's device rules): its `devices <host_root> [flags]` command on a fake
    sysfs tree (fake_sysfs.py) of the node's hardware, once per distinct (CPUs, cells, reserved, mode)."""
    topo = sim_topology.build_topology(cpus=cpus, numa_nodes=cells)
    with tempfile.TemporaryDirectory(prefix="dracpu-bench-sysfs-") as root:
        fake_sysfs.write_tree(root, topo)
        flags = [f"--cpu-device-mode={mode}", f"--reserved-cpus={','.join(str(c) for c in reserved)}"]
        out = subprocess.run([devices_binary(), root, *flags], check=True, stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, DRACPU_FLAVOR="main"))
    got = json.loads(out.stdout)
    by_name = {d["name"]: d for d in got["devices"]}
    return tuple(tuple(by_name[n] for n in names) for names in got["chunks"])


def spread(devices: list, count: int) -> list:
    """count chunks, sizes differing by at most one (front-loaded); some may be empty."""
    base, extra = divmod(len(devices), count)
    out, i = [], 0
    for k in range(count):
        size = base + (1 if k < extra else 0)
        out.append(devices[i:i + size])
        i += size
    return out


def slice_body(node: str, node_uid: str, generation: int, count: int, devices: list, index: int) -> dict:
    prefix = f"{index:0{max(INDEX_MIN_LENGTH, len(format(max(count - 1, 0), 'x')))}x}"
    meta: dict = {"generateName": f"{prefix}-{DRIVER}-{node}-"}
    if node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid,
                                    "controller": True}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta,
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": int(generation), "resourceSliceCount": int(count)},
                     "devices": [json.loads(json.dumps(d)) for d in devices]}}


def pool_slices(node: str, uid: str, cpus: int, cells: int, generation: int, reserved, mode: str,
                min_chunks: int = 1) -> list:
    """All slice bodies of the node's pool at `generation`; [] when every CPU is reserved. Around the
    devices, the resourceslice controller's shape: generateName `<index>-dra.cpu-<node>-`, owner
    reference to the Node, pool {name, generation, resourceSliceCount}. A pool cut into more chunks than
    the driver makes (`min_chunks`, the bench's synthetic cases) spreads the devices evenly over them."""
    chunks = [list(c) for c in driver_chunks(cpus, cells, tuple(reserved), mode)]
    if not chunks:
        return []
    if min_chunks > len(chunks):
        chunks = spread([d for c in chunks for d in c], min_chunks)
    return [slice_body(node, uid, generation, len(chunks), c, i) for i, c in enumerate(chunks)]
