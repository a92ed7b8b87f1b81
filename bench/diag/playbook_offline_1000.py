"""DIAGNOSTIC: bench/wait_topology.yml (the role's validate.yml + topology.yml + the bench's debug task)
through ansible-playbook, with no cluster: offline_plugins/diag_offline_api.py replaces the API of
cpu_topology's run by a fake replaying bench/timeline.py's 1000 x 8 "spread" slices. Measures, per
repetition, wall from the wait's end / the action's return / the worker's send to ansible-playbook's exit.

    .venv/bin/python bench/diag/playbook_offline_1000.py [--tree DIR] [--reps 7] [--nodes 1000] [--cells 8]
        [--profile-main main.prof] [--profile-worker worker.prof]

--tree: a checkout of the collection (default: this repo) holding ansible.cfg and
.collections/ansible_collections/kubevirtci/dra_cpu (a copy made for an experiment goes in /tmp).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VENV_BIN = os.path.join(REPO, ".venv", "bin")


def once(tree, nodes, cells, workdir, profile_main=None, profile_worker=None):
    marks = os.path.join(workdir, "marks.jsonl")
    if os.path.exists(marks):
        os.unlink(marks)
    vars_path = os.path.join(workdir, "vars.json")
    kubeconfig = os.path.join(workdir, "kubeconfig")   # never read: the client is faked
    with open(kubeconfig, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: offline\nclusters:\n- name: offline\n"
                "  cluster: {server: 'https://127.0.0.1:9'}\ncontexts:\n- name: offline\n"
                "  context: {cluster: offline, user: offline}\nusers:\n- name: offline\n  user: {token: x}\n")
    with open(vars_path, "w") as f:
        json.dump({"bench_kubeconfig": kubeconfig, "bench_timeout": 600}, f)
    env = dict(os.environ)
    env.update({
        "ANSIBLE_CONFIG": os.path.join(tree, "ansible.cfg"),
        "PATH": VENV_BIN + os.pathsep + env.get("PATH", ""),
        "ANSIBLE_LOCAL_TEMP": os.path.join(workdir, "ansible-tmp"),
        "ANSIBLE_PYTHON_INTERPRETER": os.path.join(VENV_BIN, "python"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default",
        "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
        "ANSIBLE_CALLBACK_PLUGINS": os.path.join(HERE, "offline_plugins"),
        "DIAG_OFFLINE_NODES": str(nodes), "DIAG_OFFLINE_CELLS": str(cells), "DIAG_MARKS": marks,
        "KUBECONFIG": kubeconfig,
    })
    env.pop("DIAG_PROFILE_WORKER", None)
    env.pop("DIAG_PROFILE_MAIN_AFTER", None)
    if profile_worker:
        env["DIAG_PROFILE_WORKER"] = profile_worker
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), os.path.join(tree, "bench", "wait_topology.yml"),
           "-e", "@" + vars_path]
    if profile_main and profile_main.endswith(".after.prof"):
        env["DIAG_PROFILE_MAIN_AFTER"] = profile_main
    elif profile_main:
        cmd = [os.path.join(VENV_BIN, "python"), "-m", "cProfile", "-o", profile_main] + cmd
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    p = subprocess.run(cmd, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t_exit = time.time()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode or "BENCH_WAIT_STATS" not in p.stdout:
        sys.exit("ansible-playbook failed (%d):\n%s" % (p.returncode, p.stdout[-4000:]))
    m = {}
    with open(marks) as f:
        for line in f:
            d = json.loads(line)
            m[d["tag"]] = d
    return {"total": t_exit - t0, "wait_end_to_exit": t_exit - m["wait_end"]["t"],
            "action_return_to_exit": t_exit - m["action_return"]["t"],
            "worker_sent_to_exit": t_exit - m["worker_sent"]["t"],
            "wait_end_to_action_return": m["action_return"]["t"] - m["wait_end"]["t"],
            "action_return_to_worker_sent": m["worker_sent"]["t"] - m["action_return"]["t"],
            "worker_sent_to_main_seen": m["main_result_seen"]["t"] - m["worker_sent"]["t"],
            "main_result_processing": m["main_result_done"]["t"] - m["main_result_seen"]["t"],
            "main_done_to_atexit": m["atexit_last"]["t"] - m["main_result_done"]["t"],
            "atexit_to_exit": t_exit - m["atexit_last"]["t"],
            "worker_gc_after_action": m["worker_sent"].get("gc_s", float("nan")),
            "main_gc_after_result": m["atexit_last"].get("gc_s", float("nan")),
            "cpu_all_processes": (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime),
            "main_gc_tracked": m["main_result_seen"].get("gc_tracked"),
            "kubernetes_in_main": m["main_result_seen"].get("kubernetes_in_main")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", action="append", help="repeatable: the trees are run in turn, rep by rep")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--cells", type=int, default=8)
    ap.add_argument("--profile-main", help="whole process under cProfile; a name ending in .after.prof: "
                    "only the main thread from the moment the cpu_topology result is taken off the queue")
    ap.add_argument("--profile-worker")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    trees = [os.path.abspath(t) for t in (a.tree or [REPO])]
    runs = dict((t, []) for t in trees)
    with tempfile.TemporaryDirectory(prefix="pbdiag-") as workdir:
        for i in range(a.reps):
            for tree in trees:
                r = once(tree, a.nodes, a.cells, workdir)
                runs[tree].append(r)
                print("rep %d %s: " % (i, tree) + ", ".join(
                    ("%s %.3f" % (k, v)) if isinstance(v, float) else ("%s %s" % (k, v)) for k, v in r.items()), flush=True)
        if a.profile_main or a.profile_worker:   # one extra, profiled run of the first tree (not in the medians)
            once(trees[0], a.nodes, a.cells, workdir, a.profile_main, a.profile_worker)
    out = {}
    for tree in trees:
        med = dict((k, statistics.median(r[k] for r in runs[tree])) for k in runs[tree][0] if isinstance(runs[tree][0][k], float))
        out[tree] = med
        print("MEDIAN tree %s, %d x %d, %d reps: %s" % (tree, a.nodes, a.cells, len(runs[tree]),
                                                         ", ".join("%s %.3f" % kv for kv in med.items())))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"runs": runs, "medians": out}, f, indent=1)


if __name__ == "__main__":
    main()
