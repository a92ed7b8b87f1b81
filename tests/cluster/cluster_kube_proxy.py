"""The real nodes' kube-proxy: the `kubernetes` Service (10.96.0.1:443) for in-cluster clients.

A driver pod on a real node has no kubeconfig: client-go's in-cluster config dials the Service's
ClusterIP, and nothing answers there without a kube-proxy. The real nodes share the host's network
namespace (their pods with hostNetwork too), so one real kube-proxy (k8s.io/kubernetes/cmd/kube-proxy,
same version as the kubelet, iptables mode on Debian's iptables with the nf_tables backend) serves
all of them: it DNATs the ClusterIP to the API server's advertised endpoint (the host end of the
cluster's veth; the API server listens on every address when real nodes run, cluster_control_plane.py).
Owns: <state>/kube-proxy.yaml, the process `kube-proxy`, and on `down` its rules: `kube-proxy
--cleanup`, then every KUBE-* chain left in iptables/ip6tables (the kubelet's canaries included),
compared with what was there before the first start.
The host's iptables are machine-wide: one test cluster at a time may run it. The process holds
an flock on <cache>/kube-proxy.lock for its lifetime; a second cluster's start fails and says whose.
Must not: touch rules that are not KUBE-* or that were there before it started.
"""
import os
import shlex
import time

import yaml

from cluster_processes import kill_group, proc_alive, spawn, wait_for
from cluster_state import CACHE, STATE, die, free_port, http_get, log, p, run, tail, write_file

LOCK = os.path.join(CACHE, "kube-proxy.lock")
OWNER = os.path.join(CACHE, "kube-proxy.owner")
TABLES = ["nat", "filter", "mangle"]


def _kube_chains():
    """{(binary, table): [KUBE-* chains]} as iptables-save shows them now."""
    out = {}
    for binary in ("iptables", "ip6tables"):
        for table in TABLES:
            r = run([f"{binary}-save", "-t", table], check=False)
            out[(binary, table)] = sorted(line[1:].split()[0] for line in r.stdout.splitlines()
                                          if line.startswith(":KUBE-"))
    return out


def start_kube_proxy(dirs, info, node):
    """Starts kube-proxy for the real nodes (node: the one it names itself after); returns its name."""
    owner = owner_elsewhere()
    if owner:
        die(f"kube-proxy: another test cluster ({owner}) runs the host's kube-proxy; "
            "one cluster with real nodes at a time (cluster.py down there first)")
    health = free_port()
    write_file(p("kube-proxy.yaml"), yaml.safe_dump({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": p("kubeconfig")},
        "hostnameOverride": node, "mode": "iptables",
        "healthzBindAddress": f"127.0.0.1:{health}", "metricsBindAddress": f"127.0.0.1:{free_port()}",
        # no conntrack sysctls written (0 = leave the host's as they are), no localhost NodePorts
        # (they need route_localnet)
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        "iptables": {"localhostNodePorts": False},
    }, sort_keys=False))
    if not os.path.exists(p("kube-proxy-before.yaml")):
        write_file(p("kube-proxy-before.yaml"), yaml.safe_dump(
            {f"{b} {t}": c for (b, t), c in _kube_chains().items()}))
    kp = os.path.join(dirs["kube-proxy"], "kube-proxy")
    spawn("kube-proxy", ["flock", "-n", "-E", "75", LOCK, kp, f"--config={p('kube-proxy.yaml')}", "--v=1"])
    write_file(OWNER, STATE + "\n")
    wait_for("kube-proxy /healthz", lambda: http_get(f"http://127.0.0.1:{health}/healthz")[0] == 200, 60,
             proc="kube-proxy")
    wait_for("kube-proxy's rule for the kubernetes Service", _service_rule, 30, proc="kube-proxy")
    log(f"kube-proxy serving the kubernetes Service (10.96.0.1:443 -> {info['host_ip']})")
    return "kube-proxy"


def owner_elsewhere():
    """The state dir of the cluster whose kube-proxy holds the lock ("unknown" when it wrote none),
    or None when the lock is free; the integration suite asks it before its first test too."""
    if not proc_alive_elsewhere():
        return None
    try:
        with open(OWNER) as f:
            return f.read().strip() or "unknown"
    except OSError:
        return "unknown"


def proc_alive_elsewhere():
    """True when the lock is held (by a kube-proxy of another state dir)."""
    r = run(["flock", "-n", "-E", "75", LOCK, "true"], check=False)
    return r.returncode == 75


def _service_rule():
    r = run(["iptables-save", "-t", "nat"], check=False)
    return "default/kubernetes:https" in r.stdout


def stop_kube_proxy(dirs_kube_proxy=None):
    """Stops it and removes its rules and any KUBE-* chain that was not there before (safe twice)."""
    if not os.path.exists(p("kube-proxy.yaml")):
        return []
    problems = []
    kill_group("kube-proxy", grace=5.0)
    for _ in range(50):
        if not proc_alive("kube-proxy"):
            break
        time.sleep(0.1)
    if dirs_kube_proxy:
        r = run([os.path.join(dirs_kube_proxy, "kube-proxy"), "--cleanup", f"--config={p('kube-proxy.yaml')}"],
                check=False)
        if r.returncode != 0:
            problems.append(f"kube-proxy --cleanup: {r.stderr.strip()[-300:]}")
    before = yaml.safe_load(open(p("kube-proxy-before.yaml"))) if os.path.exists(p("kube-proxy-before.yaml")) else {}
    for (binary, table), chains in _kube_chains().items():
        extra = [c for c in chains if c not in (before or {}).get(f"{binary} {table}", [])]
        if not extra:
            continue
        # first the jumps into them from every chain, then the chains themselves
        saved = run([f"{binary}-save", "-t", table], check=False).stdout.splitlines()
        for line in saved:
            args = shlex.split(line) if line.startswith("-A ") else []
            if args and args[1] not in extra and "-j" in args and args[args.index("-j") + 1] in extra:
                run([binary, "-t", table, "-D"] + args[1:], check=False)
        for c in extra:
            run([binary, "-t", table, "-F", c], check=False)
        for c in extra:
            r = run([binary, "-t", table, "-X", c], check=False)
            if r.returncode != 0:
                problems.append(f"{binary} -t {table} -X {c}: {r.stderr.strip()}")
    for f in ("kube-proxy.yaml", "kube-proxy-before.yaml"):
        try:
            os.unlink(p(f))
        except OSError:
            pass
    try:
        if open(OWNER).read().strip() == STATE:
            os.unlink(OWNER)
    except OSError:
        pass
    if problems:
        log(f"kube-proxy teardown: {'; '.join(problems)}; last log lines:\n{tail(p('logs', 'kube-proxy.log'))}")
    return problems
