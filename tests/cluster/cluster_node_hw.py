"""A real node's simulated CPU hardware: the one part of a real node these machines cannot have.

Owns, per real node (CLUSTER_REAL_NODES):
- its spec: KUBEVIRT_NUM_VCPU / KUBEVIRT_NUM_NUMA_NODES, overridden per node by the JSON knob
  CLUSTER_REAL_NODE_OVERRIDES (`{"real01": {"cpus": 16, "numa_nodes": 1, ...}}`, keys SPEC_KEYS;
  the simulated nodes' CLUSTER_NODE_OVERRIDES refuses names it does not know), numbered as the
  simulator numbers CPUs (sim/sim_topology.py);
- the fake sysfs tree, <node>/mnt/var/lib/kubelet/plugins/dracpu-host/sys/devices/system/{cpu,node}
  (fake_sysfs.py writes it): inside the node's mount namespace that directory is
  /var/lib/kubelet/plugins/dracpu-host, under the kubelet plugins directory every chart version
  mounts into the driver container, so the driver reads it as upstream reads $HOST_ROOT/sys
  (the image sets HOST_ROOT, cluster_images.py); and a fake /proc/cpuinfo beside it;
- the shell lines (run.sh, after the node's own bind mounts) that bind-mount the tree over
  /sys/devices/system/{cpu,node} and the file over /proc/cpuinfo in that mount namespace only, so the
  real kubelet (cAdvisor) reports capacity.cpu = the node's CPUs and its NUMA cells too;
- `hardware: machine` instead (real pinning, issue 37 item 4): the node's CPU hardware is the
  machine's own (its online CPUs and NUMA cells, machine_hw): no fake tree, no /proc/cpuinfo, the
  real /sys/devices/system/{cpu,node} bind-mounted at the driver's $HOST_ROOT path instead, and no
  CPU-id mapping in the runc wrapper (runc_cpu_args): the driver pins to CPUs the kernel has, so a
  container's own Cpus_allowed_list is what the driver asked for;
- the kubelet settings the spec decides (cpuManagerPolicy; reserved CPUs for `static`), the
  labels the node registers with (`labels`, the kubelet's --node-labels) and its own taints
  (`taints`, the kubelet's registerWithTaints, beside the real-node taint of cluster_real_node.py).
Facts: docs/upstream.md ("Real nodes").
Must not: start processes, or touch anything outside the node's directory.
"""
import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "sim"))

import sim_topology  # noqa: E402
from fake_sysfs import cpuinfo, pcie_roots, write_pcie_roots, write_tree  # noqa: E402

from cluster_images import HOST_ROOT  # noqa: E402

SPEC_KEYS = {"cpus", "numa_nodes", "cells", "sockets", "threads_per_core", "smt_control", "cpu_manager_policy",
             "labels", "taints", "runtime", "kube_reserved_cpu", "system_reserved_cpu", "hardware"}
# the node's CPU hardware: simulated (the default: the spec's topology, a fake sysfs tree and ids mapped
# onto the machine's) or the machine's own (none of the topology keys below then apply)
HARDWARE = {"simulated", "machine"}
TOPOLOGY_KEYS = {"cpus", "numa_nodes", "cells", "sockets", "threads_per_core", "smt_control"}
SYS = "/sys/devices/system"
POLICIES = {"none", "static"}
# the node's container runtime (cluster_real_node.py): containerd v2.4.2 (the default) or CRI-O v1.36.3
RUNTIMES = {"containerd", "cri-o"}
TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}   # core/v1 TaintEffect


class SpecError(ValueError):
    pass


