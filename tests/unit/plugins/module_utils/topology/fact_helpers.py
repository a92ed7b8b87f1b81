"""The ``dra_cpu_topology`` fact built straight from ResourceSlices, for the tests: the product builds
it from the waiter's per-node topologies (topology/fact.py ``cluster_topology``)."""

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.fact import (
    DEFAULT_DRIVER,
    cluster_topology,
    complete_node_topologies,
)


def build_topology(slices, driver=DEFAULT_DRIVER, nodes=None):
    """The fact of the nodes with a complete pool; ``nodes`` (optional) restricts it to those names."""
    return cluster_topology(complete_node_topologies(slices, driver, nodes), driver)
