"""Simulated node specs and their CPU topology (pure: no cluster, no I/O).

CPU numbering (documented in README.md, asserted by tests/unit/sim):
  V CPUs, S sockets, T threads per core (1 or 2), N NUMA cells.
  - core (global index) of CPU c  = c // T        -> SMT siblings are adjacent ids (2k, 2k+1)
  - socket of CPU c               = (c // T) // (V / (S*T))   (cores split contiguously)
  - coreID  (sysfs core_id style) = (c // T) % cores_per_socket  (restarts in every socket)
  - NUMA cell i (default)         = CPUs i*V/N .. (i+1)*V/N-1  (contiguous, even, as kubevirtci)
    or the explicit `cells` list of cpusets (asymmetric cells; union must be 0..V-1)
  - cacheL3ID                     = socket id (one L3 per socket)
  - coreType                      = "standard"
  - smtEnabled                    = from sysfs smt/control (`smt_control`, default "on" when T > 1,
                                    else "notsupported"), as the driver reads it
A core may not straddle two cells; V must divide evenly (kubevirtci refuses uneven splits).
"""
from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field

try:  # run as a script from tests/cluster/sim, or imported with that dir on sys.path
    import sim_cpuset as cpuset
except ImportError:  # pragma: no cover
    from . import sim_cpuset as cpuset  # type: ignore

ANNOTATION_PREFIX = "sim.dra-cpu.kubevirtci.io/"
POD_FAULT_ANNOTATION = ANNOTATION_PREFIX + "pod-fault"
DRIVER_MODE_ANNOTATION = ANNOTATION_PREFIX + "driver-mode"

SPEC_KEYS = {
    "cpus", "numa_nodes", "cells", "sockets", "threads_per_core", "cpu_manager_policy",
    "container_runtime", "kubelet_version", "taints", "labels", "annotations", "pod_fault",
    "driver_mode", "memory", "pods", "reserved_system_cpus", "kube_reserved", "system_reserved",
    "os_image", "kernel_version", "smt_control",
}

DEFAULT_KUBELET_VERSION = "v1.36.3"
DEFAULT_RUNTIME = "cri-o://1.36.1"
DEFAULT_OS_IMAGE = "CentOS Stream 9"
DEFAULT_KERNEL = "5.14.0-570.el9.x86_64"


class SpecError(ValueError):
    pass


@dataclass(frozen=True)
class Cpu:
    id: int
    core: int        # global core index (c // T)
    core_id: int     # sysfs-style core_id, restarts per socket
    socket: int
    numa: int
    l3: int


@dataclass
class Topology:
    cpus: list[Cpu]
    cells: dict[int, list[int]]        # numa id -> sorted cpu ids
    sockets: int
    threads_per_core: int
    smt_control: str | None = None     # sysfs devices/system/cpu/smt/control; None: "on" with SMT, else
    #                                    "notsupported"; "" : the file is missing

    @property
    def smt_control_text(self) -> str:
        if self.smt_control is None:
            return "on" if self.threads_per_core > 1 else "notsupported"
        return self.smt_control

    @property
    def smt(self) -> bool:
        """smtEnabled as the driver computes it (pkg/cpuinfo/cpuinfo.go IsSMTEnabled, GetCPUTopology):
        sysfs smt/control "on" -> true; off/forceoff/notsupported/notimplemented -> false; missing or
        any other text -> more logical CPUs than physical cores."""
        status = self.smt_control_text.strip().lower()
        if status == "on":
            return True
        if status in ("off", "forceoff", "notsupported", "notimplemented"):
            return False
        return len(self.cpus) > len({c.core for c in self.cpus})

    def siblings(self) -> dict[int, int]:
        """cpu id -> its SMT sibling, for cores of exactly two threads (pkg/cpuinfo/cpuinfo.go
        populateCpuSiblings handles 2-way SMT only: on other cores no CPU has a sibling)."""
        by_core: dict[int, list[int]] = {}
        for c in self.cpus:
            by_core.setdefault(c.core, []).append(c.id)
        out = {}
        for ids in by_core.values():
            if len(ids) == 2:
                out[ids[0]], out[ids[1]] = ids[1], ids[0]
        return out

    def by_id(self) -> dict[int, Cpu]:
        return {c.id: c for c in self.cpus}

    def summary(self) -> dict:
        return {
            "cpus": len(self.cpus),
            "sockets": self.sockets,
            "threadsPerCore": self.threads_per_core,
            "numaNodes": {str(k): cpuset.format(v) for k, v in sorted(self.cells.items())},
        }


