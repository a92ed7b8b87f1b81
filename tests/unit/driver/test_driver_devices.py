"""Cross-check of the Go test driver (tests/cluster/driver) against the upstream-verified Python rules.

Builds the driver with tests/cluster/driver/build.sh, lays out fake sysfs trees with
tests/cluster/fake_sysfs.write_tree for several topologies, and asserts that `devices <root> <flags>`
prints exactly sim_slices.build_devices + chunks_for (names, attributes, capacity,
allowMultipleAllocations, chunking) for every mode and both flavours. Also runs `go test ./...`.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CLUSTER = os.path.join(REPO, "tests", "cluster")
DRIVER = os.path.join(CLUSTER, "driver")
for p in (CLUSTER, os.path.join(CLUSTER, "sim")):
    if p not in sys.path:
        sys.path.insert(0, p)

import fake_sysfs  # noqa: E402
import sim_config  # noqa: E402
import sim_cpuset  # noqa: E402
import sim_slices  # noqa: E402
import sim_topology  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed: cannot build the test driver")

TOPOLOGIES = {
    "1cell-12": dict(cpus=12, numa_nodes=1),
    "2cells-12": dict(cpus=12, numa_nodes=2),
    "2sockets-smt-16": dict(cpus=16, numa_nodes=2, sockets=2, threads_per_core=2),
    "smt-on-8": dict(cpus=8, numa_nodes=1, threads_per_core=2, smt_control="on"),
    "smt-off-8": dict(cpus=8, numa_nodes=1, threads_per_core=2, smt_control="off"),
    "smt-missing-8": dict(cpus=8, numa_nodes=1, threads_per_core=2, smt_control=""),
    "nosmt-missing-4": dict(cpus=4, numa_nodes=1, smt_control=""),
    "notsupported-6": dict(cpus=6, numa_nodes=2, smt_control="notsupported"),
    "smt4-8": dict(cpus=8, numa_nodes=1, threads_per_core=4),
    "asym-cells": dict(cells=["0-3", "4-11"]),
    "80cpus-smt": dict(cpus=80, numa_nodes=2, sockets=2, threads_per_core=2),
    "200cpus": dict(cpus=200, numa_nodes=1),
}
MODES = [("grouped", "numanode"), ("grouped", "socket"), ("grouped", "machine"), ("individual", "numanode")]
RESERVED = ["", "0-1", "0,3", "ALL"]


@pytest.fixture(scope="module")
def devices_bin(tmp_path_factory):
    cache = os.environ.get("DRACPU_TEST_DRIVER_DIR") or ""
    args = [os.path.join(DRIVER, "build.sh")] + ([cache] if cache else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=1800)
    path = os.path.join(out.stdout.strip().splitlines()[-1], "devices")
    assert os.access(path, os.X_OK), out.stderr
    return path


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    base = tmp_path_factory.mktemp("sysfs")
    out = {}
    for name, spec in TOPOLOGIES.items():
        topo = sim_topology.build_topology(**spec)
        root = str(base / name)
        fake_sysfs.write_tree(root, topo, None, 8 * 1024 * 1024)
        out[name] = (root, topo)
    return out


def run_devices(binary, root, flavor, args):
    env = dict(os.environ, DRACPU_FLAVOR=flavor)
    env.pop("HOST_ROOT", None)
    p = subprocess.run([binary, root] + args, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("flavor", ["main", "v0.2"])
@pytest.mark.parametrize("mode,group_by", MODES)
@pytest.mark.parametrize("topo_name", sorted(TOPOLOGIES))
def test_devices_match_simulator(devices_bin, trees, topo_name, mode, group_by, flavor):
    root, topo = trees[topo_name]
    for reserved in RESERVED:
        if reserved == "ALL":
            reserved = sim_cpuset.format(c.id for c in topo.cpus)
        for pcie in ([False, True] if topo_name == "200cpus" else [False]):
            cfg = sim_config.DriverConfig(cpu_device_mode=mode, group_by=group_by, flavor=flavor,
                                          reserved_cpus=sim_cpuset.parse(reserved), expose_pcie_roots=pcie)
            want = sim_slices.build_devices(topo, cfg)
            want_chunks = [[d["name"] for d in c] for c in sim_slices.chunks_for(want, cfg)] if want else []
            args = [f"--cpu-device-mode={mode}", f"--group-by={group_by}", f"--reserved-cpus={reserved}",
                    f"--expose-pcie-roots={'true' if pcie else 'false'}"]
            got = run_devices(devices_bin, root, flavor, args)
            ctx = f"{topo_name} {flavor} {mode}/{group_by} reserved={reserved!r} pcie={pcie}"
            assert got["devices"] == want, ctx
            assert got["chunks"] == want_chunks, ctx


def test_reference_example(devices_bin, trees):
    """/work/shared/reference/dra-driver-cpu.md, Example node-a (12 CPUs, NUMA 0-5 / 6-11, reserved 0-1)."""
    root = trees["2cells-12"][0]
    got = run_devices(devices_bin, root, "main", ["--reserved-cpus=0-1"])
    assert [(d["name"], d["capacity"]["dra.cpu/cpu"]["value"]) for d in got["devices"]] == \
        [("cpudevnuma000", "4"), ("cpudevnuma001", "6")]
    got = run_devices(devices_bin, root, "main", ["--reserved-cpus=0-1", "--cpu-device-mode=individual"])
    assert [(d["name"], d["attributes"]["dra.cpu/cpuID"]["int"]) for d in got["devices"]] == \
        [(f"cpudev{i:03d}", i + 2) for i in range(10)]


def test_config_file_and_flag_precedence(devices_bin, trees, tmp_path):
    """main: flag > config.yaml > default; the config error is printed and the command fails."""
    root = trees["2cells-12"][0]
    cfg = tmp_path / "config.yaml"
    cfg.write_text('apiVersion: v1alpha1\ncpuDeviceMode: individual\nreservedCPUs: "0-3"\n')
    got = run_devices(devices_bin, root, "main", [f"--config={cfg}"])
    assert len(got["devices"]) == 8
    got = run_devices(devices_bin, root, "main", [f"--config={cfg}", "--reserved-cpus="])
    assert len(got["devices"]) == 12
    cfg.write_text('reservedCpus: "1"\n')
    p = subprocess.run([devices_bin, root, f"--config={cfg}"], capture_output=True, text=True, check=False,
                       env=dict(os.environ, DRACPU_FLAVOR="main"))
    assert p.returncode == 1 and 'use "reservedCPUs"' in p.stderr
    p = subprocess.run([devices_bin, root, f"--config={cfg}"], capture_output=True, text=True, check=False,
                       env=dict(os.environ, DRACPU_FLAVOR="v0.2"))
    assert p.returncode == 2 and "flag provided but not defined: -config" in p.stderr


def test_fake_sysfs_linux_formats(tmp_path):
    """Masks and lists as Linux prints them; the symlinks cAdvisor and the driver follow exist."""
    topo = sim_topology.build_topology(cpus=40, numa_nodes=2, threads_per_core=2)
    sys_dir = fake_sysfs.write_tree(str(tmp_path), topo, None, 1024)
    base = os.path.join(sys_dir, "devices", "system")

    def read(rel):
        with open(os.path.join(base, rel)) as f:
            return f.read()
    assert read("cpu/online") == "0-39\n"
    assert read("cpu/smt/control") == "on\n"
    assert read("cpu/cpu3/topology/thread_siblings_list") == "2-3\n"
    assert read("cpu/cpu3/topology/thread_siblings") == "00,0000000c\n"
    assert read("node/node1/cpumap") == "ff,fff00000\n"
    assert read("node/node1/distance") == "20 10\n"
    assert read("node/node0/meminfo").startswith("Node 0 MemTotal:")
    assert os.path.realpath(os.path.join(base, "node/node1/cpu25")) == os.path.join(base, "cpu/cpu25")
    assert os.path.realpath(os.path.join(base, "cpu/cpu25/node1")) == os.path.join(base, "node/node1")
    assert not os.path.exists(os.path.join(base, "cpu/cpu0/online"))
    assert fake_sysfs.cpumask([0], 12) == "001" and fake_sysfs.cpumask([32], 33) == "1,00000000"
    info = fake_sysfs.cpuinfo(topo, "processor\t: 0\nvendor_id\t: X\nphysical id\t: 0\n\nprocessor\t: 1\n")
    blocks = info.strip().split("\n\n")
    assert len(blocks) == 40 and "processor\t: 39" in blocks[39] and "cpu MHz" in blocks[0]
    assert "core id\t: 19" in blocks[39] and "cpu cores\t: 20" in blocks[0] and "siblings\t: 40" in blocks[0]
    fake_sysfs.write_tree(str(tmp_path), topo, "", 1024)    # rewrite, smt/control missing
    assert not os.path.exists(os.path.join(base, "cpu/smt/control"))


def test_go_unit_tests():
    """`go test ./...` of the driver module passes."""
    env = dict(os.environ, GOFLAGS="-mod=mod", CGO_ENABLED="0")
    p = subprocess.run(["go", "test", "./..."], cwd=DRIVER, capture_output=True, text=True, env=env, timeout=1800,
                       check=False)
    assert p.returncode == 0, p.stdout + p.stderr
