"""The five waiters (ALL, described in LABELS), each a child process started with its own identity
(kubeconfig): starting them, reaping them (return time, CPU seconds, peak memory) and reading their
outcome (ready or not, the node named, the wait's stats).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
VENV = os.path.join(REPO, ".venv")
VENV_BIN = os.path.join(VENV, "bin")
KUBECTL = os.path.join(VENV_BIN, "kubectl")
MODULE = os.path.join(REPO, "plugins", "modules", "cpu_topology.py")
PLAYBOOK = os.path.join(HERE, "wait_topology.yml")
GNU_TIME = "/usr/bin/time"

ALL = ("rule1", "rule2", "module", "module_pods", "playbook")
CORE = ("rule1", "rule2", "module", "playbook")   # in every pass, also in results of older runs
OURS = ("module", "module_pods", "playbook")      # the collection's paths (goals: 0 false ready)
# rule1: bench/rule1.sh; rule2: bench/rule2.sh (then `kubectl rollout status` of the driver's DaemonSet);
# module: plugins/modules/cpu_topology.py args.json with `nodes` = the scenario's targets; module_pods:
# the same without `nodes` (targets from the driver DaemonSet's pods, the role's path); playbook:
# ansible-playbook bench/wait_topology.yml, the role's topology tasks (no `nodes`)
LABELS = {
    "rule1": "rule 1: shell installer (5 s, count slices >= nodes)",
    "rule2": "rule 2: upstream CI (1 s x 120, any slice; then rollout status)",
    "module": "cpu_topology, direct module run with nodes",
    "module_pods": "cpu_topology, direct module run without nodes (targets from the driver pods)",
    "playbook": "the role's topology tasks via ansible-playbook (no nodes)",
}
SHORT = {"rule1": "rule 1 (shell)", "rule2": "rule 2 (upstream CI)", "module": "module (nodes)",
         "module_pods": "module (driver pods)", "playbook": "role (ansible-playbook)"}
UPSTREAM_POLLS = 120


def venv_site_packages():
    out = subprocess.run([os.path.join(VENV_BIN, "python"), "-c",
                          "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         stdout=subprocess.PIPE, text=True, check=True)
    return out.stdout.strip()


_SITE = None


def module_env():
    global _SITE
    if _SITE is None:
        _SITE = venv_site_packages()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, ".collections"), _SITE])
    return env


class Child:
    def __init__(self, wid, argv, env, cwd, workdir):
        self.wid = wid
        self.argv = argv
        self.out_path = os.path.join(workdir, f"{wid}.out")
        self.err_path = os.path.join(workdir, f"{wid}.err")
        self.start = None
        self.end = None
        self.rc = None
        self.rusage = None
        self.rss_path = os.path.join(workdir, f"{wid}.rss")
        if os.path.exists(self.rss_path):
            os.unlink(self.rss_path)
        self._out = open(self.out_path, "w")
        self._err = open(self.err_path, "w")
        self.start = time.time()
        self.proc = subprocess.Popen(measured(argv, self.rss_path), env=env, cwd=cwd, stdout=self._out, stderr=self._err,
                                     start_new_session=True)
        self.thread = threading.Thread(target=self._reap, daemon=True)
        self.thread.start()

    def _reap(self):
        _, status, ru = os.wait4(self.proc.pid, 0)
        self.end = time.time()
        self.rc = os.waitstatus_to_exitcode(status)
        self.proc.returncode = self.rc
        self.rusage = ru
        self._out.close()
        self._err.close()

    def join(self, deadline):
        self.thread.join(max(0.0, deadline - time.time()))
        if self.thread.is_alive():
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.thread.join(10)
            return False
        return True

    def peak_rss_kib(self):
        """The waiter's own peak RSS in KiB (GNU time's %M), None when it was killed before writing it."""
        return read_peak_rss(self.rss_path)

    def output(self):
        with open(self.out_path, errors="replace") as f:
            out = f.read()
        with open(self.err_path, errors="replace") as f:
            err = f.read()
        return out, err


def measured(argv, rss_path):
    """``argv`` under GNU time, which writes the peak RSS (KiB) of argv's process tree to rss_path.

    Return time is when the bench reaps the child (os.wait4 in a thread per child, time.time()); CPU
    seconds come from the same wait4. Peak memory does not: on Linux a process that execs keeps the
    peak RSS of the copy of its parent it was forked as, so wait4's ru_maxrss of any child of this
    (large) benchmark process is at least the benchmark's own size. GNU time (``/usr/bin/time -f %M``,
    a 2 MiB C program) forks the waiter from its own small image and writes the waiter's own peak RSS
    (the largest of its process tree: bash + kubectl for the rules, ansible-playbook's largest process
    for the playbook)."""
    if not os.access(GNU_TIME, os.X_OK):
        raise RuntimeError(f"{GNU_TIME} is missing (Debian package time; make deps installs it)")
    return [GNU_TIME, "-q", "-f", "%M", "-o", rss_path, "--"] + list(argv)


def read_peak_rss(path):
    try:
        with open(path) as f:
            lines = [line.strip() for line in f if line.strip()]
        return int(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


def module_args(wid, kubeconfig, nodes, timeout):
    """The direct module's arguments for waiter ``wid`` ("module": the target nodes given;
    "module_pods": found from the driver's pods), the same for the measured and the profiled runs."""
    # not_ready_nodes as the role passes it (preflight's list: every node Ready here), so the
    # module does not list the Nodes again, as in the role's run
    margs = {"kubeconfig": kubeconfig, "timeout": int(timeout), "wait": True, "not_ready_nodes": []}
    if wid == "module":
        margs["nodes"] = list(nodes)
    elif wid == "module_pods":
        # the role's arguments: the pods of the release's DaemonSets (their rollout is read after the
        # pools, in one list of the DaemonSets when it is done)
        margs["namespace"] = "dra-driver-cpu"
        margs["release_name"] = "dra-driver-cpu"
    else:
        raise ValueError(wid)
    return margs


