#!/usr/bin/env python3
"""The hermetic test cluster: real etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
helm and OCI registry on loopback. By default one real node, real01 (a real kubelet + containerd on a
fake CPU sysfs tree, the project's driver a real kubelet plugin: cluster_real_node.py), as `make
demo` runs; simulated nodes (tests/cluster/sim/) only with CLUSTER_NODES > 0, for what a real node
cannot be (other runtimes, the 1,000-node benchmark).

    cluster.py up       start it (idempotent); prints the `export ...` lines of <state>/env
    cluster.py down     stop everything it started, remove the network namespace and veth
    cluster.py status   what runs (exit 0 healthy, 1 partly up, 3 down)
    cluster.py env      print <state>/env (for `eval "$(tests/cluster/cluster.py env)"`)
    cluster.py restart-apiserver [SECONDS]
                        kill kube-apiserver, keep it down SECONDS (default 0), start it again with
                        the same flags and wait for /readyz (fault injection)
    cluster.py stop-kubelet NODE / start-kubelet NODE
                        freeze (SIGSTOP) / resume (SIGCONT) a real node's kubelet (fault injection:
                        the node goes NotReady after the node monitor grace period)
    cluster.py registry-off NODE / registry-on NODE
                        cut a real node off from the cluster's registry (its mirror at a closed port,
                        the images it pulled removed) / give it back (fault injection: pulls fail)

State directory: ${CLUSTER_STATE_DIR:-<repo>/.cluster}. Binaries: tests/cluster/build.sh, cached in
${CLUSTER_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/kubevirtci-dra-cpu}. See tests/cluster/README.md.

This file is the command line: it decides whether `up` has anything to do (health, changed knobs),
stops and reports. Must not: hold how a component is started (cluster_control_plane.py), the PKI
(cluster_pki.py), the network namespace (cluster_netns.py), process handling
(cluster_processes.py), the registry and charts (cluster_registry_charts.py) or the state dir's
paths and knobs (cluster_state.py).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VENV_PY = os.path.join(REPO, ".venv", "bin", "python")

# Re-exec under the repository's virtualenv (PyYAML, kubernetes, cryptography live there).
if os.path.exists(VENV_PY) and os.path.realpath(sys.prefix) != os.path.realpath(os.path.join(REPO, ".venv")) \
        and not os.environ.get("_DRACPU_CLUSTER_REEXEC"):
    os.environ["_DRACPU_CLUSTER_REEXEC"] = "1"
    os.execv(VENV_PY, [VENV_PY, os.path.abspath(__file__)] + sys.argv[1:])

import json  # noqa: E402
import shutil  # noqa: E402
import urllib.error  # noqa: E402

from cluster_control_plane import (  # noqa: E402
    check_node_counts, cmd_restart_apiserver, env_lines, ready_nodes, start,
)
from cluster_netns import netns_down, netns_exists, veth_exists  # noqa: E402
from cluster_processes import cmd_supervise, kill_group, kill_stragglers, pidinfo, proc_alive  # noqa: E402
from cluster_real_node import host_problem, real_nodes_alive, stop_real_nodes  # noqa: E402
from cluster_real_node_ops import cmd_kubelet_signal, cmd_registry  # noqa: E402
from cluster_registry_charts import push_charts  # noqa: E402
from cluster_state import (  # noqa: E402
    CACHE, KNOBS, ORDER, SIM_MAIN, STATE, die, http_get, log, netns_name, p, read_json, write_file,
)


USAGE = __doc__.split("\n\nThis file is")[0].strip()


def requested_settings(current=None):
    """Knob values: explicitly set variables win, then what the running cluster uses, then defaults."""
    s = {}
    for k, default in KNOBS.items():
        if k in os.environ:
            s[k] = os.environ[k]
        elif current and k in current:
            s[k] = current[k]
        else:
            s[k] = default
    return s


def healthy(info):
    if not info:
        return False, "not started"
    for name in info.get("components", []):
        if not proc_alive(name):
            return False, f"{name} is not running"
    if not netns_exists():
        return False, f"network namespace {netns_name()} is missing"
    try:
        code, body = http_get(f"{info['apiserver']}/readyz", token=info["token"], cafile=p("pki", "ca.crt"))
        if code != 200:
            return False, f"apiserver /readyz: {code} {body[:200]!r}"
        http_get(f"http://{info['registry']}/v2/")
        http_get(f"{info['helm_mirror']}/")
    except (urllib.error.URLError, OSError) as e:
        return False, f"endpoint not answering: {e}"
    return True, "ok"


def cmd_up():
    if os.geteuid() != 0:
        die("the test cluster needs root (network namespace, veth)")
    for tool in ("ip",):
        if not shutil.which(tool):
            die(f"'{tool}' is missing: run hack/setup.sh (installs iproute2)")
    if not os.access("/usr/bin/docker-registry", os.X_OK):
        die("/usr/bin/docker-registry is missing: run hack/setup.sh (installs Debian's docker-registry)")

    info = read_json(p("cluster.json"))
    if info and info.get("components"):
        want = requested_settings(info.get("settings"))
        ok, why = healthy(info)
        # a knob missing from an older cluster.json ran with its default
        changed = {k: (info["settings"].get(k, KNOBS[k]), v) for k, v in want.items()
                   if info["settings"].get(k, KNOBS[k]) != v}
        if ok and not changed:
            if os.path.exists(SIM_MAIN) and "sim" not in info.get("components", []) \
                    and int(info["settings"].get("CLUSTER_NODES", KNOBS["CLUSTER_NODES"])):
                log("the simulator exists now; restarting the cluster to run it")
            else:
                pushed, skipped, problems = push_charts(info["helm_binary"], info["registry"])
                info["chart_versions"] = sorted(set(info.get("chart_versions", [])) | set(pushed) | set(skipped))
                write_file(p("cluster.json"), json.dumps(info, indent=1))
                write_file(p("env"), env_lines(info))
                for pr in problems:
                    log(f"WARNING: chart {pr}")
                log("already up and healthy")
                sys.stdout.write(env_lines(info))
                return
        elif ok:
            log("settings changed (" + ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed.items())
                + "); recreating the cluster")
        else:
            log(f"existing cluster is not healthy ({why}); recreating it")
        settings = want
    else:
        settings = requested_settings()
    check_node_counts(settings)
    problem = host_problem(settings)
    if problem:
        die(problem, 2)
    cmd_down(quiet=True)
    try:
        start(settings)
    except BaseException:
        if os.environ.get("CLUSTER_KEEP_ON_FAILURE") != "true":
            log(f"start failed: stopping what was started (logs in {p('logs')}; CLUSTER_KEEP_ON_FAILURE=true keeps it)")
            cmd_down(quiet=True)
        raise


def cmd_down(quiet=False):
    info = read_json(p("cluster.json"), {})
    names = [n for n in ORDER if os.path.exists(p("pids", n + ".json"))]
    stop_real_nodes()   # first: their kubelets talk to the API server, their pods sit in cgroups
    for name in reversed(ORDER):
        if name in names:
            kill_group(name)
            if not quiet:
                log(f"stopped {name}")
    kill_stragglers()
    netns_down()
    if info:
        info["components"] = []
        write_file(p("cluster.json"), json.dumps(info, indent=1))
        try:
            os.unlink(p("env"))
        except OSError:
            pass
    if os.path.isdir(p("etcd")):
        shutil.rmtree(p("etcd"), ignore_errors=True)
    if not quiet:
        log(f"down (state {STATE}; logs kept in {p('logs')}; cache {CACHE} kept)")


def cmd_status():
    info = read_json(p("cluster.json"))
    if not info or not info.get("components"):
        print(f"cluster: down (state {STATE})")
        extra = [n for n in ORDER if proc_alive(n)] + [f"real-{n}" for n in real_nodes_alive()]
        if extra or netns_exists() or veth_exists():
            print(f"  leftovers: processes {extra}, netns {netns_exists()}, veth {veth_exists()}: run `cluster.py down`")
            return 1
        return 3
    ok, why = healthy(info)
    print(f"cluster: {'up' if ok else 'DEGRADED: ' + why} (state {STATE}, Kubernetes {info['k8s_version']})")
    for name in info["components"]:
        pi = pidinfo(name) or {}
        print(f"  {name:24} {'running' if proc_alive(name) else 'NOT RUNNING':12} pid {pi.get('pid', '-')}"
              f"  log {p('logs', name + '.log')}")
    print(f"  apiserver  {info['apiserver']}")
    print(f"  registry   {info['registry']}  charts {' '.join(info.get('chart_versions', [])) or '-'}")
    print(f"  helm mirror {info['helm_mirror']}")
    print(f"  netns      {info['netns']} ({'present' if netns_exists() else 'MISSING'}), veth {info['veth']}, "
          f"nodes {info['node_cidr']}")
    try:
        sim, real = (int(info["settings"].get(k) or 0) for k in ("CLUSTER_NODES", "CLUSTER_REAL_NODES"))
        print(f"  nodes      {ready_nodes(info)} Ready of {sim + real} wanted ({sim} simulated, {real} real)")
    except (urllib.error.URLError, OSError, ValueError) as e:
        print(f"  nodes      ? ({e})")
    print(f"  export KUBECONFIG={p('kubeconfig')}")
    return 0 if ok else 1


def cmd_env():
    try:
        with open(p("env")) as f:
            sys.stdout.write(f.read())
    except OSError:
        die(f"no {p('env')}: the cluster is not up (run `cluster.py up`)", 3)


def main(argv):
    if not argv:
        print(USAGE, file=sys.stderr)
        return 2
    cmd = argv[0]
    if cmd == "up":
        cmd_up()
    elif cmd == "down":
        cmd_down()
    elif cmd == "status":
        return cmd_status()
    elif cmd == "env":
        cmd_env()
    elif cmd == "restart-apiserver":
        cmd_restart_apiserver(float(argv[1]) if len(argv) > 1 else 0.0)
    elif cmd in ("stop-kubelet", "start-kubelet") and len(argv) == 2:
        cmd_kubelet_signal(argv[1], stop=cmd == "stop-kubelet")
    elif cmd in ("registry-off", "registry-on") and len(argv) == 2:
        cmd_registry(argv[1], reachable=cmd == "registry-on")
    elif cmd == "_supervise":
        cmd_supervise(argv[1], argv[argv.index("--") + 1:])
    else:
        print(USAGE, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
