# SPDX-License-Identifier: Apache-2.0
"""The bench's profiled module run (bench/profile-module-1000x8.txt) gets the same arguments as the
measured "module" waiter, not_ready_nodes included as the role passes it: a profile of other
arguments (without not_ready_nodes the module lists every Node after the wait) would explain a
latency the measured passes never had."""
import json
import os
import sys
import types

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "bench"))

import passes  # noqa: E402  pylint: disable=wrong-import-position
import waiters  # noqa: E402  pylint: disable=wrong-import-position


def test_the_profiled_module_gets_the_measured_waiters_arguments(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(waiters, "Child", lambda wid, argv, env, cwd, workdir: started.append(argv))
    cl = types.SimpleNamespace(kubeconfigs={"module": "/k/module.kubeconfig"})
    sc = types.SimpleNamespace(targets=["node-0001", "node-0002"])
    passes.start_profiled_module(cl, sc, str(tmp_path), 240.0)
    [argv] = started
    assert argv[-1] == str(tmp_path / "module-args.json") and "pyinstrument" in argv
    with open(argv[-1]) as f:
        profiled = json.load(f)["ANSIBLE_MODULE_ARGS"]
    assert profiled == waiters.module_args("module", "/k/module.kubeconfig", sc.targets, 240.0)
    assert profiled == {"kubeconfig": "/k/module.kubeconfig", "timeout": 240, "wait": True,
                        "not_ready_nodes": [], "nodes": ["node-0001", "node-0002"]}


def test_the_pods_waiter_finds_its_targets_as_the_role_does():
    """roles/dra_cpu/tasks/topology.yml: the release's DaemonSets give the pods (and their rollout)."""
    args = waiters.module_args("module_pods", "/k/c", ["n1"], 30)
    assert args == {"kubeconfig": "/k/c", "timeout": 30, "wait": True, "not_ready_nodes": [],
                    "namespace": "dra-driver-cpu", "release_name": "dra-driver-cpu"}