def node_spec(settings, name):
    """The spec of real node `name`: the cluster's CPU knobs, then its CLUSTER_REAL_NODE_OVERRIDES entry."""
    raw = settings.get("CLUSTER_REAL_NODE_OVERRIDES") or "{}"
    try:
        overrides = json.loads(raw)
    except ValueError as e:
        raise SpecError(f"CLUSTER_REAL_NODE_OVERRIDES is not JSON ({e}): {raw!r}") from None
    if not isinstance(overrides, dict):
        raise SpecError(f"CLUSTER_REAL_NODE_OVERRIDES must be a JSON object, got {raw!r}")
    ov = overrides.get(name) or {}
    bad = sorted(set(ov) - SPEC_KEYS)
    if bad:
        raise SpecError(f"CLUSTER_REAL_NODE_OVERRIDES {name}: unknown key(s) {', '.join(bad)}; "
                        f"known: {', '.join(sorted(SPEC_KEYS))}")
    spec = {"cpus": int(settings.get("KUBEVIRT_NUM_VCPU") or 12),
            "numa_nodes": int(settings.get("KUBEVIRT_NUM_NUMA_NODES") or 2),
            "cells": None, "sockets": 1, "threads_per_core": 1, "smt_control": None,
            "cpu_manager_policy": "none", "labels": {}, "taints": [], "runtime": "containerd",
            "kube_reserved_cpu": None, "system_reserved_cpu": None, "hardware": "simulated"}
    spec.update(ov)
    if spec["hardware"] not in HARDWARE:
        raise SpecError(f"CLUSTER_REAL_NODE_OVERRIDES {name}: hardware {spec['hardware']!r} is not one of "
                        f"{', '.join(sorted(HARDWARE))}")
    if spec["hardware"] == "machine" and set(ov) & TOPOLOGY_KEYS:
        raise SpecError(f"CLUSTER_REAL_NODE_OVERRIDES {name}: hardware machine is the machine's own CPUs; "
                        f"drop {', '.join(sorted(set(ov) & TOPOLOGY_KEYS))}")
    labels = spec["labels"]
    if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str) and k
                                               and "," not in k + v and "=" not in k + v
                                               for k, v in labels.items()):
        raise SpecError(f"CLUSTER_REAL_NODE_OVERRIDES {name}: labels must be an object of label names to "
                        f"string values, got {labels!r}")
    if not _taints_ok(spec["taints"]):
        raise SpecError(f"CLUSTER_REAL_NODE_OVERRIDES {name}: taints must be a list of {{key, value, effect}} "
                        f"objects (effect one of {', '.join(sorted(TAINT_EFFECTS))}), got {spec['taints']!r}")
    if spec["cells"]:
        spec["cpus"] = None if "cpus" not in ov else spec["cpus"]
    if spec["cpu_manager_policy"] not in POLICIES:
        raise SpecError(f"CLUSTER_REAL_NODE_OVERRIDES {name}: cpu_manager_policy "
                        f"{spec['cpu_manager_policy']!r} is not one of {', '.join(sorted(POLICIES))}")
    if spec["runtime"] not in RUNTIMES:
        raise SpecError(f"CLUSTER_REAL_NODE_OVERRIDES {name}: runtime {spec['runtime']!r} is not one of "
                        f"{', '.join(sorted(RUNTIMES))}")
    for key in ("kube_reserved_cpu", "system_reserved_cpu"):
        if spec[key] is not None and not _cpu_quantity(spec[key]):
            raise SpecError(f"CLUSTER_REAL_NODE_OVERRIDES {name}: {key} must be a CPU quantity such as "
                            f"'500m' or '1', got {spec[key]!r}")
    if spec["smt_control"] is None:
        spec["smt_control"] = "on" if int(spec["threads_per_core"]) > 1 else "notsupported"
    return spec


def _cpu_quantity(value):
    """A CPU quantity the kubelet's kubeReserved/systemReserved take: '500m', '1', '1.5'."""
    import re
    return isinstance(value, str) and re.fullmatch(r"(?:[0-9]+m|[0-9]+(?:\.[0-9]+)?)", value) is not None


def _taints_ok(taints):
    return isinstance(taints, list) and all(
        isinstance(t, dict) and set(t) <= {"key", "value", "effect"} and isinstance(t.get("key"), str) and t["key"]
        and isinstance(t.get("value", ""), str) and t.get("effect") in TAINT_EFFECTS for t in taints)


def _cpulist(text):
    """The ids of a kernel CPU list (0-3,8)."""
    ids = set()
    for part in filter(None, text.strip().split(",")):
        a, _, b = part.partition("-")
        ids |= set(range(int(a), int(b or a) + 1))
    return ids


def machine_hw(sys_dir=SYS):
    """The machine's own CPU hardware as a node's topology: `cpus` (the online CPU ids, sorted) and
    `cells` (NUMA id -> its online CPU ids, cells without one left out; one cell 0 when the kernel
    shows no node directory), what the kubelet and the driver read from sysfs on such a node."""
    with open(os.path.join(sys_dir, "cpu/online")) as f:
        online = _cpulist(f.read())
    cells = {}
    node_dir = os.path.join(sys_dir, "node")
    for entry in sorted(os.listdir(node_dir)) if os.path.isdir(node_dir) else []:
        if entry.startswith("node") and entry[4:].isdigit():
            with open(os.path.join(node_dir, entry, "cpulist")) as f:
                ids = sorted(_cpulist(f.read()) & online)
            if ids:
                cells[int(entry[4:])] = ids
    return types.SimpleNamespace(cpus=sorted(online), cells=cells or {0: sorted(online)})


