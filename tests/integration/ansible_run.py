"""Run the collection's playbooks against a test cluster and read their results.

The playbooks run with the `ansible.posix.json` stdout callback so assertions read task results and
stats instead of scraping text; the text of a failure is kept for messages.
"""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


class PlaybookResult:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        start = proc.stdout.find("{")
        self.data = json.loads(proc.stdout[start:]) if start >= 0 else {"plays": [], "stats": {}}

    @property
    def stats(self):
        return self.data.get("stats", {}).get("localhost", {})

    @property
    def changed(self):
        return self.stats.get("changed", 0)

    @property
    def failed(self):
        return self.stats.get("failures", 0) + self.stats.get("unreachable", 0)

    def tasks(self):
        for play in self.data.get("plays", []):
            for task in play.get("tasks", []):
                yield task["task"]["name"], task["hosts"].get("localhost", {})

    def results(self, contains):
        return [r for name, r in self.tasks() if contains in name]

    def result(self, contains):
        found = self.results(contains)
        assert found, f"no task named like {contains!r}; tasks: {[n for n, _ in self.tasks()]}"
        return found[-1]

    def changed_tasks(self):
        return [name for name, r in self.tasks() if r.get("changed")]

    def failure_messages(self):
        return [r.get("msg", "") for _, r in self.tasks() if r.get("failed")]

    def fact(self, name):
        """The last value a task set for fact `name` (None if no task set it)."""
        values = [r["ansible_facts"][name] for _, r in self.tasks() if name in (r.get("ansible_facts") or {})]
        return values[-1] if values else None

    def __repr__(self):
        return (f"<playbook rc={self.rc} stats={self.stats} changed_tasks={self.changed_tasks()} "
                f"failures={self.failure_messages()} stderr={self.stderr[-2000:]}>")


def run_playbook(cluster, playbook, extra_vars=None, env=None, check=False, use_dra_cpu="true",
                 verbosity=0, timeout=900, callback="ansible.posix.json"):
    """ansible-playbook playbooks/<playbook>.yml against `cluster` (kubeconfig and local chart)."""
    full_env = cluster.run_env() if cluster is not None else dict(os.environ)
    full_env.update({
        "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": callback,
        "ANSIBLE_FORCE_COLOR": "0",
        "PATH": BIN + os.pathsep + full_env.get("PATH", ""),
    })
    full_env.pop("KUBEVIRT_USE_DRA_CPU", None)
    if use_dra_cpu is not None:
        full_env["KUBEVIRT_USE_DRA_CPU"] = use_dra_cpu
    full_env.update(env or {})
    variables = {}
    if cluster is not None:
        variables.update(cluster_vars(cluster))
    variables.update(extra_vars or {})
    path = playbook if os.path.isabs(playbook) else os.path.join(REPO, "playbooks", playbook + ".yml")
    cmd = [os.path.join(BIN, "ansible-playbook"), path, "-e", json.dumps(variables)]
    if check:
        cmd.append("--check")
    if verbosity:
        cmd.append("-" + "v" * verbosity)
    proc = subprocess.run(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, cwd=REPO)
    if callback != "ansible.posix.json":
        return proc
    return PlaybookResult(proc)


def cluster_vars(cluster):
    """The variables that point the role at a test cluster: its kubeconfig, chart and helm mirror."""
    return {
        "dra_cpu_kubeconfig": cluster.kubeconfig,
        "dra_cpu_chart": cluster.chart,
        "dra_cpu_chart_plain_http": True,
        "dra_cpu_helm_mirror": cluster.env["CLUSTER_HELM_MIRROR"],
        "dra_cpu_helm_mirror_allow_http": True,
        "dra_cpu_helm_version": cluster.env["CLUSTER_HELM_VERSION"],
        "dra_cpu_helm_cache_dir": os.path.join(cluster.state_dir, "helm-cache"),
    }
