"""A real node whose CPU hardware is the machine's own (tests/cluster/cluster_node_hw.py, spec key
`hardware: machine`, issue 37 item 4): node_spec accepts it and refuses it beside a simulated
topology; machine_hw reads the online CPUs and the NUMA cells from sysfs; lay_out writes no fake tree
and no cpuinfo but bind-mounts the real sysfs directories at the driver's $HOST_ROOT path; the runc
wrapper maps no CPU id on such a node (runc_cpu_args)."""
import json
import os
import sys

import pytest

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
for d in (CLUSTER_DIR, os.path.join(CLUSTER_DIR, "sim")):
    if d not in sys.path:
        sys.path.insert(0, d)

import cluster_node_hw  # noqa: E402  pylint: disable=wrong-import-position
from cluster_images import HOST_ROOT  # noqa: E402  pylint: disable=wrong-import-position


def spec(overrides, name="real01"):
    return cluster_node_hw.node_spec({"CLUSTER_REAL_NODE_OVERRIDES": json.dumps(overrides)}, name)


def sysfs(tmp_path, online, cells):
    """A sysfs devices/system directory: cpu/online and node/node<N>/cpulist."""
    root = tmp_path / "system"
    (root / "cpu").mkdir(parents=True)
    (root / "cpu" / "online").write_text(online + "\n")
    for n, cpulist in cells.items():
        (root / "node" / f"node{n}").mkdir(parents=True)
        (root / "node" / f"node{n}" / "cpulist").write_text(cpulist + "\n")
    return str(root)


def test_the_hardware_is_simulated_unless_the_spec_says_machine():
    assert spec({})["hardware"] == "simulated"
    assert spec({"real01": {"hardware": "machine", "runtime": "cri-o"}})["hardware"] == "machine"


def test_an_unknown_hardware_is_refused_naming_the_known_ones():
    with pytest.raises(cluster_node_hw.SpecError, match="real01: hardware 'fake' is not one of machine, simulated"):
        spec({"real01": {"hardware": "fake"}})


@pytest.mark.parametrize("key,value", [("cpus", 2), ("cells", ["0", "1"]), ("threads_per_core", 2)])
def test_machine_hardware_beside_a_simulated_topology_is_refused_naming_the_key(key, value):
    with pytest.raises(cluster_node_hw.SpecError, match=f"real01: hardware machine is the machine's own CPUs; drop {key}"):
        spec({"real01": {"hardware": "machine", key: value}})


def test_machine_hw_is_the_online_cpus_and_the_cells_that_hold_one(tmp_path):
    # CPU 5 offline, node 2 memory-only: neither shows
    root = sysfs(tmp_path, "0-4,6-7", {0: "0-3", 1: "4-7", 2: ""})
    hw = cluster_node_hw.machine_hw(root)
    assert hw.cpus == [0, 1, 2, 3, 4, 6, 7]
    assert hw.cells == {0: [0, 1, 2, 3], 1: [4, 6, 7]}


def test_machine_hw_without_node_directories_is_one_cell(tmp_path):
    hw = cluster_node_hw.machine_hw(sysfs(tmp_path, "0-1", {}))
    assert (hw.cpus, hw.cells) == ([0, 1], {0: [0, 1]})


def test_machine_hw_reads_this_machine():
    hw = cluster_node_hw.machine_hw()
    assert hw.cpus and sorted(c for ids in hw.cells.values() for c in ids) == hw.cpus


def test_lay_out_on_machine_hardware_binds_the_real_sysfs_at_host_root_and_fakes_nothing(tmp_path):
    root = sysfs(tmp_path, "0-1", {0: "0-1"})
    node = tmp_path / "real01"
    topo, lines = cluster_node_hw.lay_out(str(node), spec({"real01": {"hardware": "machine"}}), root)
    assert (topo.cpus, topo.cells) == ([0, 1], {0: [0, 1]})
    assert lines == (f"mount --bind {root}/cpu {HOST_ROOT}/sys/devices/system/cpu\n"
                     f"mount --bind {root}/node {HOST_ROOT}/sys/devices/system/node\n")
    assert "/proc/cpuinfo" not in lines and not (node / "cpuinfo").exists()
    host_root = node / "mnt/var/lib/kubelet" / os.path.relpath(HOST_ROOT, "/var/lib/kubelet")
    # the mount points exist (empty), nothing of a fake tree is written
    assert sorted(os.listdir(host_root / "sys/devices/system")) == ["cpu", "node"]
    assert os.listdir(host_root / "sys/devices/system/cpu") == []


