"""A fake CPU/NUMA sysfs tree and /proc/cpuinfo for a simulated topology (pure Python, stdlib only).

Owns: write_tree (root/sys/devices/system/{cpu,node} as Linux formats them, read by the test driver
and a real kubelet's cAdvisor), cpuinfo (one /proc/cpuinfo block per fake CPU), and the PCIe roots
(pcie_roots reads the machine's, write_pcie_roots lays out root/sys/devices/pciDDDD:BB/pci_bus/DDDD:BB/
cpulistaffinity: what the driver reads with --expose-pcie-roots, upstream pkg/pcie/pciescan_amd64.go).
Must not: decide the topology (sim_topology.py) nor mount anything (cluster_node_hw.py does).
"""
from __future__ import annotations

import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.join(HERE, "sim") not in sys.path:
    sys.path.insert(0, os.path.join(HERE, "sim"))

import sim_cpuset  # noqa: E402

HUGEPAGE_SIZES_KIB = (2048, 1048576)
CACHES = (  # index, level, type, size, shared by
    (0, 1, "Data", "32K", "core"),
    (1, 1, "Instruction", "32K", "core"),
    (2, 2, "Unified", "1024K", "core"),
    (3, 3, "Unified", "16384K", "socket"),
)


# the kernel's name of a PCI root bus device, "pci%04x:%02x" (upstream pkg/pcie IsPCIeRootName)
PCIE_ROOT = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")


def pcie_roots(devices_dir: str = "/sys/devices") -> dict[str, str]:
    """The machine's PCIe roots: name -> its bus's cpulistaffinity text (stripped); {} when none."""
    out = {}
    names = os.listdir(devices_dir) if os.path.isdir(devices_dir) else []
    for name in sorted(n for n in names if PCIE_ROOT.match(n)):
        bus = name[len("pci"):]
        with open(os.path.join(devices_dir, name, "pci_bus", bus, "cpulistaffinity")) as f:
            out[name] = f.read().strip()
    return out


def write_pcie_roots(sys_dir: str, roots: dict[str, str]) -> None:
    """sys_dir/devices/<root>/pci_bus/<bus>/cpulistaffinity for each root; roots written before and
    not in `roots` are removed."""
    devices = os.path.join(sys_dir, "devices")
    for name in (os.listdir(devices) if os.path.isdir(devices) else []):
        if PCIE_ROOT.match(name) and name not in roots:
            shutil.rmtree(os.path.join(devices, name))
    for name, cpus in roots.items():
        if not PCIE_ROOT.match(name):
            raise ValueError(f"{name!r} is not a PCIe root name (pci%04x:%02x)")
        _write(os.path.join(devices, name, "pci_bus", name[len("pci"):], "cpulistaffinity"), cpus)


def cpulist(ids) -> str:
    """Linux %*pbl: '0-5,8'."""
    return sim_cpuset.format(ids)


