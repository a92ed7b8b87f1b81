"""bench/run.py's steps without clusters: --merge replaces a run's cluster sizes with another's, and a
full run keeps going past a broken pass or a cluster that does not come up, noting both, always taking
the cluster down and writing the report."""
import json
import os
import sys
import types

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "bench"))

import cluster_ctl  # noqa: E402  pylint: disable=wrong-import-position
import driver_slices  # noqa: E402  pylint: disable=wrong-import-position
import run  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(name="reports")
def fixture_reports(monkeypatch):
    written = []
    monkeypatch.setattr(run, "write_report", lambda results, out_dir: written.append(results) or "results.md")
    monkeypatch.setattr(run, "log", lambda msg: None)
    return written


def test_merge_replaces_the_other_runs_sizes(tmp_path, reports, capsys):
    base = {"clusters": [{"nodes": 10}, {"nodes": 1000}], "passes": [{"nodes": 10}, {"nodes": 1000, "old": True}],
            "notes": ["N=1000: slow", "N=10: fine", "kept"], "started": "a", "duration_s": 60, "plan": {"reps": 5}}
    other = {"clusters": [{"nodes": 1000}], "passes": [{"nodes": 1000}], "notes": ["new"], "started": "b",
             "duration_s": 120, "plan": {"reps": 3}, "profile": {"file": "p"}}
    (tmp_path / "results.json").write_text(json.dumps(base))
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert run.main(["--merge", str(tmp_path / "other.json"), "--out", str(tmp_path)]) == 0
    merged = json.loads((tmp_path / "results.json").read_text())
    assert merged["passes"] == [{"nodes": 10}, {"nodes": 1000}]
    assert merged["replaced_passes"] == [{"nodes": 1000, "old": True}]
    assert merged["clusters"] == [{"nodes": 10}, {"nodes": 1000}]
    assert merged["notes"][:3] == ["N=10: fine", "kept", "new"] and "merged (bench/run.py --merge)" in merged["notes"][3]
    assert merged["profile"] == {"file": "p"} and reports == [merged]
    assert capsys.readouterr().out == "results.md\n"


class FakeCluster:
    """Records what the bench asks of a cluster; N=100 does not come up."""
    log = []

    def __init__(self, state_dir, nodes, **_kw):
        self.nodes, self.notes, self.up_seconds = nodes, [], 1.0
        self.kubeconfigs = {"publisher": "k"}

    def up(self):
        self.log.append(("up", self.nodes))
        if self.nodes == 100:
            raise RuntimeError("no room")

    def down(self):
        self.log.append(("down", self.nodes))

    def ensure_nodes(self):
        return {}

    def setup_identities(self, _d):
        pass

    def ensure_driver_daemonset(self):
        return 0.0


def test_a_full_run_goes_on_past_a_broken_pass_and_a_failed_cluster(tmp_path, monkeypatch, reports):
    monkeypatch.setattr(driver_slices, "driver_chunks", lambda cpus, cells, reserved, mode: (({"name": "d"},),))
    monkeypatch.setattr(run.os, "geteuid", lambda: 0)
    monkeypatch.setattr(run, "machine", lambda: {})
    monkeypatch.setattr(cluster_ctl, "Cluster", FakeCluster)
    monkeypatch.setattr(cluster_ctl, "sim_api", types.SimpleNamespace(Api=lambda *a, **k: None))
    FakeCluster.log = []
    passes = []

    def run_pass(cl, sc, rep, *_a, **_kw):
        passes.append((sc.nodes, sc.kind, rep))
        if sc.kind == "spread" and rep == 1:
            raise RuntimeError("publisher lost")
        return {"nodes": sc.nodes, "kind": sc.kind, "rep": rep}
    monkeypatch.setattr(run, "run_pass", run_pass)
    monkeypatch.setattr(run, "crosscheck", lambda *a: pytest.fail("no crosscheck at these sizes"))
    argv = ["--reps", "2", "--adv-reps", "1", "--only-nodes", "10", "--only-nodes", "100", "--only-cells", "2",
            "--only-kinds", "spread", "--only-kinds", "stale", "--out", str(tmp_path / "out"),
            "--state-prefix", str(tmp_path / "st")]
    assert run.main(argv) == 0
    assert passes == [(10, "spread", 0), (10, "spread", 1), (10, "stale", 0)]
    assert FakeCluster.log == [("up", 10), ("down", 10), ("up", 100), ("down", 100)]
    [results] = reports
    assert [p["kind"] for p in results["passes"]] == ["spread", "stale"]
    assert results["notes"][0] == "pass spread N=10 cells=2 rep 1 broke: publisher lost"
    assert results["notes"][1] == "cluster N=100 failed: no room"
    assert [c["nodes"] for c in results["clusters"]] == [10, 100] and results["whole_run"] is None
    assert json.loads((tmp_path / "out" / "results.json").read_text())["passes"] == results["passes"]
