"""Publication timelines (pure: no cluster I/O): a scenario is a seeded schedule of ResourceSlice
operations relative to t0, with slices of the driver's shape (driver_slices.py), and its ground truth.
"""
from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import driver_slices  # noqa: E402
import sim_node_specs  # noqa: E402  (tests/cluster/sim on sys.path through driver_slices: node names)

VCPU = 48                      # CPUs per simulated node (both cell counts split these evenly)
RESERVED = [0, 1]              # the shell installer's default DRA_CPU_RESERVED_CPUS=0-1
RESERVED_GEN2 = [0, 1, 2, 3]   # the "reserved CPUs changed" generation
STALE_NODE = "node-gone"       # a node that was removed from the cluster

BIG_VCPU = 192                 # the individual-mode node of the realistic cases: 190 devices, 2 slices
# new kinds go at the end: a pass's seed uses the kind's index
KINDS = ("spread", "chunks", "generation", "stale", "no-driver", "chunks-individual", "restart-generation")

# whether dra-driver-cpu itself can publish the case (realistic) or the bench makes it up (synthetic)
REALISM = {
    "spread": "realistic",
    "chunks": "synthetic: grouped pools sit in one slice; the driver chunks only past 128 devices",
    "generation": "synthetic: two-slice grouped pools, the new generation as new slices",
    "stale": "synthetic: the driver's slices have an owner reference to their Node (garbage-collected)",
    "no-driver": "realistic",
    "chunks-individual": "realistic",
    "restart-generation": "realistic",
}

DESCRIPTIONS = {
    "spread": "every node publishes its pool (1 slice) once, at a uniform random time in [0, span]",
    "chunks": "one node's pool has resourceSliceCount 2; chunk 1 lands early, chunk 2 at t=span "
              "(the last required slice); the others publish in [0, 0.6*span]",
    "generation": "one node publishes generation 1 (reserved 0-1) at t<0.1*span, then generation 2 "
                  "(reserved 0-3, 2 chunks) as new slices: chunk 1 at 0.4*span, chunk 2 at t=span; "
                  "the obsolete generation-1 slice is deleted 0.3 s after chunk 2; the others "
                  "publish in [0, 0.75*span]",
    "stale": "a slice of a removed node (node-gone, not a Node any more, not a target) exists "
             "before the wait starts; N-1 nodes publish in [0, 0.6*span], the last one at t=span",
    "no-driver": "one node's driver pod never starts (ContainerCreating): it never publishes; the others "
                 "publish in [0, span]. The right answer is a timeout naming that node",
    "chunks-individual": f"one node runs the driver in individual mode with {BIG_VCPU} CPUs: 190 devices, "
                         "published as 2 slices (128 + 62) 0.3 s apart at span-0.3 and span (the last "
                         "required slice); the others publish their grouped pool in [0, 0.6*span]",
    "restart-generation": f"one node (individual mode, {BIG_VCPU} CPUs, 2 slices) publishes generation 1 at "
                          "t<0.1*span; its driver restarts with reserved CPUs 0-3 and updates the two slices "
                          "in place to generation 2 at 0.4*span and 1 s later; the others publish in "
                          "[0, 0.75*span], the last at 0.75*span",
}


@dataclass
class Event:
    t: float                     # seconds after t0
    op: str                      # create | update | delete
    key: str                     # local handle of the slice object (server names are generated)
    node: str
    body: dict | None = None
    required: bool = True        # part of reaching the ready state
    note: str = ""


@dataclass
class Scenario:
    name: str
    kind: str
    nodes: int
    cells: int
    seed: int
    span: float
    targets: list
    pre: list = field(default_factory=list)      # events applied before the waiters start
    events: list = field(default_factory=list)
    ready_possible: bool = True
    special_node: str | None = None              # the node the adversarial case is about

    @property
    def label(self):
        return f"{self.kind} N={self.nodes} cells={self.cells}"


def node_name(i):
    return sim_node_specs.node_name(i)


def pool_slices(node, uid, cells, generation=1, reserved=None, min_chunks=1, mode="grouped", cpus=VCPU):
    return driver_slices.pool_slices(node, uid, cpus, cells, generation, RESERVED if reserved is None else reserved,
                                     mode, min_chunks=min_chunks)


def build(kind, nodes, cells, seed, span=20.0, uids=None):
    """The scenario's schedule. ``uids``: node name -> Node uid (owner references), optional."""
    if kind not in KINDS:
        raise ValueError(f"unknown scenario kind {kind!r}; expected one of {KINDS}")
    if kind != "spread" and nodes < 2:
        raise ValueError(f"{kind} needs at least 2 nodes")
    rnd = random.Random(seed)
    targets = [node_name(i + 1) for i in range(nodes)]
    sc = Scenario(name=f"{kind}-n{nodes}-c{cells}", kind=kind, nodes=nodes, cells=cells, seed=seed,
                  span=span, targets=targets)
    b = _Builder(sc, rnd, uids or {})
    if kind == "spread":
        for n in targets:
            b.publish(n, rnd.uniform(0, span))
    else:
        special = targets[rnd.randrange(nodes)]
        sc.special_node = special
        _ADVERSARIAL[kind](b, special, [n for n in targets if n != special])
    sc.events.sort(key=lambda e: (e.t, e.key))
    check_monotone(sc)
    return sc


