"""`make cluster-up` (`cluster.py up` with no knobs set) brings up what `make demo` does: one real node,
real01 (a real kubelet + containerd), and no simulated node. The node defaults live in one place,
cluster_state.KNOBS; hack/demo.sh carries none of its own for those two knobs (it passes on what the
caller sets, and cluster.py's defaults do the rest)."""
import os
import re
import sys

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
REPO = os.path.dirname(os.path.dirname(CLUSTER_DIR))
if CLUSTER_DIR not in sys.path:
    sys.path.insert(0, CLUSTER_DIR)

import cluster_control_plane  # noqa: E402  pylint: disable=wrong-import-position
import cluster_state  # noqa: E402  pylint: disable=wrong-import-position

NODE_KNOBS = ("CLUSTER_NODES", "CLUSTER_REAL_NODES")


def test_the_default_cluster_is_the_demos_one_real_node_and_no_simulated_one():
    assert cluster_state.KNOBS["CLUSTER_REAL_NODES"] == "1"
    assert cluster_state.KNOBS["CLUSTER_NODES"] == "0"
    # and `up` accepts it as it is
    cluster_control_plane.check_node_counts(dict(cluster_state.KNOBS))


def test_demo_sh_sets_no_node_defaults_of_its_own():
    with open(os.path.join(REPO, "hack", "demo.sh")) as f:
        code = [line.split("#", 1)[0] for line in f]   # comments may name the knobs
    for knob in NODE_KNOBS:
        setting = re.compile(rf"\b{knob}=|\${{{knob}:?[-=]")
        assert not [line for line in code if setting.search(line)], \
            f"hack/demo.sh sets {knob}: the default is cluster_state.KNOBS's"