def build_topology(cpus: int | None = None, numa_nodes: int = 1, sockets: int = 1,
                   threads_per_core: int = 1, cells: list | None = None,
                   smt_control: str | None = None) -> Topology:
    if cells:
        cell_sets = []
        for i, c in enumerate(cells):
            try:
                ids = cpuset.parse(c) if isinstance(c, str) else sorted(int(x) for x in c)
            except (cpuset.CpusetError, TypeError, ValueError) as e:
                raise SpecError(f"cells[{i}]: {e}") from None
            if not ids:
                raise SpecError(f"cells[{i}] is empty")
            cell_sets.append(ids)
        union = sorted(x for s in cell_sets for x in s)
        if len(union) != len(set(union)):
            raise SpecError("cells overlap")
        v = len(union)
        if union != list(range(v)):
            raise SpecError(f"cells must cover CPUs 0-{v - 1} exactly, got {cpuset.format(union)}")
        if cpus is not None and int(cpus) != v:
            raise SpecError(f"cpus={cpus} but cells hold {v} CPUs")
    else:
        if cpus is None:
            raise SpecError("cpus is required")
        v, n = int(cpus), int(numa_nodes)
        if v <= 0 or n <= 0:
            raise SpecError(f"cpus ({v}) and numa_nodes ({n}) must be positive")
        if v % n:
            raise SpecError(f"{v} CPUs cannot be split evenly over {n} NUMA cells")
        per = v // n
        cell_sets = [list(range(i * per, (i + 1) * per)) for i in range(n)]
    s, t = int(sockets), int(threads_per_core)
    if s <= 0 or t not in (1, 2, 4):
        raise SpecError(f"sockets ({s}) must be positive and threads_per_core ({t}) 1, 2 or 4")
    if v % (s * t):
        raise SpecError(f"{v} CPUs cannot be split into {s} socket(s) x whole cores of {t} thread(s)")
    cores_per_socket = v // (s * t)
    numa_of = {}
    for i, ids in enumerate(cell_sets):
        for c in ids:
            numa_of[c] = i
    out = []
    for c in range(v):
        core = c // t
        sock = core // cores_per_socket
        out.append(Cpu(id=c, core=core, core_id=core % cores_per_socket, socket=sock,
                       numa=numa_of[c], l3=sock))
    # a physical core must not straddle NUMA cells
    by_core: dict[int, set] = {}
    for cpu in out:
        by_core.setdefault(cpu.core, set()).add(cpu.numa)
    bad = [k for k, v_ in by_core.items() if len(v_) > 1]
    if bad:
        raise SpecError(f"core {bad[0]} (SMT siblings) straddles NUMA cells; adjust cells/threads_per_core")
    if smt_control is not None and not isinstance(smt_control, str):
        raise SpecError(f"smt_control must be a string (the text of sysfs smt/control), got {smt_control!r}")
    return Topology(cpus=out, cells={i: ids for i, ids in enumerate(cell_sets)},
                    sockets=s, threads_per_core=t, smt_control=smt_control)


# ---------------------------------------------------------------- fault modes

def parse_pod_fault(value) -> tuple[str, float]:
    """none | never | crashloop | delay:<seconds>  -> (kind, seconds)."""
    v = str(value or "none").strip().lower()
    if v in ("none", "normal", ""):
        return ("none", 0.0)
    if v in ("never", "crashloop"):
        return (v, 0.0)
    if v.startswith("delay:"):
        try:
            s = float(v.split(":", 1)[1])
        except ValueError:
            raise SpecError(f"pod_fault {value!r}: delay needs seconds, e.g. delay:20") from None
        if s < 0:
            raise SpecError(f"pod_fault {value!r}: negative delay")
        return ("delay", s)
    raise SpecError(f"pod_fault {value!r}: expected none|never|crashloop|delay:<s>")


def parse_driver_mode(value) -> tuple[str, float]:
    """normal | delay:<s> | partial:<k> | bump:<s> | none -> (kind, number)."""
    v = str(value or "normal").strip().lower()
    if v in ("normal", ""):
        return ("normal", 0.0)
    if v == "none":
        return ("none", 0.0)
    kind, _, arg = v.partition(":")
    if kind in ("delay", "partial", "bump") and arg:
        try:
            num = float(arg)
        except ValueError:
            raise SpecError(f"driver_mode {value!r}: {kind} needs a number") from None
        if num < 0 or (kind == "partial" and (num != int(num))):
            raise SpecError(f"driver_mode {value!r}: bad number")
        return (kind, num)
    raise SpecError(f"driver_mode {value!r}: expected normal|delay:<s>|partial:<k>|bump:<s>|none")


