"""real_nodes_lib.host_real_nodes_owner (tests/integration), which is cluster_kube_proxy.owner_elsewhere:
the integration suite stops before its first test when a cluster outside it holds the host's
real-node kube-proxy lock, and names it; a second cluster's kube-proxy start makes the same check."""
import os
import signal
import subprocess
import sys
import time

INTEGRATION_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "integration"))
if INTEGRATION_DIR not in sys.path:
    sys.path.insert(0, INTEGRATION_DIR)

import cluster_kube_proxy  # noqa: E402  pylint: disable=wrong-import-position
import real_nodes_lib  # noqa: E402  pylint: disable=wrong-import-position


def use_cache(monkeypatch, tmp_path):
    """The lock and owner files under tmp_path (cluster_kube_proxy reads the cache dir at import)."""
    monkeypatch.setattr(cluster_kube_proxy, "LOCK", str(tmp_path / "kube-proxy.lock"))
    monkeypatch.setattr(cluster_kube_proxy, "OWNER", str(tmp_path / "kube-proxy.owner"))


def test_no_lock_file_or_a_free_lock_means_no_owner(tmp_path, monkeypatch):
    use_cache(monkeypatch, tmp_path)
    assert real_nodes_lib.host_real_nodes_owner() is None
    (tmp_path / "kube-proxy.lock").write_text("")
    (tmp_path / "kube-proxy.owner").write_text("/somewhere/.cluster\n")   # left by a cluster that is gone
    assert real_nodes_lib.host_real_nodes_owner() is None


def test_a_held_lock_names_the_state_dir_that_holds_it(tmp_path, monkeypatch):
    use_cache(monkeypatch, tmp_path)
    lock = tmp_path / "kube-proxy.lock"
    lock.write_text("")
    (tmp_path / "kube-proxy.owner").write_text("/work/main/.cluster\n")
    # the same lock kube-proxy holds for its lifetime (cluster_kube_proxy.py: flock -n <lock> kube-proxy)
    holder = subprocess.Popen(["flock", "-n", str(lock), "sleep", "30"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        owner = None
        while owner is None and time.monotonic() < deadline:
            owner = real_nodes_lib.host_real_nodes_owner()
            time.sleep(0.05)
        assert owner == "/work/main/.cluster"
    finally:
        os.killpg(holder.pid, signal.SIGKILL)   # flock and its sleep, which holds the lock too
        holder.wait()
    assert real_nodes_lib.host_real_nodes_owner() is None
