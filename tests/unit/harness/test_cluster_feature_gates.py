"""cluster_feature_gates.py: the control plane runs with DRAListTypeAttributes=true where the Kubernetes
version knows the gate (1.36 and 1.37, alpha), never on 1.35 (which does not know it: a component
refuses an unknown gate); CLUSTER_FEATURE_GATES wins, so a test can turn it off. Where the cached
binaries are at hand, their own gate lists are the check that the versions are right."""
import glob
import os
import subprocess
import sys

import pytest

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
if CLUSTER_DIR not in sys.path:
    sys.path.insert(0, CLUSTER_DIR)

import cluster_feature_gates as g  # noqa: E402  pylint: disable=wrong-import-position
import cluster_state  # noqa: E402  pylint: disable=wrong-import-position


@pytest.mark.parametrize("version, gates, want", [
    ("v1.36.3", "", "DRAListTypeAttributes=true"),
    ("v1.37.2", "", "DRAListTypeAttributes=true"),
    ("v1.35.4", "", ""),
    ("v1.36.3", "DRAListTypeAttributes=false", "DRAListTypeAttributes=false"),
    ("v1.37.2", "DRANodeAllocatableResources=true", "DRAListTypeAttributes=true,DRANodeAllocatableResources=true"),
    ("v1.35.4", "DRAConsumableCapacity=true", "DRAConsumableCapacity=true"),
])
def test_the_gates_by_version(version, gates, want):
    assert g.control_plane_gates({"CLUSTER_K8S_VERSION": version, "CLUSTER_FEATURE_GATES": gates}) == want


def test_the_default_cluster_turns_it_on():
    assert "DRAListTypeAttributes=true" in g.control_plane_gates(dict(cluster_state.KNOBS))


def _cached_apiservers():
    cache = os.environ.get("CLUSTER_CACHE_DIR") or os.path.expanduser("~/.cache/kubevirtci-dra-cpu")
    return sorted(glob.glob(os.path.join(cache, "kubernetes", "v*", "kube-apiserver")))


@pytest.mark.skipif(not _cached_apiservers(), reason="no cached kube-apiserver (tests/cluster/build.sh kubernetes)")
@pytest.mark.parametrize("binary", _cached_apiservers())
def test_each_cached_version_is_passed_the_gate_only_if_it_knows_it(binary):
    version = os.path.basename(os.path.dirname(binary))
    help_text = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=60, check=False).stdout
    knows = "DRAListTypeAttributes=true|false" in help_text
    passed = "DRAListTypeAttributes" in g.control_plane_gates({"CLUSTER_K8S_VERSION": version})
    assert passed == knows, version
