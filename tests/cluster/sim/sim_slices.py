"""ResourceSlices exactly as dra-driver-cpu publishes them (pure).

Input: the node's Topology, the driver's effective DriverConfig and the image flavor.
Output: the device list and the chunked slice bodies for one pool/generation.
Owns: device names, attributes, capacity, order, chunking per release, slice bodies, the
fingerprint used to tell "same content" and the fields an API server dropped.
Must not: create or delete anything (sim_driver_publish.py does) nor resolve the config.
"""
from __future__ import annotations

import hashlib
import json

DRIVER = "dra.cpu"
D = "dra.cpu/"
MAX_DEVICES_PER_SLICE = 128
MAX_DEVICES_PER_SLICE_PCIE = 64


def _int(v):
    return {"int": int(v)}


def _bool(v):
    return {"bool": bool(v)}


def _str(v):
    return {"string": str(v)}


def available_cpus(topo, reserved) -> list:
    """Available CPUs in the order individual mode numbers them (v0.2.0 pkg/driver/dra_hooks.go and
    main pkg/device/builder.go cpuDeviceInfos): walk the available CPUs by id; a CPU whose sibling is
    also available forms a group with it, else it is alone; groups are ordered by their first CPU, the
    lowest *available* id of the core (not the core's lowest id)."""
    res = set(reserved or [])
    sibling = topo.siblings()
    by_id = topo.by_id()
    groups, done = [], set()
    for c in sorted((c for c in topo.cpus if c.id not in res), key=lambda c: c.id):
        if c.id in done:
            continue
        sib = sibling.get(c.id)
        if sib is None or sib in res:
            groups.append([c])
            done.add(c.id)
        else:
            groups.append([c, by_id[sib]])
            done.update((c.id, sib))
    groups.sort(key=lambda g: g[0].id)
    return [c for g in groups for c in g]


def build_devices(topo, cfg) -> list:
    """The devices the driver publishes for this node (before chunking)."""
    main = cfg.flavor == "main"
    avail = available_cpus(topo, cfg.reserved_cpus)
    smt = topo.smt
    devices = []
    if cfg.cpu_device_mode == "individual":
        for n, c in enumerate(avail):
            attrs = {
                D + "numaNodeID": _int(c.numa),
                D + "socketID": _int(c.socket),
                D + "smtEnabled": _bool(smt),
                D + "cacheL3ID": _int(c.l3),
                D + "coreType": _str("standard"),
                D + "coreID": _int(c.core_id),
                D + "cpuID": _int(c.id),
                "dra.net/numaNode": _int(c.numa),
            }
            if main:
                attrs["resource.kubernetes.io/numaNode"] = _int(c.numa)
            devices.append({"name": f"cpudev{n:03d}", "attributes": attrs})
        return devices

    def grouped(name, cpus, attrs):
        if not cpus and cfg.group_by != "machine":
            return  # an empty NUMA node or socket is not published; cpudevmachine always is (capacity 0)
        attrs[D + "numCPUs"] = _int(len(cpus))
        devices.append({
            "name": name,
            "allowMultipleAllocations": True,
            "attributes": attrs,
            "capacity": {D + "cpu": {"value": str(len(cpus))}},
        })

    if cfg.group_by == "numanode":
        for numa in sorted(topo.cells):
            cpus = [c for c in avail if c.numa == numa]
            sock = min((c.socket for c in cpus), default=0)
            attrs = {
                D + "numaNodeID": _int(numa),
                D + "socketID": _int(sock),
                D + "smtEnabled": _bool(smt),
                "dra.net/numaNode": _int(numa),
            }
            if main:
                attrs["resource.kubernetes.io/numaNode"] = _int(numa)
            grouped(f"cpudevnuma{numa:03d}", cpus, attrs)
    elif cfg.group_by == "socket":
        for sock in sorted({c.socket for c in topo.cpus}):
            cpus = [c for c in avail if c.socket == sock]
            grouped(f"cpudevsocket{sock:03d}", cpus, {D + "socketID": _int(sock), D + "smtEnabled": _bool(smt)})
    else:
        grouped("cpudevmachine", avail, {D + "smtEnabled": _bool(smt)})
    return devices


