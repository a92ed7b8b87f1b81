"""Which processes a real node's teardown takes as its own (tests/cluster/cluster_processes.py
pids_in_mntns, wait_new_mntns), on real mount namespaces (`unshare -m`, as run.sh's start).

Issue 30: a real node's run.sh died at once, silently, while another lane tore its own real-node
cluster down. The teardown killed, round after round, every process in the mount namespace its
node had had, found by the namespace's number; the kernel gives a freed namespace's number to the
next namespace made on the machine (the lowest free one), so once the old node's last process was
gone, the number named the new node another lane had just unshared, and the teardown SIGKILLed it.
These tests make that happen on purpose and assert that the finder takes only processes carrying
the cluster's id. They need root (unshare), as the test cluster does.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
if CLUSTER_DIR not in sys.path:
    sys.path.insert(0, CLUSTER_DIR)

import cluster_processes as procs  # noqa: E402  pylint: disable=wrong-import-position
from cluster_state import ID_ENV, STATE  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="unshare -m needs root (as the test cluster does)")


def start_in_new_mntns(state, delay=0.0):
    """A process that (after `delay` s) execs `unshare -m sleep`, with cluster id `state`."""
    env = dict(os.environ, **{ID_ENV: state})
    return subprocess.Popen(["sh", "-c", f"sleep {delay}; exec unshare -m sleep 60"], env=env)


def stop(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_a_slow_start_is_waited_for_not_read_as_the_hosts_namespace():
    """The old start read the namespace 0.2 s after spawning; a start slower than that recorded the
    host's own namespace (and the teardown would have claimed every process on the machine)."""
    proc = start_in_new_mntns(STATE, delay=0.5)
    try:
        ns = procs.wait_new_mntns(proc.pid)
        assert ns is not None and ns != procs.mntns_of(os.getpid())
        assert ns == procs.mntns_of(proc.pid)
        assert procs.pids_in_mntns(ns) == [proc.pid]
    finally:
        stop(proc)


def test_a_start_that_exits_gives_no_namespace():
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert procs.wait_new_mntns(proc.pid, timeout=1) is None


def test_another_clusters_namespace_with_the_freed_number_is_not_claimed():
    """The race itself: this cluster's node namespace goes away; another cluster's new namespace gets
    its number (retried a few times in case a third process took the number first); the finder
    must not take the other cluster's process, which the number alone would."""
    reused = None
    for _attempt in range(20):
        mine = start_in_new_mntns(STATE)
        ns = procs.wait_new_mntns(mine.pid)
        assert procs.pids_in_mntns(ns) == [mine.pid]
        stop(mine)
        other = start_in_new_mntns("/another/lane/state")
        other_ns = procs.wait_new_mntns(other.pid)
        if other_ns == ns:
            reused = (ns, other)
            break
        stop(other)
        time.sleep(0.05)
    assert reused, "the kernel never gave a freed mount namespace's number to the next one in 20 tries"
    ns, other = reused
    try:
        assert procs.mntns_of(other.pid) == ns          # what the number alone would have claimed
        assert procs.pids_in_mntns(ns) == []            # what the teardown now takes
    finally:
        stop(other)


def test_a_node_that_exits_says_why_with_its_programs_logs(tmp_path, monkeypatch, capsys):
    """Issue 30 item 2: `cluster.py up` printed only run.sh's log, which held its own command line;
    containerd and the kubelet log to files of their own. wait_for now prints those tails too."""
    state = str(tmp_path)
    monkeypatch.setattr(procs, "STATE", state)
    monkeypatch.setattr(procs, "p", lambda *parts: os.path.join(state, *parts))
    logs = []
    for prog, line in (("containerd", "level=fatal msg=\"containerd said this\""),
                       ("kubelet", "E1204 command failed err=\"kubelet said this\"")):
        path = tmp_path / "logs" / f"real-real01-{prog}.log"
        path.parent.mkdir(exist_ok=True)
        path.write_text(line + "\n")
        logs.append(str(path))
    procs.spawn("real-real01", ["sh", "-c", "echo 'run.sh: kubelet exited with status 1'; exit 1"])
    with pytest.raises(SystemExit):
        procs.wait_for("real node real01 Ready", lambda: False, 10, proc="real-real01", logs=logs)
    err = capsys.readouterr().err
    assert "real-real01 exited" in err
    for said in ("run.sh: kubelet exited with status 1", "containerd said this", "kubelet said this",
                 "real-real01-containerd.log", "real-real01-kubelet.log"):
        assert said in err, said