def topology(spec, sys_dir=SYS):
    if spec.get("hardware") == "machine":
        return machine_hw(sys_dir)
    try:
        return sim_topology.build_topology(
            cpus=spec["cpus"], numa_nodes=spec["numa_nodes"], sockets=spec["sockets"],
            threads_per_core=spec["threads_per_core"], cells=spec["cells"], smt_control=spec["smt_control"])
    except sim_topology.SpecError as e:
        raise SpecError(str(e)) from None


def _mem_total_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    return 4 * 1024 * 1024


def lay_out(node_dir, spec, sys_dir=SYS):
    """Writes the node's fake sysfs tree and cpuinfo; returns (topology, the run.sh mount lines). On
    machine hardware only the mount points: the real sysfs directories are bind-mounted at the
    driver's $HOST_ROOT path (the kubelet and containerd read the real /sys and /proc/cpuinfo).
    Either way $HOST_ROOT/sys/devices gets the machine's PCIe roots (the devices directory beside
    sys_dir), each root's cpulistaffinity as the machine reports it: what upstream v0.2.0 reads from
    its container's own /sys/devices (the runc wrapper overlays only system/{cpu,node}), so the project's
    driver, which reads $HOST_ROOT/sys as upstream main does, sees the same roots."""
    topo = topology(spec, sys_dir)
    root = os.path.join(node_dir, "mnt/var/lib/kubelet", os.path.relpath(HOST_ROOT, "/var/lib/kubelet"))
    write_pcie_roots(os.path.join(root, "sys"), pcie_roots(os.path.dirname(os.path.normpath(sys_dir))))
    if spec.get("hardware") == "machine":
        lines = ""
        for d in ("cpu", "node"):
            if os.path.isdir(os.path.join(sys_dir, d)):
                os.makedirs(os.path.join(root, "sys/devices/system", d), exist_ok=True)
                lines += f"mount --bind {sys_dir}/{d} {HOST_ROOT}/sys/devices/system/{d}\n"
        return topo, lines
    write_tree(root, topo, spec["smt_control"], _mem_total_kib())
    with open("/proc/cpuinfo") as f:
        real = f.read()
    info = os.path.join(node_dir, "cpuinfo")
    with open(info, "w") as f:
        f.write(cpuinfo(topo, real))
    lines = "".join(f"mount --bind {HOST_ROOT}/sys/devices/system/{d} /sys/devices/system/{d}\n"
                    for d in ("cpu", "node"))
    return topo, lines + f"mount --bind {info} /proc/cpuinfo\n"


def runc_cpu_args(spec, real_cpus, node_dir):
    """The runc wrapper's CPU options (driver/cmd/runc-cpumap): map the simulated ids onto the
    machine's CPUs `real_cpus` and show the driver's container the node's fake sysfs tree over its own
    /sys/devices/system/{cpu,node} (`--driver-sysfs`: a container's sysfs mount shows the machine's
    CPUs, and upstream v0.2.0 reads its online CPUs from /sys, not $HOST_ROOT); on machine hardware
    neither (`--map-cpus false`)."""
    if spec.get("hardware") == "machine":
        return "--map-cpus false"
    root = os.path.join(node_dir, "mnt/var/lib/kubelet", os.path.relpath(HOST_ROOT, "/var/lib/kubelet"), "sys")
    return f"--real-cpus {real_cpus} --driver-sysfs {root}"


def kubelet_flags(spec):
    """Kubelet flags decided by the spec: the labels it registers the node with."""
    labels = ",".join(f"{k}={v}" for k, v in sorted(spec["labels"].items()))
    return [f"--node-labels={labels}"] if labels else []


def register_taints(spec):
    """The node's own taints (the kubelet's registerWithTaints, core/v1 Taint objects)."""
    return [dict(t) for t in spec["taints"]]


def kubelet_settings(spec):
    """KubeletConfiguration keys decided by the spec: a static node reserves CPU 0 (the static policy needs
    reserved CPUs) unless the spec reserves them as kubevirtci's workers do, with kube_reserved_cpu /
    system_reserved_cpu (kubeReserved / systemReserved cpu, e.g. 500m each: the static policy then
    reserves ceil(1000m) = 1 CPU, CPU 0)."""
    reserved = {k: {"cpu": spec[key]} for k, key in (("kubeReserved", "kube_reserved_cpu"),
                                                      ("systemReserved", "system_reserved_cpu")) if spec.get(key)}
    if spec["cpu_manager_policy"] == "static":
        return {"cpuManagerPolicy": "static", **(reserved or {"reservedSystemCPUs": "0"})}
    return {"cpuManagerPolicy": "none", **reserved}
