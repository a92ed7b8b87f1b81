"""Fault injection at run time: which pod fault and driver mode apply to a node now.

Owns: reading the sim.dra-cpu.kubevirtci.io/pod-fault and /driver-mode annotations of a Node
(ignoring invalid values with one warning) and falling back to the node's spec.
Must not: act on the faults (sim_pods.py and sim_driver_publish.py do) nor parse node specs
(sim_topology.py holds the value syntax). A mixin of main.Sim.
"""
import logging

from sim_topology import DRIVER_MODE_ANNOTATION, POD_FAULT_ANNOTATION, SpecError, parse_driver_mode, parse_pod_fault

log = logging.getLogger("sim")


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
