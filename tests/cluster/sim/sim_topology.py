"""A simulated node's CPU topology (pure: no cluster, no I/O).

CPU numbering (documented in README.md, asserted by tests/unit/sim):
  V CPUs, S sockets, T threads per core (1 or 2), N NUMA cells.
  - core (global index) of CPU c  = c // T        -> SMT siblings are adjacent ids (2k, 2k+1)
  - socket of CPU c               = (c // T) // (V / (S*T))   (cores split contiguously)
  - coreID  (sysfs core_id style) = (c // T) % cores_per_socket  (restarts in every socket)
  - NUMA cell i (default)         = CPUs i*V/N .. (i+1)*V/N-1  (contiguous, even, as kubevirtci)
    or the explicit `cells` list of cpusets (asymmetric cells; union must be 0..V-1)
  - cacheL3ID                     = socket id (one L3 per socket)
  - coreType                      = "standard"
  - smt_control                   = the text of sysfs smt/control (default "on" when T > 1, else
                                    "notsupported"; "" = the file is missing); what the driver makes of
                                    it (smtEnabled) is the Go driver's rule (tests/cluster/driver)
A core may not straddle two cells; V must divide evenly (kubevirtci refuses uneven splits).

Owns: Cpu, Topology (the hardware: what fake_sysfs.write_tree lays out), build_topology, SpecError.
Must not: read the environment or node overrides (sim_node_specs.py), nor derive what a driver reads
from it (smtEnabled, siblings, devices): the Go driver reads the fake sysfs tree itself.
"""
from __future__ import annotations

from dataclasses import dataclass

try:  # run as a script from tests/cluster/sim, or imported with that dir on sys.path
    import sim_cpuset as cpuset
except ImportError:  # pragma: no cover
    from . import sim_cpuset as cpuset  # type: ignore


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
