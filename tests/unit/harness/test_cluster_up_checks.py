"""What `cluster.py up` checks of its nodes before it stops or starts anything: the node counts
(cluster_control_plane.check_node_counts: simulated and real nodes are whole numbers >= 0 adding up
to at least one node, so `make demo`'s cluster of one real node and no simulated one, CLUSTER_NODES=0
and CLUSTER_REAL_NODES=1, is accepted and a cluster without nodes is refused), and that the host
can run the real nodes asked for (cluster_real_node.host_problem: cgroup v1 hierarchies)."""
import os
import sys

import pytest

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
if CLUSTER_DIR not in sys.path:
    sys.path.insert(0, CLUSTER_DIR)

import cluster_control_plane  # noqa: E402  pylint: disable=wrong-import-position
import cluster_crio  # noqa: E402  pylint: disable=wrong-import-position
import cluster_real_node  # noqa: E402  pylint: disable=wrong-import-position

V1 = "cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n"
V2 = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n"


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


def test_real_nodes_on_a_host_with_cgroup_v1_hierarchies_pass(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\n" + V2.replace("/sys/fs/cgroup ", "/sys/fs/cgroup/unified ") + V1)
    assert cluster_real_node.host_problem({"CLUSTER_REAL_NODES": "1"}, str(mounts)) is None


def test_real_nodes_on_a_cgroup_v2_only_host_are_refused_with_the_fix(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\n" + V2)
    problem = cluster_real_node.host_problem({"CLUSTER_REAL_NODES": "1"}, str(mounts))
    assert problem.startswith("CLUSTER_REAL_NODES=1: real nodes need the host's cgroup v1 hierarchies")
    assert problem.endswith("use simulated nodes instead: CLUSTER_REAL_NODES=0 CLUSTER_NODES=1")
    # no real node asked for: nothing to check
    assert cluster_real_node.host_problem({"CLUSTER_REAL_NODES": "0"}, str(mounts)) is None


def test_this_host_can_run_real_nodes():
    """The machines this suite runs on have cgroup v1 (real-nodes.md); the real-node tests need it."""
    assert cluster_real_node.host_problem({"CLUSTER_REAL_NODES": "1"}) is None


def test_a_cri_o_node_without_conmon_is_refused_before_anything_starts(tmp_path, monkeypatch):
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\n" + V1)
    settings = {"CLUSTER_REAL_NODES": "2", "CLUSTER_REAL_NODE_OVERRIDES": '{"real02": {"runtime": "cri-o"}}'}
    monkeypatch.setattr(cluster_crio, "CONMON", str(tmp_path / "no-conmon"))
    problem = cluster_real_node.host_problem(settings, str(mounts))
    assert problem.startswith("real node(s) real02 run CRI-O, which needs Debian's conmon at ") and "make deps" in problem
    # a bad spec is left to start_real_nodes, which names it (exit 2)
    assert cluster_real_node.host_problem(dict(settings, CLUSTER_REAL_NODE_OVERRIDES='{"real02": {"runtime": 1}}'),
                                          str(mounts)) is None
