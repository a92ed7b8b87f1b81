"""Fault injection: the pod-fault and driver-mode syntax, and which apply to a node now.

Owns: the annotation names, parsing `pod_fault` / `driver_mode` values (node specs and
annotations), and, at run time, reading a Node's sim.dra-cpu.kubevirtci.io/pod-fault and
/driver-mode annotations (an invalid value is ignored with one warning) with the node's spec as
the fallback (FaultsMixin, a mixin of main.Sim).
Must not: act on the faults (sim_pods.py and sim_driver_publish.py do) nor build node specs
(sim_node_specs.py).
"""
from __future__ import annotations

import logging

from sim_topology import SpecError

log = logging.getLogger("sim")

ANNOTATION_PREFIX = "sim.dra-cpu.kubevirtci.io/"
POD_FAULT_ANNOTATION = ANNOTATION_PREFIX + "pod-fault"
DRIVER_MODE_ANNOTATION = ANNOTATION_PREFIX + "driver-mode"


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


class FaultsMixin:
    def pod_fault(self, node):
        with self.lock:
            ann = (((self.nodes.get(node) or {}).get("metadata") or {}).get("annotations") or {})
        v = ann.get(POD_FAULT_ANNOTATION)
        if v is not None:
            try:
                return parse_pod_fault(v)
            except SpecError as e:
                self.warn_once(("pf", node, v), "node %s: ignoring annotation: %s", node, e)
        return parse_pod_fault(self.specs[node].pod_fault)

    def driver_mode(self, node):
        with self.lock:
            ann = (((self.nodes.get(node) or {}).get("metadata") or {}).get("annotations") or {})
        v = ann.get(DRIVER_MODE_ANNOTATION)
        if v is not None:
            try:
                return parse_driver_mode(v)
            except SpecError as e:
                self.warn_once(("dm", node, v), "node %s: ignoring annotation: %s", node, e)
        return parse_driver_mode(self.specs[node].driver_mode)
