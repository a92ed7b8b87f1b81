"""The whole-run comparison: from empty to ready and a no-op re-run, on twin one-node clusters, of
playbooks/install.yml against the hand-written kubernetes.core playbook and the shell installer."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time

import cluster_ctl
import waiters
from cluster_ctl import log
from waiters import HERE, REPO, VENV_BIN


def helm_revisions(env, helm):
    r = subprocess.run([helm, "history", "dra-driver-cpu", "-n", "dra-driver-cpu", "-o", "json"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return 0
    return len(json.loads(r.stdout or "[]"))


def timed(argv, env, log_path, timeout=900):
    t = time.monotonic()
    with open(log_path, "w") as f:
        r = subprocess.run(argv, env=env, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
    wall = time.monotonic() - t
    with open(log_path, errors="replace") as f:
        text = f.read()
    return wall, r.returncode, text


def recap_changed(text):
    m = re.findall(r"localhost\s+:\s+ok=(\d+)\s+changed=(\d+)", text)
    return int(m[-1][1]) if m else None


def wait_gone(cl, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ns = None
        try:
            ns = cl.api.get("/api/v1/namespaces/dra-driver-cpu")
        except cluster_ctl.sim_api.ApiError as e:
            if e.status != 404:
                raise
        sl = cl.api.get(cluster_ctl.SLICES, query={"fieldSelector": "spec.driver=dra.cpu", "limit": "1"})
        if ns is None and not sl.get("items"):
            return time.monotonic()
        time.sleep(0.5)
    raise RuntimeError("the driver's namespace/slices did not go away")


def whole_run(state_dir, workdir, reps):
    """From empty to ready and a no-op re-run, on twin 1-node clusters with the simulated driver:
    cluster a runs playbooks/install.yml, cluster b the hand-written kubernetes.core playbook
    (bench/handwritten_install.yml) and then the shell installer's sequence. Which twin goes first
    alternates between repetitions."""
    twins = {side: cluster_ctl.Cluster(f"{state_dir}-{side}", 1, simulate_driver=True, vcpu=12, numa=2,
                                       extra={"CLUSTER_SLICE_DELETE_DELAY": "2"}) for side in ("a", "b")}
    res = {"reps": [], "cluster_up_s": None, "notes": [], "twins": True}
    os.makedirs(workdir, exist_ok=True)
    try:
        for side, cl in twins.items():
            cl.up()
        res["cluster_up_s"] = round(max(cl.up_seconds for cl in twins.values()), 1)
        envs = {side: _whole_env(cl, os.path.join(workdir, side)) for side, cl in twins.items()}

        def helm_of(side):
            return twins[side].env["CLUSTER_HELM_BINARY"]

        def cleanup(side):
            env = envs[side]
            subprocess.run([helm_of(side), "uninstall", "dra-driver-cpu", "-n", "dra-driver-cpu", "--wait"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            subprocess.run([waiters.KUBECTL, "delete", "namespace", "dra-driver-cpu", "--ignore-not-found",
                            "--wait=true", "--timeout=120s"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            wait_gone(twins[side])

        def pair(side, name, argv, env, rep, changed=True):
            out = {}
            r0 = helm_revisions(env, helm_of(side))
            for phase in ("install", "noop"):
                wall, rc, text = timed(argv, env, os.path.join(workdir, f"{name}-{phase}-{rep}.log"))
                r1 = helm_revisions(env, helm_of(side))
                out[phase] = {"wall": round(wall, 2), "rc": rc, "new_revisions": r1 - r0}
                if changed:
                    out[phase]["changed"] = recap_changed(text)
                r0 = r1
            log(f"whole run rep {rep}: {name} {out}")
            return out

        def side_a(rep):
            cl, env = twins["a"], envs["a"]
            evars = json.dumps({"dra_cpu_kubeconfig": cl.env["KUBECONFIG"], "dra_cpu_chart": cl.env["DRA_CPU_CHART"],
                                "dra_cpu_chart_plain_http": True, "dra_cpu_helm_binary": helm_of("a")})
            play = [os.path.join(VENV_BIN, "ansible-playbook"), os.path.join(REPO, "playbooks", "install.yml"),
                    "-e", evars]
            out = {"ansible": pair("a", "install", play, env, rep)}
            wall, rc, _ = timed([os.path.join(VENV_BIN, "ansible-playbook"),
                                 os.path.join(REPO, "playbooks", "uninstall.yml"), "-e", evars], env,
                                os.path.join(workdir, f"uninstall-{rep}.log"))
            if rc != 0:
                res["notes"].append(f"uninstall.yml failed (rc {rc}) in rep {rep}; cleaned up with helm/kubectl")
            cleanup("a")
            return out

        def side_b(rep):
            cl, env = twins["b"], envs["b"]
            hw = [os.path.join(VENV_BIN, "ansible-playbook"), os.path.join(HERE, "handwritten_install.yml"), "-e",
                  json.dumps({"hw_kubeconfig": cl.env["KUBECONFIG"], "hw_chart": cl.env["DRA_CPU_CHART"],
                              "hw_helm": helm_of("b")})]
            out = {"handwritten": pair("b", "handwritten", hw, env, rep)}
            cleanup("b")
            shell_env = dict(env, KUBECTL=waiters.KUBECTL, HELM=helm_of("b"), DRA_CPU_CHART=cl.env["DRA_CPU_CHART"],
                             KUBEVIRT_PROVIDER="k8s-1.36")
            out["shell"] = pair("b", "shell", ["bash", os.path.join(HERE, "shell_install.sh")], shell_env, rep,
                                changed=False)
            cleanup("b")
            return out

        for rep in range(reps):
            one = {}
            for side in (("a", "b") if rep % 2 == 0 else ("b", "a")):
                one.update(side_a(rep) if side == "a" else side_b(rep))
            res["reps"].append(one)
    finally:
        for cl in twins.values():
            res["notes"] += cl.notes
            cl.down()
    return res


def _whole_env(cl, workdir):
    env = dict(os.environ)
    env.update({"KUBECONFIG": cl.env["KUBECONFIG"], "KUBEVIRT_USE_DRA_CPU": "true",
                "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
                "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", ""),
                "HELM_CONFIG_HOME": os.path.join(workdir, "helm", "config"),
                "HELM_CACHE_HOME": os.path.join(workdir, "helm", "cache"),
                "HELM_DATA_HOME": os.path.join(workdir, "helm", "data"),
                "KUBECACHEDIR": os.path.join(workdir, "kubectl-cache"),
                "ANSIBLE_LOCAL_TEMP": os.path.join(workdir, "ansible-tmp")})
    return env