def test_lay_out_on_simulated_hardware_still_fakes_the_tree_and_cpuinfo(tmp_path):
    topo, lines = cluster_node_hw.lay_out(str(tmp_path), spec({}))
    assert len(topo.cpus) == 12 and f"mount --bind {tmp_path}/cpuinfo /proc/cpuinfo" in lines
    assert f"mount --bind {HOST_ROOT}/sys/devices/system/cpu /sys/devices/system/cpu" in lines


def test_the_runc_wrapper_maps_ids_and_shows_the_driver_the_tree_only_on_simulated_hardware(tmp_path):
    # the tree lay_out writes is the one the driver's container gets over its /sys/devices/system
    cluster_node_hw.lay_out(str(tmp_path), spec({}))
    args = cluster_node_hw.runc_cpu_args(spec({}), "0,1", str(tmp_path))
    tree = args.split("--driver-sysfs ")[1]
    assert args == f"--real-cpus 0,1 --driver-sysfs {tree}"
    assert sorted(os.listdir(os.path.join(tree, "devices/system"))) == ["cpu", "node"]
    assert open(os.path.join(tree, "devices/system/cpu/online")).read().strip() == "0-11"
    machine = spec({"real01": {"hardware": "machine"}})
    assert cluster_node_hw.runc_cpu_args(machine, "0,1", str(tmp_path)) == "--map-cpus false"


def pci_root(devices, name, cpus):
    bus = devices / name / "pci_bus" / name[3:]
    bus.mkdir(parents=True)
    (bus / "cpulistaffinity").write_text(cpus + "\n")


@pytest.mark.parametrize("hardware", ["machine", "simulated"])
def test_lay_out_gives_the_driver_the_machines_pcie_roots(tmp_path, hardware):
    """$HOST_ROOT/sys/devices/<root>/pci_bus/<bus>/cpulistaffinity for each of the machine's roots (the
    kernel's pci%04x:%02x entries beside devices/system), what the driver reads with --expose-pcie-roots;
    entries that are not roots are not copied, and a root gone from the machine is removed on the next lay-out."""
    devices = tmp_path / "devices"
    devices.mkdir()
    root = sysfs(devices, "0-11", {0: "0-5", 1: "6-11"})
    pci_root(devices, "pci0000:00", "0-5")
    pci_root(devices, "pci0000:80", "6-11")
    (devices / "pnp0").mkdir()
    (devices / "pci0000:0G").mkdir()   # not a root name: never read
    node = tmp_path / "real01"
    overrides = {"real01": {"hardware": "machine"}} if hardware == "machine" else {}
    cluster_node_hw.lay_out(str(node), spec(overrides), str(root))
    host_devices = node / "mnt/var/lib/kubelet" / os.path.relpath(HOST_ROOT, "/var/lib/kubelet") / "sys/devices"
    assert sorted(n for n in os.listdir(host_devices) if n != "system") == ["pci0000:00", "pci0000:80"]
    assert (host_devices / "pci0000:80/pci_bus/0000:80/cpulistaffinity").read_text() == "6-11\n"
    import shutil
    shutil.rmtree(devices / "pci0000:80")
    cluster_node_hw.lay_out(str(node), spec(overrides), str(root))
    assert sorted(n for n in os.listdir(host_devices) if n != "system") == ["pci0000:00"]


def test_a_machine_without_pcie_roots_gives_none(tmp_path):
    root = sysfs(tmp_path, "0-1", {0: "0-1"})
    node = tmp_path / "real01"
    cluster_node_hw.lay_out(str(node), spec({"real01": {"hardware": "machine"}}), str(root))
    host_devices = node / "mnt/var/lib/kubelet" / os.path.relpath(HOST_ROOT, "/var/lib/kubelet") / "sys/devices"
    assert os.listdir(host_devices) == ["system"]