def chunk(devices: list, max_per: int, min_chunks: int = 1) -> list:
    """Split into ceil(n/max_per) chunks (at least min_chunks; then spread evenly, chunks may be empty)."""
    n = len(devices)
    natural = max(1, -(-n // max_per))
    count = max(natural, int(min_chunks))
    if count == natural:
        return [devices[i * max_per:(i + 1) * max_per] for i in range(count)]
    base, extra = divmod(n, count)
    out, i = [], 0
    for k in range(count):
        size = base + (1 if k < extra else 0)
        out.append(devices[i:i + size])
        i += size
    return out


def chunks_for(devices: list, cfg, min_chunks: int = 1) -> list:
    """Chunking as the release does it: v0.1/v0.2 chunk only individual mode, main chunks every mode."""
    max_per = MAX_DEVICES_PER_SLICE_PCIE if cfg.expose_pcie_roots else MAX_DEVICES_PER_SLICE
    if cfg.flavor != "main" and cfg.cpu_device_mode != "individual" and min_chunks <= 1:
        return [devices]
    return chunk(devices, max_per, min_chunks)


INDEX_MIN_LENGTH = 5   # resourceslice controller: resourceSliceIndexMinLength


def index_length(count: int) -> int:
    """getIndexLength: hex digits of the highest slice index, at least INDEX_MIN_LENGTH."""
    return max(INDEX_MIN_LENGTH, len(format(max(count - 1, 0), "x")))


def decode_index(name: str, length: int):
    """decodeIndex: the slice index from a name's hex prefix of exactly `length` digits, else None."""
    prefix, sep, _ = name.partition("-")
    if not sep or len(prefix) != length:
        return None
    try:
        return int(prefix, 16)
    except ValueError:
        return None


def generate_name(node: str, flavor: str, index: int = 0, count: int = 1) -> str:
    """v0.1: <node>-dra.cpu-; later releases (the controller's scheme): <index as hex>-dra.cpu-<node>-."""
    if flavor == "v0.1":
        return f"{node}-{DRIVER}-"
    return f"{index:0{index_length(count)}x}-{DRIVER}-{node}-"


def slice_body(node: str, node_uid: str, pool: str, generation: int, count: int, devices: list,
               flavor: str, owner_name: str | None = None, index: int = 0) -> dict:
    owner = owner_name or node
    meta = {"generateName": generate_name(node, flavor, index, count)}
    if node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": owner, "uid": node_uid,
                                    "controller": True}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": meta,
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": pool, "generation": int(generation), "resourceSliceCount": int(count)},
            "devices": devices,
        },
    }


def build_slices(topo, cfg, node: str, node_uid: str, generation: int, min_chunks: int = 1) -> list:
    """All slice bodies of the pool at `generation`; [] when every CPU is reserved."""
    devices = build_devices(topo, cfg)
    if not devices:
        return []
    parts = chunks_for(devices, cfg, min_chunks)
    return [slice_body(node, node_uid, node, generation, len(parts), d, cfg.flavor, index=i)
            for i, d in enumerate(parts)]


def strip_dropped(devices: list) -> list:
    """Devices without the fields an API server may drop (for comparing intent with storage)."""
    out = []
    for d in devices or []:
        d = {k: v for k, v in d.items() if k != "allowMultipleAllocations"}
        out.append(d)
    return out


def fingerprint(chunks: list) -> str:
    """Stable digest of the per-chunk device lists (ignoring fields the server may drop)."""
    norm = sorted(json.dumps(strip_dropped(c), sort_keys=True) for c in chunks)
    return hashlib.sha256(json.dumps(norm).encode()).hexdigest()[:16]


def dropped_fields(sent: list, stored: list) -> list:
    """Names of fields present in what was sent but missing in what the server stored."""
    stored_by_name = {d.get("name"): d for d in stored or []}
    dropped = set()
    for d in sent or []:
        s = stored_by_name.get(d.get("name"))
        if s is None:
            dropped.add("devices")
            continue
        for k in d:
            if k not in s:
                dropped.add(k)
    return sorted(dropped)