# ---------------------------------------------------------------- node specs

@dataclass
class NodeSpec:
    name: str
    index: int
    address: str
    topology: Topology
    cpu_manager_policy: str = "none"
    container_runtime: str = DEFAULT_RUNTIME
    kubelet_version: str = DEFAULT_KUBELET_VERSION
    taints: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    pod_fault: str = "none"
    driver_mode: str = "normal"
    memory: str = "5120Mi"
    pods: int = 110
    reserved_system_cpus: str = ""
    kube_reserved: dict = field(default_factory=dict)
    system_reserved: dict = field(default_factory=dict)
    os_image: str = DEFAULT_OS_IMAGE
    kernel_version: str = DEFAULT_KERNEL

    @property
    def cpu_capacity(self) -> int:
        return len(self.topology.cpus)

    def allocatable_cpu_millis(self) -> int:
        """Like the kubelet: reservedSystemCPUs wins over the kube/system-reserved cpu amounts."""
        millis = self.cpu_capacity * 1000
        if self.reserved_system_cpus:
            millis -= 1000 * len(cpuset.parse(self.reserved_system_cpus))
        else:
            for res in (self.kube_reserved, self.system_reserved):
                millis -= _cpu_millis(res.get("cpu", "0"))
        return max(millis, 0)

    def kubelet_config(self) -> dict:
        """The KubeletConfiguration /configz returns (the interesting subset + usual defaults)."""
        cfg = {
            "kind": "KubeletConfiguration",
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "enableServer": True,
            "port": 10250,
            "readOnlyPort": 0,
            "cgroupDriver": "systemd",
            "cgroupsPerQOS": True,
            "containerRuntimeEndpoint": _runtime_endpoint(self.container_runtime),
            "cpuManagerPolicy": self.cpu_manager_policy,
            "cpuManagerReconcilePeriod": "10s",
            "memoryManagerPolicy": "None",
            "topologyManagerPolicy": "none",
            "topologyManagerScope": "container",
            "maxPods": self.pods,
            "nodeStatusUpdateFrequency": "10s",
            "nodeStatusReportFrequency": "5m0s",
            "nodeLeaseDurationSeconds": 40,
            "featureGates": {},
            "rootDir": "/var/lib/kubelet",
        }
        if self.kube_reserved:
            cfg["kubeReserved"] = dict(self.kube_reserved)
        if self.system_reserved:
            cfg["systemReserved"] = dict(self.system_reserved)
        if self.reserved_system_cpus:
            cfg["reservedSystemCPUs"] = self.reserved_system_cpus
        return cfg


def _runtime_endpoint(runtime: str) -> str:
    if runtime.startswith("containerd://"):
        return "unix:///run/containerd/containerd.sock"
    return "unix:///var/run/crio/crio.sock"


def _cpu_millis(q) -> int:
    q = str(q).strip()
    if q.endswith("m"):
        return int(float(q[:-1]))
    return int(float(q) * 1000)


def _memory_quantity(v: str) -> str:
    v = str(v).strip()
    if v.isdigit():
        return v + "Mi"
    if v[-1] in "MGK" and v[:-1].isdigit():  # kubevirtci style 5120M
        return v + "i"
    return v


def node_name(index: int) -> str:
    return f"node{index:02d}"


def node_address(cidr: str, index: int) -> str:
    """node01 -> <net>.1.1, node02 -> <net>.1.2 ... (offset 256 + index inside CLUSTER_NODE_CIDR)."""
    net = ipaddress.ip_network(cidr, strict=False)
    addr = net.network_address + 256 + index
    if addr not in net or addr == net.broadcast_address:
        raise SpecError(f"node index {index} does not fit into {cidr}")
    return str(addr)