def cpumask(ids, nbits: int) -> str:
    """Linux %*pb (bitmap_string): hex in 32-bit groups, most significant first, comma separated;
    the first group padded to its width of ceil((nbits % 32 or 32) / 4) digits, the others to 8."""
    nbits = max(int(nbits), 1)
    value = 0
    for i in ids:
        value |= 1 << int(i)
    chunk = nbits % 32 or 32
    groups = []
    start = ((nbits + 31) // 32) * 32 - 32
    while start >= 0:
        groups.append(format((value >> start) & ((1 << chunk) - 1), "0%dx" % ((chunk + 3) // 4)))
        start -= 32
        chunk = 32
    return ",".join(groups)


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text if text.endswith("\n") else text + "\n")


def _symlink(target: str, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.remove(path)
    os.symlink(target, path)


# write_tree's layout under root/sys/devices/system:
#   cpu/   online, possible, present, offline, kernel_max, smt/{control,active} (unless smt_control
#          is ""), and per CPU N: online (N > 0), nodeM -> ../../node/nodeM, topology/{core_id,
#          physical_package_id, die_id, cluster_id, thread_siblings(_list), core_cpus(_list),
#          core_siblings(_list), package_cpus(_list), die_cpus(_list)},
#          cache/index{0..3}/{level, type, id, size, shared_cpu_list, shared_cpu_map}
#   node/  online, possible, has_cpu, has_memory, has_normal_memory, and per cell M: cpulist,
#          cpumap, distance, meminfo, hugepages/..., cpuN -> ../../cpu/cpuN
# formatted as Linux formats them (cpulists "0-5,8", hex masks in comma-separated 32-bit groups
# padded to the CPU count), so that both the test driver (reading $HOST_ROOT/sys as upstream
# dra-driver-cpu pkg/cpuinfo does) and a real kubelet's cAdvisor (node*/cpu*, topology/core_id,
# physical_package_id, cache/index*/{level,type,size,shared_cpu_map}, node meminfo, hugepages) see
# the topology. topo is sim_topology.build_topology(...) output (CPU numbering documented there):
# cluster_id and the L1/L2 cache ids are the global core index, the L3 id is the socket.
def write_tree(root: str, topo, smt_control: str | None = None, memory_kib: int = 4 * 1024 * 1024) -> str:
    """Lay out root/sys/devices/system/{cpu,node}; returns root/sys. An existing tree is replaced.

    smt_control: text of cpu/smt/control; None = topo's (sim_topology.Topology.smt_control_text);
    "" = no smt directory (the driver then falls back to "more CPUs than cores").
    memory_kib: the node's memory, split evenly over the cells' meminfo."""
    sys_dir = os.path.join(root, "sys")
    base = os.path.join(sys_dir, "devices", "system")
    for d in ("cpu", "node"):
        shutil.rmtree(os.path.join(base, d), ignore_errors=True)
    cpu_dir, node_dir = os.path.join(base, "cpu"), os.path.join(base, "node")
    ids = sorted(c.id for c in topo.cpus)
    n = len(ids)
    every = cpulist(ids)
    for name in ("online", "possible", "present"):
        _write(os.path.join(cpu_dir, name), every)
    _write(os.path.join(cpu_dir, "offline"), "")
    _write(os.path.join(cpu_dir, "kernel_max"), str(max(n - 1, 0)))
    control = topo.smt_control_text if smt_control is None else smt_control
    if control != "":
        _write(os.path.join(cpu_dir, "smt", "control"), control)
        _write(os.path.join(cpu_dir, "smt", "active"), "1" if control.strip() == "on" else "0")

    by_core, by_socket = {}, {}
    for c in topo.cpus:
        by_core.setdefault(c.core, []).append(c.id)
        by_socket.setdefault(c.socket, []).append(c.id)
    for c in topo.cpus:
        d = os.path.join(cpu_dir, f"cpu{c.id}")
        if c.id > 0:
            _write(os.path.join(d, "online"), "1")
        _symlink(f"../../node/node{c.numa}", os.path.join(d, f"node{c.numa}"))
        t = os.path.join(d, "topology")
        core, pkg = sorted(by_core[c.core]), sorted(by_socket[c.socket])
        for name, text in (("core_id", str(c.core_id)), ("physical_package_id", str(c.socket)),
                           ("die_id", "0"), ("cluster_id", str(c.core))):
            _write(os.path.join(t, name), text)
        for name, members in (("thread_siblings", core), ("core_cpus", core), ("core_siblings", pkg),
                              ("package_cpus", pkg), ("die_cpus", pkg)):
            _write(os.path.join(t, name), cpumask(members, n))
            _write(os.path.join(t, name + "_list"), cpulist(members))
        for index, level, kind, size, shared_by in CACHES:
            members, cid = (core, c.core) if shared_by == "core" else (pkg, c.l3)
            ci = os.path.join(d, "cache", f"index{index}")
            for name, text in (("level", str(level)), ("type", kind), ("id", str(cid)), ("size", size),
                               ("shared_cpu_list", cpulist(members)),
                               ("shared_cpu_map", cpumask(members, n))):
                _write(os.path.join(ci, name), text)

    cells = sorted(topo.cells)
    for name in ("online", "possible", "has_cpu", "has_memory", "has_normal_memory"):
        _write(os.path.join(node_dir, name), cpulist(cells))
    per_cell = int(memory_kib) // max(len(cells), 1)
    for m in cells:
        nd = os.path.join(node_dir, f"node{m}")
        members = sorted(topo.cells[m])
        _write(os.path.join(nd, "cpulist"), cpulist(members))
        _write(os.path.join(nd, "cpumap"), cpumask(members, n))
        _write(os.path.join(nd, "distance"), " ".join("10" if o == m else "20" for o in cells))
        _write(os.path.join(nd, "meminfo"), _meminfo(m, per_cell))
        for size in HUGEPAGE_SIZES_KIB:
            hp = os.path.join(nd, "hugepages", f"hugepages-{size}kB")
            for name in ("nr_hugepages", "free_hugepages", "surplus_hugepages"):
                _write(os.path.join(hp, name), "0")
        for cid in members:
            _symlink(f"../../cpu/cpu{cid}", os.path.join(nd, f"cpu{cid}"))
    return sys_dir


def _meminfo(node: int, total_kib: int) -> str:
    free = total_kib * 3 // 4
    rows = (("MemTotal", total_kib), ("MemFree", free), ("MemUsed", total_kib - free), ("Active", 0),
            ("Inactive", 0), ("Dirty", 0), ("FilePages", 0), ("Mapped", 0), ("AnonPages", 0),
            ("Shmem", 0), ("KernelStack", 0), ("PageTables", 0), ("Slab", 0))
    lines = [f"Node {node} {k + ':':<15} {v:>8} kB" for k, v in rows]
    lines += [f"Node {node} HugePages_Total:     0", f"Node {node} HugePages_Free:      0",
              f"Node {node} HugePages_Surp:      0"]
    return "\n".join(lines) + "\n"


_REWRITE = ("processor", "physical id", "siblings", "core id", "cpu cores", "apicid", "initial apicid")


def cpuinfo(topo, real_cpuinfo_text: str) -> str:
    """A /proc/cpuinfo with one block per fake CPU: the real first block repeated with processor,
    physical id, siblings (threads per socket), core id, cpu cores (cores per socket), apicid and
    initial apicid rewritten. Always carries `cpu MHz` (added as 2000.000 if the real one lacks it)."""
    blocks = [b for b in re.split(r"\n\s*\n", real_cpuinfo_text or "") if b.strip()]
    first = blocks[0].splitlines() if blocks else ["processor\t: 0"]
    if not any(re.match(r"^cpu MHz\s*:", line) for line in first):
        first.append("cpu MHz\t\t: 2000.000")
    threads, cores = {}, {}
    for c in topo.cpus:
        threads[c.socket] = threads.get(c.socket, 0) + 1
        cores.setdefault(c.socket, set()).add(c.core)
    out = []
    for c in sorted(topo.cpus, key=lambda c: c.id):
        values = {"processor": c.id, "physical id": c.socket, "siblings": threads[c.socket],
                  "core id": c.core_id, "cpu cores": len(cores[c.socket]), "apicid": c.id,
                  "initial apicid": c.id}
        seen, lines = set(), []
        for line in first:
            key = line.split(":", 1)[0].strip()
            if key in values and ":" in line:
                lines.append(f"{line.split(':', 1)[0]}: {values[key]}")
                seen.add(key)
            else:
                lines.append(line)
        for key in _REWRITE:
            if key not in seen:
                lines.append(f"{key}\t: {values[key]}")
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n\n"
