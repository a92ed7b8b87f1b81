"""The host's inotify limits while real nodes run (tests/cluster/cluster_host_state.py FLOORS), on a
fake /proc/sys.

Issue 30: a real node's kubelet exited at once ("Failed to start cAdvisor" err="inotify_init: too
many open files", in its own log) while both lanes of `make test` ran real-node clusters: every
process runs as root, so all clusters share root's 128 inotify instances, and a kubelet takes 6,
containerd 2, a control plane 10 (counted on a real node here). Reproduced by hand before the fix:
one cluster with one real node and one with six up, a third with six failed at real06 with exactly
that line. tests/integration/test_real_node_stress.py runs more than 128 instances' worth of nodes
at once. Here: the first state dir in raises the limits it finds lower, leaves higher ones alone,
and the last one out restores what it found.
"""
import os
import sys

import pytest

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
if CLUSTER_DIR not in sys.path:
    sys.path.insert(0, CLUSTER_DIR)

import cluster_host_state as hs  # noqa: E402  pylint: disable=wrong-import-position

INSTANCES, WATCHES = "fs/inotify/max_user_instances", "fs/inotify/max_user_watches"


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A fake /proc/sys with the host's sysctls at `values`, a fake HOST_STATE and lock dir."""
    sys_dir = tmp_path / "proc-sys"

    def make(values):
        for k, v in values.items():
            (sys_dir / k).parent.mkdir(parents=True, exist_ok=True)
            (sys_dir / k).write_text(f"{v}\n")
        monkeypatch.setattr(hs, "PROC_SYS", str(sys_dir) + "/")
        monkeypatch.setattr(hs, "SYSCTLS", [])
        monkeypatch.setattr(hs, "FIXED", [])
        monkeypatch.setattr(hs, "HOST_STATE", str(tmp_path / "host-state.json"))
        monkeypatch.setattr(hs, "CACHE", str(tmp_path / "cache"))
        return lambda k: (sys_dir / k).read_text().strip()
    return make


def as_state(monkeypatch, state_dir):
    """Acts as state dir `state_dir` with real nodes (its real-nodes.json exists, as start_real_nodes
    writes it before it joins)."""
    os.makedirs(state_dir, exist_ok=True)
    with open(os.path.join(state_dir, "real-nodes.json"), "w") as f:
        f.write("{}")
    monkeypatch.setattr(hs, "STATE", str(state_dir))


def leave(monkeypatch, state_dir):
    os.unlink(os.path.join(state_dir, "real-nodes.json"))
    monkeypatch.setattr(hs, "STATE", str(state_dir))
    return hs.host_state(join=False)


def test_the_first_in_raises_the_limits_and_the_last_out_restores_them(host, tmp_path, monkeypatch):
    read = host({INSTANCES: 128, WATCHES: 192546})
    a, b = tmp_path / "lane1", tmp_path / "lane2"
    as_state(monkeypatch, a)
    assert hs.host_state(join=True) == []
    assert (read(INSTANCES), read(WATCHES)) == ("8192", "524288")
    as_state(monkeypatch, b)
    assert hs.host_state(join=True) == []
    assert leave(monkeypatch, a) == []
    assert read(INSTANCES) == "8192", "lowered while lane 2's nodes still run"
    assert leave(monkeypatch, b) == []
    assert (read(INSTANCES), read(WATCHES)) == ("128", "192546")
    assert not os.path.exists(hs.HOST_STATE)


def test_a_host_above_the_floor_is_left_as_it_is(host, tmp_path, monkeypatch):
    read = host({INSTANCES: 65536, WATCHES: 1048576})
    as_state(monkeypatch, tmp_path / "s")
    hs.host_state(join=True)
    assert (read(INSTANCES), read(WATCHES)) == ("65536", "1048576")
    leave(monkeypatch, tmp_path / "s")
    assert (read(INSTANCES), read(WATCHES)) == ("65536", "1048576")


def test_a_limit_that_cannot_be_raised_is_said(host, tmp_path, monkeypatch):
    host({WATCHES: 524288})            # no max_user_instances file: it cannot be read or written
    as_state(monkeypatch, tmp_path / "s")
    problems = hs.host_state(join=True)
    assert len(problems) == 1 and INSTANCES in problems[0] and "inotify_init: too many open files" in problems[0]


def test_a_fixed_path_missing_when_a_later_state_dir_joins_is_made_and_removed_by_the_last_out(host, tmp_path,
                                                                                               monkeypatch):
    """/run/crio joined FIXED for the CRI-O nodes (issue 32) while another state dir, started by an
    older cluster.py, may keep the host record open: the next one in makes it and records it, and
    the last one out removes it with the others."""
    host({INSTANCES: 8192, WATCHES: 524288})
    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    monkeypatch.setattr(hs, "FIXED", [str(tmp_path / "run-containerd")])
    as_state(monkeypatch, old)
    hs.host_state(join=True)
    crio = str(tmp_path / "run-crio")
    monkeypatch.setattr(hs, "FIXED", [str(tmp_path / "run-containerd"), crio])
    as_state(monkeypatch, new)
    hs.host_state(join=True)
    assert os.path.isdir(crio)
    assert leave(monkeypatch, new) == [] and os.path.isdir(crio)     # the old one still runs
    assert leave(monkeypatch, old) == []
    assert not os.path.exists(crio) and not os.path.exists(str(tmp_path / "run-containerd"))
