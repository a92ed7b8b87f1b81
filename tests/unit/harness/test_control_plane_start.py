"""`cluster.py up`'s start sequence (tests/cluster/cluster_control_plane.py start), every process and
wait replaced by a recorder: the components start in order, each is in <state>/cluster.json before
anything waits on it (so `down` stops it even when `up` fails there), the real nodes start only after
the charts' push has finished, and what `up` prints is <state>/env."""
import json
import os
import sys
import threading

import pytest

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
for d in (CLUSTER_DIR, os.path.join(CLUSTER_DIR, "sim")):
    if d not in sys.path:
        sys.path.insert(0, d)

import cluster_control_plane as cp  # noqa: E402  pylint: disable=wrong-import-position
import cluster_state  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(name="started")
def fixture_started(tmp_path, monkeypatch):
    """Runs start(settings) against the recorder; returns (events, state dir, stdout)."""
    state = tmp_path / "state"
    events = []
    push_done = threading.Event()
    monkeypatch.setattr(cluster_state, "STATE", str(state))
    monkeypatch.setattr(cp, "STATE", str(state))
    monkeypatch.delenv("CLUSTER_AUDIT_LOG", raising=False)
    monkeypatch.delenv("CLUSTER_UP_TIMEOUT", raising=False)
    ports = iter(range(41000, 41100))
    monkeypatch.setattr(cp, "free_port", lambda: next(ports))
    monkeypatch.setattr(cp, "binaries", lambda v: ({"helm": "/b/helm", "etcd": "/b/etcd", "kubernetes": "/b/k8s"},
                                                   "v3.22.0", "v3.6.0"))
    monkeypatch.setattr(cp, "driver_binaries", lambda: "/b/driver")
    monkeypatch.setattr(cp, "claim_node_network", lambda: ("10.213.0.0/16", "10.213.0.1"))
    monkeypatch.setattr(cp, "gen_pki", lambda extra_sans: events.append(("pki", tuple(extra_sans))))
    monkeypatch.setattr(cp, "kubeconfig", lambda server, token, user: f"{server} {user}\n")
    monkeypatch.setattr(cp, "helm_tarball", lambda d, v: "/b/mirror")
    monkeypatch.setattr(cp, "registry_config", lambda port, bind: events.append(("registry-bind", bind)) or "reg.yml")

    def push_charts(helm, registry):
        push_done.set()
        return ["0.3.0"], ["0.2.0"], []
    monkeypatch.setattr(cp, "push_charts", push_charts)

    def spawn(name, cmd, env=None, cwd=None):
        events.append(("spawn", name, tuple(cmd)))

    def wait_for(what, fn, timeout, interval=0.2, proc=None, logs=()):
        path = state / "cluster.json"
        events.append(("wait", what, proc, json.loads(path.read_text())["components"] if path.exists() else []))
    monkeypatch.setattr(cp, "spawn", spawn)
    monkeypatch.setattr(cp, "wait_for", wait_for)
    monkeypatch.setattr(cp, "log", lambda msg: None)

    def start_real_nodes(info, settings, tokens):
        events.append(("real nodes", push_done.is_set(), sorted(tokens)))
        return ["real-real01"]
    monkeypatch.setattr(cp, "start_real_nodes", start_real_nodes)

    def run(**knobs):
        cp.start(dict(cluster_state.KNOBS, **knobs))
        return events, state
    return run


def spawned(events):
    return [e[1] for e in events if e[0] == "spawn"]


def test_components_start_in_order_each_recorded_before_it_is_waited_on(started, capsys):
    events, state = started(CLUSTER_NODES="2", CLUSTER_REAL_NODES="1")
    names = spawned(events)
    names.remove("helm-mirror")   # started by the chart push, beside the control plane
    assert names == ["registry", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "sim"]
    waits = {e[1]: e[3] for e in events if e[0] == "wait"}
    assert "kube-apiserver" in waits["kube-apiserver /healthz"]
    assert "kube-scheduler" in waits["kube-apiserver /readyz"]
    assert "sim" in waits["2 Ready node(s)"]
    assert [e for e in events if e[0] == "real nodes"] == [("real nodes", True, ["admin", "kcm", "real01", "scheduler"])]
    info = json.loads((state / "cluster.json").read_text())
    assert info["components"] == ["registry", "helm-mirror", "etcd", "kube-apiserver", "kube-controller-manager",
                                  "kube-scheduler", "sim", "real-real01"]
    assert info["chart_versions"] == ["0.2.0", "0.3.0"]
    assert capsys.readouterr().out == (state / "env").read_text()
    assert "export CLUSTER_CHART_VERSIONS='0.2.0 0.3.0'\n" in (state / "env").read_text()


def test_real_nodes_only_no_simulator_and_the_registry_and_apiserver_answer_from_the_namespace(started):
    events, _state = started(CLUSTER_NODES="0", CLUSTER_REAL_NODES="1")
    assert "sim" not in spawned(events)
    assert ("registry-bind", "0.0.0.0") in events
    [apiserver] = [e[2] for e in events if e[0] == "spawn" and e[1] == "kube-apiserver"]
    assert "--bind-address=0.0.0.0" in apiserver and "--advertise-address=10.213.0.1" in apiserver
    assert ("pki", ("10.213.0.1",)) in events


def test_simulated_nodes_only_stay_on_loopback_with_the_feature_gates(started):
    events, state = started(CLUSTER_NODES="1", CLUSTER_REAL_NODES="0", CLUSTER_FEATURE_GATES="A=true")
    assert ("registry-bind", "127.0.0.1") in events
    assert not [e for e in events if e[0] == "real nodes"]
    cmds = {e[1]: e[2] for e in events if e[0] == "spawn"}
    assert "--bind-address=127.0.0.1" in cmds["kube-apiserver"]
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        # the version's (v1.36.3) defaults, then CLUSTER_FEATURE_GATES (cluster_feature_gates.py)
        assert cmds[name][-1] == "--feature-gates=DRAListTypeAttributes=true,A=true", name
    assert "real01" not in (state / "pki" / "tokens.csv").read_text()


def test_a_state_dir_not_ours_is_refused(started, tmp_path):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "precious").write_text("x")
    with pytest.raises(SystemExit):
        started(CLUSTER_NODES="1", CLUSTER_REAL_NODES="0")
    assert (tmp_path / "state" / "precious").read_text() == "x"
