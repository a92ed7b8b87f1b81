"""The Go test driver (tests/cluster/driver), the only implementation of upstream's rules here.

Runs its Go tests (`go vet` + `go test ./...`: flags, config.yaml, topology, devices, chunking,
prepare, NRI, metadata, the publish mode of simulated nodes), and checks the harness's hardware
simulation against it: the fake sysfs trees tests/cluster/fake_sysfs.py lays out (for real nodes
and for simulated nodes' `dracpu publish`) read back, through the driver's `devices` command, as
the topology they were written from (CPU ids, cells, sockets, cores). Which devices the driver
makes of a topology is the Go tests' business, not this file's.
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
import sim_topology  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed: cannot build the test driver")

TOPOLOGIES = {
    "2cells-12": dict(cpus=12, numa_nodes=2),
    "2sockets-smt-16": dict(cpus=16, numa_nodes=2, sockets=2, threads_per_core=2),
    "asym-cells": dict(cells=["0-3", "4-11"]),
    "80cpus-smt": dict(cpus=80, numa_nodes=2, sockets=2, threads_per_core=2),
}


@pytest.fixture(scope="module")
def devices_bin():
    cache = os.environ.get("DRACPU_TEST_DRIVER_DIR") or ""
    args = [os.path.join(DRIVER, "build.sh")] + ([cache] if cache else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=1800)
    path = os.path.join(out.stdout.strip().splitlines()[-1], "devices")
    assert os.access(path, os.X_OK), out.stderr
    return path


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_fake_sysfs_reads_as_laid_out(devices_bin, tmp_path, name):
    topo = sim_topology.build_topology(**TOPOLOGIES[name])
    root = str(tmp_path / name)
    fake_sysfs.write_tree(root, topo, None, 8 * 1024 * 1024)
    env = dict(os.environ, DRACPU_FLAVOR="main")
    env.pop("HOST_ROOT", None)
    p = subprocess.run([devices_bin, root, "--cpu-device-mode=individual"], capture_output=True, text=True, env=env,
                       timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    got = {}
    for d in json.loads(p.stdout)["devices"]:
        a = {k.split("/", 1)[1]: next(iter(v.values())) for k, v in d["attributes"].items()}
        got[a["cpuID"]] = (a["numaNodeID"], a["socketID"], a["coreID"])
    assert got == {c.id: (c.numa, c.socket, c.core_id) for c in topo.cpus}


def test_go_unit_tests():
    """`go vet` and `go test ./...` of the driver module pass."""
    env = dict(os.environ, GOFLAGS="-mod=mod", CGO_ENABLED="0")
    for cmd in (["go", "vet", "./..."], ["go", "test", "./..."]):
        p = subprocess.run(cmd, cwd=DRIVER, capture_output=True, text=True, env=env, timeout=1800, check=False)
        assert p.returncode == 0, " ".join(cmd) + "\n" + p.stdout + p.stderr