@dataclass
class _Builder:
    """Adds a scenario's events; its random draws come in the order the kinds' functions make them."""
    sc: Scenario
    rnd: random.Random
    uids: dict

    def slices(self, node, **kw):
        return pool_slices(node, self.uids.get(node, ""), self.sc.cells, **kw)

    def publish(self, node, t, **kw):
        for k, body in enumerate(self.slices(node, **kw)):
            self.add(t, "create", f"{node}/g{kw.get('generation', 1)}/{k}", node, body)

    def publish_others(self, others, until):
        for n in others:
            self.publish(n, self.rnd.uniform(0, until))

    def add(self, t, op, key, node, body=None, note="", required=True):
        self.sc.events.append(Event(t=t, op=op, key=key, node=node, body=body, required=required, note=note))


def _chunks(b, special, others):
    span = b.sc.span
    b.publish_others(others, 0.6 * span)
    c1, c2 = b.slices(special, min_chunks=2)
    b.add(b.rnd.uniform(0.1 * span, 0.5 * span), "create", f"{special}/g1/0", special, c1, note="chunk 1 of 2")
    b.add(span, "create", f"{special}/g1/1", special, c2, note="chunk 2 of 2")


def _generation(b, special, others):
    span = b.sc.span
    b.publish_others(others, 0.75 * span)
    (g1,) = b.slices(special, generation=1)
    c1, c2 = b.slices(special, generation=2, reserved=RESERVED_GEN2, min_chunks=2)
    b.add(b.rnd.uniform(0, 0.1 * span), "create", f"{special}/g1/0", special, g1, note="generation 1")
    b.add(0.4 * span, "create", f"{special}/g2/0", special, c1, note="generation 2, chunk 1 of 2")
    b.add(span, "create", f"{special}/g2/1", special, c2, note="generation 2, chunk 2 of 2")
    b.add(span + 0.3, "delete", f"{special}/g1/0", special, required=False, note="obsolete generation 1 deleted")


def _stale(b, special, others):
    for k, body in enumerate(pool_slices(STALE_NODE, "", b.sc.cells)):
        b.sc.pre.append(Event(t=-1, op="create", key=f"{STALE_NODE}/g1/{k}", node=STALE_NODE, body=body,
                              required=False, note="stale slice of a removed node"))
    b.publish_others(others, 0.6 * b.sc.span)
    b.publish(special, b.sc.span)


def _no_driver(b, _special, others):
    b.sc.ready_possible = False
    b.publish_others(others, b.sc.span)


def _chunks_individual(b, special, others):
    span = b.sc.span
    b.publish_others(others, 0.6 * span)
    c1, c2 = b.slices(special, mode="individual", cpus=BIG_VCPU)
    b.add(span - 0.3, "create", f"{special}/g1/0", special, c1, note="individual mode, slice 1 of 2 (128 devices)")
    b.add(span, "create", f"{special}/g1/1", special, c2, note="individual mode, slice 2 of 2")


def _restart_generation(b, special, others):
    span = b.sc.span
    last = others[b.rnd.randrange(len(others))]
    for n in others:
        b.publish(n, 0.75 * span if n == last else b.rnd.uniform(0, 0.75 * span))
    g1 = b.slices(special, mode="individual", cpus=BIG_VCPU)
    g2 = b.slices(special, generation=2, reserved=RESERVED_GEN2, mode="individual", cpus=BIG_VCPU)
    t1 = b.rnd.uniform(0, 0.1 * span)
    for k, body in enumerate(g1):
        b.add(t1 + 0.05 * k, "create", f"{special}/s{k}", special, body, note=f"generation 1, slice {k + 1} of 2")
    for k, body in enumerate(g2):
        b.add(0.4 * span + 1.0 * k, "update", f"{special}/s{k}", special, body,
              note=f"restart: generation 2, slice {k + 1} of 2 updated")


# each adversarial kind's events, given its special node and the others
_ADVERSARIAL = {"chunks": _chunks, "generation": _generation, "stale": _stale, "no-driver": _no_driver,
                "chunks-individual": _chunks_individual, "restart-generation": _restart_generation}


# ------------------------------------------------------------------ ground truth (independent rule)

def truth_complete(slices, targets):
    """Every target has slices; at its highest generation the count equals resourceSliceCount."""
    by_node = {}
    for s in slices:
        spec = s["spec"]
        by_node.setdefault(spec["nodeName"], []).append(spec["pool"])
    for n in targets:
        pools = by_node.get(n)
        if not pools:
            return False
        top = max(p["generation"] for p in pools)
        at_top = [p for p in pools if p["generation"] == top]
        if len(at_top) != at_top[0]["resourceSliceCount"]:
            return False
    return True


def truth_series(sc):
    """[(event index, complete after it)] applying pre + events in order."""
    state = {}
    for e in sc.pre:
        state[e.key] = e.body
    out = []
    for i, e in enumerate(sc.events):
        if e.op in ("create", "update"):
            state[e.key] = e.body
        else:
            state.pop(e.key, None)
        out.append((i, truth_complete(state.values(), sc.targets)))
    return out


def last_required_index(sc):
    idx = [i for i, e in enumerate(sc.events) if e.required]
    return idx[-1] if idx else None


def check_monotone(sc):
    """Every schedule is *monotone*: the ground truth "every target node has a complete pool at its
    highest generation" becomes true exactly once, after the last event marked ``required`` (or never,
    for ``no-driver``), and stays true. So a waiter that returned "ready" before the last required slice
    was stored is a false ready, and detection latency = return time - store time of that slice. Checked
    here on the schedule itself with an independent completeness rule (``truth_complete``), not the
    module's code."""
    series = truth_series(sc)
    last = last_required_index(sc)
    for i, complete in series:
        want = sc.ready_possible and last is not None and i >= last
        if complete != want:
            raise AssertionError(f"{sc.name}: ground truth after event {i} ({sc.events[i].op} {sc.events[i].key} "
                                 f"t={sc.events[i].t:.2f}) is {complete}, schedule expects {want}")
