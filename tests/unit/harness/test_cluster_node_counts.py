"""The test cluster's node counts (tests/cluster/cluster_control_plane.py check_node_counts), checked
by `cluster.py up` before it stops or starts anything: simulated and real nodes are whole numbers
>= 0 adding up to at least one node, so `make demo`'s cluster of one real node and no simulated one
(CLUSTER_NODES=0, CLUSTER_REAL_NODES=1) is accepted and a cluster without nodes is refused."""
import os
import sys

import pytest

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
if CLUSTER_DIR not in sys.path:
    sys.path.insert(0, CLUSTER_DIR)

import cluster_control_plane  # noqa: E402  pylint: disable=wrong-import-position


@pytest.mark.parametrize("sim, real", [("1", "0"), ("0", "1"), ("3", "2"), ("1", "")])
def test_counts_with_at_least_one_node_pass(sim, real):
    cluster_control_plane.check_node_counts({"CLUSTER_NODES": sim, "CLUSTER_REAL_NODES": real})


@pytest.mark.parametrize("sim, real", [("0", "0"), ("0", ""), ("-1", "2"), ("x", "1"), ("1", "one")])
def test_no_node_or_a_count_that_is_not_a_whole_number_is_refused_naming_both(sim, real, capsys):
    with pytest.raises(SystemExit) as e:
        cluster_control_plane.check_node_counts({"CLUSTER_NODES": sim, "CLUSTER_REAL_NODES": real})
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"CLUSTER_NODES={sim!r}, CLUSTER_REAL_NODES={real!r}: both must be whole numbers >= 0" in err
    assert "CLUSTER_NODES=0 only with CLUSTER_REAL_NODES >= 1" in err
