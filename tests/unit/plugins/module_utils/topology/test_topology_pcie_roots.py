# SPDX-License-Identifier: Apache-2.0
"""topology/pcie_roots.py and where it shows: the PCIe roots (resource.kubernetes.io/pcieRoot, a list,
upstream v0.2.0's setPCIeRootsAttribute with --expose-pcie-roots) and the standard NUMA node of each
cell in the detail, the dra_cpu_topology fact and the table; the wait's pool check (with the setting
on a pool counts only once some device carries roots, off only once none does), each with the
unchanged slices as the negative control."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import Clock
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import fact as t
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import pcie_roots as pr
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import waiter as w
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.table import render_table
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import readout
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.topology.test_topology_waiter import (
    FakeApi, event, listing)


def with_roots(items, roots_by_device, numa=False):
    """The slices with resource.kubernetes.io/pcieRoot on the named devices (and, with ``numa``, the
    standard NUMA node every numanode device of main carries)."""
    items = copy.deepcopy(items)
    for obj in items:
        for device in obj["spec"]["devices"]:
            roots = roots_by_device.get(device["name"])
            if roots:
                device["attributes"][pr.PCIE_ROOT] = {"strings": roots}
            if numa and "dra.cpu/numaNodeID" in device["attributes"]:
                device["attributes"][pr.NUMA_NODE] = {"int": device["attributes"]["dra.cpu/numaNodeID"]["int"]}
    return items


def topology(items):
    return t.cluster_topology(t.complete_node_topologies(items))


def test_device_roots_and_numa():
    device = {"attributes": {pr.PCIE_ROOT: {"strings": ["pci0000:80", "pci0000:00"]}, pr.NUMA_NODE: {"int": 1}}}
    assert pr.device_roots(device) == ["pci0000:00", "pci0000:80"] and pr.device_numa(device) == 1
    assert pr.device_roots({"attributes": {pr.PCIE_ROOT: {"string": "pci0000:00"}}}) == ["pci0000:00"]
    assert pr.device_roots({"attributes": {"dra.cpu/numaNodeID": {"int": 0}}}) == []
    assert pr.device_numa({"attributes": {"dra.cpu/numaNodeID": {"int": 0}}}) is None


def test_each_cell_gives_its_roots_in_the_detail_the_fact_and_the_table(slices):
    items = with_roots(slices("reference_grouped_numanode.yaml"),
                       {"cpudevnuma000": ["pci0000:00"], "cpudevnuma001": ["pci0000:40", "pci0000:80"]}, numa=True)
    detail = topology(items)
    cells = detail["nodes"]["node-a"]["cells"]
    assert [(c["id"], c["pcie_roots"], c["numa_node"]) for c in cells] == [
        (0, ["pci0000:00"], 0), (1, ["pci0000:40", "pci0000:80"], 1)]
    node = t.fact_of(detail)["nodes"]["node-a"]
    assert node["pcie_roots"] == {"0": ["pci0000:00"], "1": ["pci0000:40", "pci0000:80"]}
    assert node["numa_nodes"] == {"0": 0, "1": 1}
    table = render_table(detail)
    assert table[0].endswith("WHERE (PCIE ROOTS, NUMA NODE)")
    assert table[1].endswith("PCIe root pci0000:00; NUMA node 0")
    assert table[2].endswith("PCIe roots pci0000:40,pci0000:80; NUMA node 1")


def test_a_cell_no_root_is_local_to_shows_none(slices):
    detail = topology(with_roots(slices("reference_grouped_numanode.yaml"), {"cpudevnuma000": ["pci0000:00"]}))
    cells = detail["nodes"]["node-a"]["cells"]
    assert cells[0]["pcie_roots"] == ["pci0000:00"] and "pcie_roots" not in cells[1] and "numa_node" not in cells[1]
    assert t.fact_of(detail)["nodes"]["node-a"]["pcie_roots"] == {"0": ["pci0000:00"]}
    table = render_table(detail)
    assert table[1].endswith("PCIe root pci0000:00") and table[2].endswith("  -")


def test_without_the_attributes_nothing_is_added(slices):
    # the negative control: v0.2.0's slices without --expose-pcie-roots
    detail = topology(slices("reference_grouped_numanode.yaml"))
    assert all("pcie_roots" not in c and "numa_node" not in c for c in detail["nodes"]["node-a"]["cells"])
    node = t.fact_of(detail)["nodes"]["node-a"]
    assert "pcie_roots" not in node and "numa_nodes" not in node
    assert "WHERE" not in render_table(detail)[0]


def test_individual_mode_cells_take_the_union_of_their_devices(slices):
    items = slices("reference_individual.yaml")
    names = [d["name"] for d in items[0]["spec"]["devices"]]
    detail = topology(with_roots(items, {names[0]: ["pci0000:00"], names[1]: ["pci0000:01"]}))
    first = detail["nodes"]["node-a"]["cells"][0]
    assert first["pcie_roots"] == ["pci0000:00", "pci0000:01"]


def test_pool_check(slices):
    plain = slices("reference_grouped_numanode.yaml")
    rooted = with_roots(plain, {"cpudevnuma000": ["pci0000:00"]})
    pool_plain = t.pools_by_node(t.group_pools(plain))["node-a"]
    pool_rooted = t.pools_by_node(t.group_pools(rooted))["node-a"]
    assert pr.pool_check(None) is None
    on, off = pr.pool_check(True), pr.pool_check(False)
    assert on(pool_rooted) == "" and off(pool_plain) == ""
    assert on(pool_plain).startswith("no device carries resource.kubernetes.io/pcieRoot yet "
                                     "(dra_cpu_expose_pcie_roots: true)")
    assert "DRAListTypeAttributes" in on(pool_plain)
    assert off(pool_rooted) == ("its devices still carry resource.kubernetes.io/pcieRoot "
                                "(dra_cpu_expose_pcie_roots: false)")


def _waiter(clock, api, expected):
    return w.SliceWaiter(api, "dra.cpu", clock=clock, sleep=clock.sleep, pool_check=pr.pool_check(expected))


def test_the_wait_with_roots_asked_for_waits_until_the_devices_carry_them(slices):
    plain = slices("reference_grouped_numanode.yaml")
    rooted = with_roots(plain, {"cpudevnuma000": ["pci0000:00"]})
    clock = Clock()
    api = FakeApi(clock, [listing(plain, rv="100")], [[("advance", 4), event("MODIFIED", rooted[0], rv="101")]])
    result = _waiter(clock, api, True).wait(["node-a"], 60)
    assert result["complete"] is True and result["elapsed"] == 4
    assert result["node_facts"]["node-a"]["cells"][0]["pcie_roots"] == ["pci0000:00"]
    # the negative control: the same complete pool counts at once when roots are not asked for
    clock = Clock()
    result = _waiter(clock, FakeApi(clock, [listing(plain)], []), None).wait(["node-a"], 60)
    assert result["complete"] is True and result["stats"]["watches"] == 0


def test_a_pool_that_never_carries_them_stays_pending_saying_why(slices):
    plain = slices("reference_grouped_numanode.yaml")
    clock = Clock()
    api = FakeApi(clock, [listing(plain)], [], nodes=["node-a"])
    result = _waiter(clock, api, True).wait(["node-a"], 5)
    assert result["complete"] is False and "node-a" not in result["node_facts"]
    assert result["progress"]["incomplete"]["node-a"].startswith("no device carries resource.kubernetes.io/pcieRoot")


def test_turned_off_a_pool_still_carrying_them_is_pending(slices):
    rooted = with_roots(slices("reference_grouped_numanode.yaml"), {"cpudevnuma000": ["pci0000:00"]})
    clock = Clock()
    result = _waiter(clock, FakeApi(clock, [listing(rooted)], [], nodes=["node-a"]), False).wait(["node-a"], 5)
    assert result["complete"] is False


def test_verify_reads_the_allocated_devices_locality(slices):
    items = with_roots(slices("reference_grouped_numanode.yaml"), {"cpudevnuma001": ["pci0000:80"]}, numa=True)
    devices = [("node-a", d) for d in items[0]["spec"]["devices"]]
    results = [{"pool": "node-a", "device": "cpudevnuma001"}]
    assert readout.locality_of(results, devices) == {"pcie_roots": ["pci0000:80"], "numa_node": 1}
    assert readout.locality_of([{"pool": "node-a", "device": "nope"}], devices) is None
    assert pr.locality_text(readout.locality_of(results, devices)) == "PCIe root pci0000:80; NUMA node 1"
