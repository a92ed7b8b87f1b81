"""`cluster.py registry-off / registry-on` (tests/cluster/cluster_real_node_ops.py): which images a
node cut off from its registry loses (every name but the sandbox image's; the CRI plugin's bare
`sha256:` ids go with the last name), and the hosts files it gets: every name at a closed port while
off, and exactly the files the node started with (cluster_real_node_config.mirror_hosts) when on again.
The fault itself (a real pod in ErrImagePull on that node only) is asserted by
tests/integration/test_reliability_faults.py on real kubelets."""
import os
import sys

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
for d in (CLUSTER_DIR, os.path.join(CLUSTER_DIR, "sim")):
    if d not in sys.path:
        sys.path.insert(0, d)

import cluster_real_node_config  # noqa: E402  pylint: disable=wrong-import-position
import cluster_real_node_ops as ops  # noqa: E402  pylint: disable=wrong-import-position

# `ctr -n k8s.io images ls -q` of a real node after the driver and a verify pod ran (seen here)
REFS = [
    "registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.3.0",
    "registry.k8s.io/dra-driver-cpu/dra-driver-cpu@sha256:c220500463d56092d30c4df9d018dafa1c7bd4cfc71b8f2cd42a081702fd0f1d",
    "registry.k8s.io/pause:3.10.1",
    "registry.k8s.io/pause@sha256:" + "a" * 64,
    "sha256:" + "b" * 64,
    "quay.io/example/app:1.0",
]


def test_every_name_but_the_sandbox_images_is_removed():
    assert ops.removable_images(REFS, sandbox="registry.k8s.io/pause:3.10.1") == [
        REFS[0], REFS[1], "quay.io/example/app:1.0"]


def test_a_registry_with_a_port_is_not_mistaken_for_a_tag():
    refs = ["127.0.0.1:5000/pause:3.10.1", "127.0.0.1:5000/driver:v1"]
    assert ops.removable_images(refs, sandbox="127.0.0.1:5000/pause:3.10.1") == ["127.0.0.1:5000/driver:v1"]


def test_off_sends_every_name_to_the_closed_port_and_on_restores_the_started_files():
    started = cluster_real_node_config.mirror_hosts("10.9.0.1:5000")
    off = ops.hosts_files("10.9.0.1:5000", reachable=False)
    assert set(off) == set(started) == {"certs.d/registry.k8s.io/hosts.toml", "certs.d/_default/hosts.toml"}
    assert all(text == f'server = "http://{ops.CLOSED}"\n' for text in off.values())
    assert "10.9.0.1:5000" not in "".join(off.values()) and "registry.k8s.io" not in "".join(off.values())
    assert ops.hosts_files("10.9.0.1:5000", reachable=True) == started
    assert '[host."http://10.9.0.1:5000"]' in started["certs.d/_default/hosts.toml"]