def build_node_specs(env: dict) -> list[NodeSpec]:
    """All simulated node specs from the simulator's environment (pure)."""
    count = int(env.get("CLUSTER_NODES") or 1)
    if count < 1:
        raise SpecError("CLUSTER_NODES must be >= 1")
    vcpu = int(env.get("KUBEVIRT_NUM_VCPU") or 12)
    numa = int(env.get("KUBEVIRT_NUM_NUMA_NODES") or 2)
    memory = _memory_quantity(env.get("KUBEVIRT_MEMORY_SIZE") or "5120M")
    reserved_sys = env.get("KUBEVIRT_RESERVED_SYSTEM_CPUS") or ""
    cidr = env.get("CLUSTER_NODE_CIDR") or "10.213.0.0/16"
    raw = env.get("CLUSTER_NODE_OVERRIDES") or "{}"
    try:
        overrides = json.loads(raw)
    except ValueError as e:
        raise SpecError(f"CLUSTER_NODE_OVERRIDES is not JSON: {e}") from None
    if not isinstance(overrides, dict):
        raise SpecError("CLUSTER_NODE_OVERRIDES must be a JSON object {\"node02\": {...}}")
    names = {node_name(i) for i in range(1, count + 1)}
    unknown_nodes = sorted(set(overrides) - names)
    if unknown_nodes:
        raise SpecError(f"CLUSTER_NODE_OVERRIDES names nodes that do not exist: {', '.join(unknown_nodes)}"
                        f" (CLUSTER_NODES={count})")
    specs = []
    for i in range(1, count + 1):
        name = node_name(i)
        ov = overrides.get(name) or {}
        if not isinstance(ov, dict):
            raise SpecError(f"{name}: override must be an object")
        bad = sorted(set(ov) - SPEC_KEYS)
        if bad:
            raise SpecError(f"{name}: unknown override key(s) {', '.join(bad)}; known: {', '.join(sorted(SPEC_KEYS))}")
        try:
            specs.append(_one_spec(name, i, ov, vcpu, numa, memory, reserved_sys, cidr))
        except SpecError as e:
            raise SpecError(f"{name}: {e}") from None
    return specs


def _one_spec(name, i, ov, vcpu, numa, memory, reserved_sys, cidr) -> NodeSpec:
    cells = ov.get("cells")
    topo = build_topology(
        cpus=ov.get("cpus", None if cells else vcpu),
        numa_nodes=ov.get("numa_nodes", numa),
        sockets=ov.get("sockets", 1),
        threads_per_core=ov.get("threads_per_core", 1),
        cells=cells,
        smt_control=ov.get("smt_control"),
    )
    # kubevirtci: node01 keeps the default policy none; workers run the static CPU manager
    policy = ov.get("cpu_manager_policy", "none" if i == 1 else "static")
    if policy not in ("none", "static"):
        raise SpecError(f"cpu_manager_policy {policy!r}: expected none|static")
    if policy == "static":
        kube_res = ov.get("kube_reserved", {"cpu": "500m"})
        sys_res = ov.get("system_reserved", {"cpu": "500m"})
    else:
        kube_res = ov.get("kube_reserved", {})
        sys_res = ov.get("system_reserved", {})
    pod_fault = ov.get("pod_fault", "none")
    parse_pod_fault(pod_fault)
    driver_mode = ov.get("driver_mode", "normal")
    parse_driver_mode(driver_mode)
    rsc = ov.get("reserved_system_cpus", reserved_sys)
    if rsc:
        cpuset.parse(rsc)
    taints = ov.get("taints", [])
    if not isinstance(taints, list) or not all(isinstance(t, dict) and "key" in t and "effect" in t for t in taints):
        raise SpecError("taints must be a list of {key, value?, effect}")
    labels = ov.get("labels", {})
    annotations = ov.get("annotations", {})
    if not isinstance(labels, dict) or not isinstance(annotations, dict):
        raise SpecError("labels/annotations must be objects")
    return NodeSpec(
        name=name, index=i, address=node_address(cidr, i), topology=topo,
        cpu_manager_policy=policy,
        container_runtime=str(ov.get("container_runtime", DEFAULT_RUNTIME)),
        kubelet_version=str(ov.get("kubelet_version", DEFAULT_KUBELET_VERSION)),
        taints=taints, labels={str(k): str(v) for k, v in labels.items()},
        annotations={str(k): str(v) for k, v in annotations.items()},
        pod_fault=str(pod_fault), driver_mode=str(driver_mode),
        memory=_memory_quantity(ov.get("memory", memory)), pods=int(ov.get("pods", 110)),
        reserved_system_cpus=str(rsc or ""), kube_reserved=dict(kube_res), system_reserved=dict(sys_res),
        os_image=str(ov.get("os_image", DEFAULT_OS_IMAGE)),
        kernel_version=str(ov.get("kernel_version", DEFAULT_KERNEL)),
    )