def write_module_args(path, wid, kubeconfig, nodes, timeout):
    """module_args() as the module's args file at ``path``; returns the path."""
    with open(path, "w") as f:
        json.dump({"ANSIBLE_MODULE_ARGS": module_args(wid, kubeconfig, nodes, timeout)}, f)
    return path


def start(wid, kubeconfig, nodes, workdir, timeout, poll_tries=None):
    """Start one waiter; timeout (s) is the module's `timeout` and caps the polling rules."""
    os.makedirs(workdir, exist_ok=True)
    env = dict(os.environ)
    env["KUBECONFIG"] = kubeconfig
    env["KUBECACHEDIR"] = os.path.join(workdir, "..", "kubectl-cache-" + wid)
    if wid == "rule1":
        env.update(KUBECTL=KUBECTL, INTERVAL="5", MAX_TRIES=str(poll_tries or max(1, int(timeout // 5) + 1)))
        return Child(wid, ["bash", os.path.join(HERE, "rule1.sh")], env, REPO, workdir)
    if wid == "rule2":
        # upstream: 120 polls, then the rollout; its rollout status has no timeout, here the pass's
        env.update(KUBECTL=KUBECTL, INTERVAL="1", MAX_TRIES=str(poll_tries or UPSTREAM_POLLS),
                   ROLLOUT_TIMEOUT=str(int(timeout)), NAMESPACE="dra-driver-cpu", DAEMONSET="dra-driver-cpu")
        return Child(wid, ["bash", os.path.join(HERE, "rule2.sh")], env, REPO, workdir)
    if wid in ("module", "module_pods"):
        args = write_module_args(os.path.join(workdir, f"{wid}-args.json"), wid, kubeconfig, nodes, timeout)
        return Child(wid, [os.path.join(VENV_BIN, "python"), MODULE, args], module_env(), REPO, workdir)
    if wid == "playbook":
        vars_path = os.path.join(workdir, "playbook-vars.json")
        with open(vars_path, "w") as f:
            json.dump({"bench_kubeconfig": kubeconfig, "bench_timeout": int(timeout)}, f)
        env["ANSIBLE_CONFIG"] = os.path.join(REPO, "ansible.cfg")
        env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
        env["ANSIBLE_LOCAL_TEMP"] = os.path.join(workdir, "ansible-tmp")
        env["ANSIBLE_PYTHON_INTERPRETER"] = os.path.join(VENV_BIN, "python")
        # the default callback, as a user runs it (no 4 MB JSON document of the whole run written at
        # the end); its json result format keeps the stats line and a failure's result on one line each
        env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.builtin.default"
        env["ANSIBLE_CALLBACK_RESULT_FORMAT"] = "json"
        return Child(wid, [os.path.join(VENV_BIN, "ansible-playbook"), PLAYBOOK, "-e", "@" + vars_path],
                     env, REPO, workdir)
    raise ValueError(wid)


STATS_MARK = "BENCH_WAIT_STATS "
FAILED_MARK = "FAILED! => "


def playbook_outcome(out):
    """From the default callback's output of bench/wait_topology.yml: ``wait_stats`` (its last task
    prints them after the STATS_MARK) and, when a task failed, ``failed`` and its ``msg`` (the
    callback prints a failed result as one JSON object after FAILED_MARK)."""
    task = {}
    for line in out.splitlines():
        if FAILED_MARK in line:
            try:
                failed, _ = json.JSONDecoder().raw_decode(line[line.index(FAILED_MARK) + len(FAILED_MARK):])
            except ValueError:
                failed = {"msg": line}
            task.update(failed=True, msg=failed.get("msg", ""))
        elif STATS_MARK in line and '"msg": ' in line:
            try:
                text = json.loads(line[line.index('"msg": ') + len('"msg": '):].rstrip().rstrip(","))
                task["wait_stats"] = json.loads(text[text.index(STATS_MARK) + len(STATS_MARK):])
            except ValueError:
                pass
    return task


def outcome(child, special_node=None):
    """{ready: bool, rc, named: bool|None, stats: dict|None, msg}"""
    out, err = child.output()
    res = {"rc": child.rc, "ready": child.rc == 0, "named": None, "stats": None, "msg": ""}
    if child.wid in ("module", "module_pods"):
        try:
            data = json.loads(out[out.index("{"):])
        except ValueError:
            data = {"failed": True, "msg": f"no JSON from the module: {out[-300:]} {err[-300:]}"}
        res["ready"] = child.rc == 0 and not data.get("failed")
        res["msg"] = str(data.get("msg", ""))[:2000]
        res["stats"] = data.get("wait_stats")
    elif child.wid == "playbook":
        task = playbook_outcome(out)
        res["ready"] = child.rc == 0 and not task.get("failed")
        res["msg"] = str(task.get("msg") or f"{out[-300:]} {err[-300:]}")[:2000]
        res["stats"] = task.get("wait_stats")
    else:
        res["msg"] = (out + err).strip()[-300:]
    if special_node and not res["ready"] and child.wid in OURS:
        res["named"] = special_node in (res["msg"] or out)
    return res
