"""Simulated node specs from the simulator's environment (pure: no cluster, no I/O).

Owns: the node names and addresses, the knobs (KUBEVIRT_NUM_VCPU, KUBEVIRT_NUM_NUMA_NODES,
CLUSTER_NODE_OVERRIDES, ...) and the per-node spec keys with their defaults and checks, NodeSpec
(capacity, allocatable CPU, the KubeletConfiguration served on /configz).
Must not: compute the CPU layout (sim_topology.py) or interpret fault modes at run time
(sim_faults.py; the syntax is checked here through its parsers).
"""
from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field

import sim_cpuset as cpuset
from sim_faults import parse_driver_mode, parse_pod_fault
from sim_topology import SpecError, Topology, build_topology

SPEC_KEYS = {
    "cpus", "numa_nodes", "cells", "sockets", "threads_per_core", "cpu_manager_policy",
    "container_runtime", "kubelet_version", "taints", "labels", "annotations", "pod_fault",
    "driver_mode", "memory", "pods", "reserved_system_cpus", "kube_reserved", "system_reserved",
    "os_image", "kernel_version", "smt_control",
}

DEFAULT_KUBELET_VERSION = "v1.36.3"
# only a containerRuntimeVersion string (kubevirtci's k8s-1.36 runtime): nothing runs it. A runtime the
# harness can run is a real node instead (containerd 2.4.2, or CRI-O 1.36.3: cluster_real_node.py,
# `runtime: cri-o`); simulated nodes are for what cannot be built here (containerd 1.x, CRI-O < 1.30)
DEFAULT_RUNTIME = "cri-o://1.36.1"
DEFAULT_OS_IMAGE = "CentOS Stream 9"
DEFAULT_KERNEL = "5.14.0-570.el9.x86_64"


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
