"""Bringing the test cluster's components up, in order, with every component's command line.

Owns: the binaries from build.sh, a fresh state dir, the ports, the start sequence (registry and helm
mirror, etcd, PKI and kubeconfigs, the control plane, the simulator, then the real nodes),
<state>/cluster.json and <state>/env, the Ready-node count and `restart-apiserver`.
Must not: decide whether to start (cluster.py does), nor stop the cluster (cluster.py `down`).
"""
import json
import shlex
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
import urllib.error

import yaml

from cluster_feature_gates import control_plane_gates
from cluster_netns import claim_node_network
from cluster_pki import gen_pki, kubeconfig
from cluster_processes import kill_group, pidinfo, spawn, wait_for
from cluster_real_node import node_names, start_real_nodes, token_lines
from cluster_registry_charts import helm_tarball, push_charts, registry_config
from cluster_state import (
    BUILD_SH, CACHE, CHART_NAME, CHART_REPO, CLUSTER_PY, MARKER, REPO, SA_ISSUER, SERVICE_CIDR, SIM_MAIN, STATE,
    T0, VETH_NS, die, free_port, http_get, log, netns_name, p, read_json, veth_host, write_file,
)


def binaries(k8s_version):
    """bin dirs from build.sh (a no-op when the cache holds them built with the current recipe)."""
    dirs = {}
    env = dict(os.environ, CLUSTER_K8S_VERSION=k8s_version, CLUSTER_CACHE_DIR=CACHE)
    for what in ("etcd", "helm", "kubernetes"):
        r = subprocess.run([BUILD_SH, what], stdout=subprocess.PIPE, env=env, text=True)
        if r.returncode != 0:
            die(f"build.sh {what} failed (exit {r.returncode})")
        dirs[what] = r.stdout.strip().splitlines()[-1]
    helm_v = os.path.basename(dirs["helm"])
    etcd_v = os.path.basename(dirs["etcd"])
    return dirs, helm_v, etcd_v


def driver_binaries():
    """The project's driver directory (build.sh driver; cached)."""
    r = subprocess.run([BUILD_SH, "driver"], stdout=subprocess.PIPE, env=dict(os.environ, CLUSTER_CACHE_DIR=CACHE),
                       text=True)
    if r.returncode != 0:
        die(f"build.sh driver failed (exit {r.returncode})")
    return r.stdout.strip().splitlines()[-1]


def check_node_counts(settings):
    """Dies (exit 2) unless CLUSTER_NODES and CLUSTER_REAL_NODES are whole numbers >= 0 adding up to
    at least one node (the defaults, 0 and 1, do): called before anything is stopped or started."""
    try:
        sim, real = int(settings["CLUSTER_NODES"]), int(settings["CLUSTER_REAL_NODES"] or 0)
    except ValueError:
        sim = real = -1
    if sim < 0 or real < 0 or sim + real < 1:
        die(f"CLUSTER_NODES={settings['CLUSTER_NODES']!r}, CLUSTER_REAL_NODES={settings['CLUSTER_REAL_NODES']!r}: "
            "both must be whole numbers >= 0 adding up to at least one node (CLUSTER_NODES=0 only with "
            "CLUSTER_REAL_NODES >= 1; the default is one real node and no simulated one, simulated nodes "
            "instead: CLUSTER_NODES=1 CLUSTER_REAL_NODES=0)", 2)


def start(settings):
    """Starts a fresh cluster, component after component, and prints `env_lines` (what `up` prints)."""
    dirs, helm_v, etcd_v = binaries(settings["CLUSTER_K8S_VERSION"])
    _fresh_state_dir()
    info = _cluster_info(settings, dirs, helm_v, etcd_v)
    charts = _start_registry(info, dirs)
    # the network namespace the nodes live in (the simulated kubelets, and the real nodes with their kube-proxy)
    info["node_cidr"], info["host_ip"] = claim_node_network()
    etcd_url = _start_etcd(info, dirs)
    tokens = _write_credentials(info, settings)   # while etcd starts
    # the version's defaults (DRAListTypeAttributes from 1.36), then CLUSTER_FEATURE_GATES
    gates = control_plane_gates(settings)
    gate_args = [f"--feature-gates={gates}"] if gates else []
    wait_for("etcd", lambda: json.loads(http_get(f"{etcd_url}/health")[1]).get("health") == "true", 20, proc="etcd")
    log(f"etcd {etcd_v} ready on {etcd_url}")
    _start_apiserver(info, dirs["kubernetes"], etcd_url, gate_args)
    _start_controllers(info, dirs["kubernetes"], gate_args)
    _start_simulator(info, settings)
    pushed, skipped, problems = charts()
    # real nodes (CLUSTER_REAL_NODES): after the charts' push, so the registry is known to answer
    if node_names(settings):
        info["components"] += start_real_nodes(info, settings, tokens)
        _record(info)
    _finish(info, pushed, skipped, problems)


def _fresh_state_dir():
    """An empty state dir with its marker and sub-directories; the last run's logs/ is dropped. Only a
    dir that we created (it has the marker) is ever wiped."""
    if os.path.isdir(STATE) and os.listdir(STATE) and not os.path.exists(p(MARKER)):
        die(f"{STATE} exists, is not empty and is not a test cluster state dir; refusing to use it")
    if os.path.isdir(STATE):
        keep_logs = p("logs")
        for e in os.listdir(STATE):
            if os.path.join(STATE, e) != keep_logs:
                fp = os.path.join(STATE, e)
                shutil.rmtree(fp) if os.path.isdir(fp) and not os.path.islink(fp) else os.unlink(fp)
        if os.path.isdir(keep_logs):
            prev = p("logs.prev")
            os.rename(keep_logs, prev)
            shutil.rmtree(prev)
    os.makedirs(STATE, exist_ok=True)
    write_file(p(MARKER), "state directory of tests/cluster/cluster.py; `cluster.py down` stops it\n")
    for d in ("logs", "pids", "etcd", "kcm", "scheduler"):
        os.makedirs(p(d), exist_ok=True)


def _cluster_info(settings, dirs, helm_v, etcd_v):
    """What <state>/cluster.json records: settings, distinct free ports, addresses, versions, the admin
    token and the components started so far."""
    ports = {k: free_port() for k in ("etcd", "etcd-peer", "apiserver", "kcm", "scheduler", "registry", "mirror")}
    while len(set(ports.values())) != len(ports):
        ports = {k: free_port() for k in ports}
    return {
        "settings": settings, "ports": ports, "registry": f"127.0.0.1:{ports['registry']}",
        "apiserver": f"https://127.0.0.1:{ports['apiserver']}",
        "helm_mirror": f"http://127.0.0.1:{ports['mirror']}",
        "helm_binary": os.path.join(dirs["helm"], "helm"), "helm_version": helm_v, "etcd_version": etcd_v,
        "k8s_version": settings["CLUSTER_K8S_VERSION"],
        "token": secrets.token_hex(24), "netns": netns_name(), "veth": veth_host(), "components": [],
    }


def _record(info):
    write_file(p("cluster.json"), json.dumps(info, indent=1))


def _start_registry(info, dirs):
    """The registry, then in a thread the helm mirror and the charts' push: independent of the control
    plane. Returns a function that waits for the push and gives (pushed, skipped, problems)."""
    # with real nodes the registry also answers on the host end of the veth: their containerd pulls
    # from the cluster's network namespace (cluster_real_node.py)
    registry, ports = info["registry"], info["ports"]
    spawn("registry", ["/usr/bin/docker-registry", "serve",
                       registry_config(ports["registry"], "0.0.0.0" if node_names(info["settings"]) else "127.0.0.1")])
    info["components"] += ["registry", "helm-mirror"]
    result = {}

    def push():
        try:
            mirror_dir = helm_tarball(dirs["helm"], info["helm_version"])
            spawn("helm-mirror", [sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                                  "--directory", mirror_dir, str(ports["mirror"])])
            wait_for("registry", lambda: http_get(f"http://{registry}/v2/")[0] == 200, 20, proc="registry")
            result["r"] = push_charts(info["helm_binary"], registry)
        except SystemExit:
            result["r"] = ([], [], ["registry did not come up"])
        except Exception as e:  # noqa: BLE001
            result["r"] = ([], [], [f"push failed: {e}"])
    pusher = threading.Thread(target=push)
    pusher.start()

    def joined():
        pusher.join()
        return result.get("r", ([], [], ["chart push did not finish"]))
    return joined


def _start_etcd(info, dirs):
    """etcd on its two ports (no fsync: a test cluster's data is thrown away); returns its client URL."""
    etcd_url = f"http://127.0.0.1:{info['ports']['etcd']}"
    peer = f"http://127.0.0.1:{info['ports']['etcd-peer']}"
    spawn("etcd", [os.path.join(dirs["etcd"], "etcd"), "--name", "default", "--data-dir", p("etcd"),
                   "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
                   "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                   "--initial-cluster", f"default={peer}", "--initial-cluster-state", "new",
                   "--unsafe-no-fsync", "--log-level", "warn"])
    info["components"].append("etcd")
    return etcd_url


def _write_credentials(info, settings):
    """PKI, tokens.csv (admin, the controllers, the real nodes), the kubeconfigs and the scheduler's
    configuration; returns the tokens by user."""
    gen_pki(extra_sans=[info["host_ip"]])
    tokens = {"admin": info["token"], "kcm": secrets.token_hex(24), "scheduler": secrets.token_hex(24)}
    write_file(p("pki", "tokens.csv"),
               f'{tokens["admin"]},admin,admin-uid,"system:masters"\n'
               f'{tokens["kcm"]},system:kube-controller-manager,kcm-uid\n'
               f'{tokens["scheduler"]},system:kube-scheduler,scheduler-uid\n'
               + token_lines(node_names(settings), tokens), 0o600)
    write_file(p("kubeconfig"), kubeconfig(info["apiserver"], tokens["admin"], "admin"), 0o600)
    write_file(p("kcm.kubeconfig"), kubeconfig(info["apiserver"], tokens["kcm"], "system:kube-controller-manager"), 0o600)
    write_file(p("scheduler.kubeconfig"), kubeconfig(info["apiserver"], tokens["scheduler"], "system:kube-scheduler"), 0o600)
    write_file(p("scheduler.yaml"), yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": p("scheduler.kubeconfig"), "qps": 200, "burst": 400},
        "leaderElection": {"leaderElect": False},
    }, sort_keys=False))
    return tokens


def _api_ok(info, path="/readyz"):
    return http_get(f"{info['apiserver']}{path}", token=info["token"], cafile=p("pki", "ca.crt"))[0] == 200


def _api_has(info, path):
    try:
        return _api_ok(info, path)
    except urllib.error.HTTPError:
        return False


def _start_apiserver(info, kbin, etcd_url, gate_args):
    """kube-apiserver, recorded in cluster.json at once (so `down` works even if we fail below), until
    /healthz answers."""
    pki = p("pki")
    spawn("kube-apiserver", [
        os.path.join(kbin, "kube-apiserver"),
        f"--etcd-servers={etcd_url}",
        # with real nodes it also answers at its advertised address (the host end of the veth): where
        # the real nodes' kubelets dial it from the network namespace, and the `kubernetes` Service's
        # endpoint, where their kube-proxy sends in-cluster clients (cluster_kube_proxy.py)
        f"--bind-address={'0.0.0.0' if node_names(info['settings']) else '127.0.0.1'}",
        f"--secure-port={info['ports']['apiserver']}",
        f"--advertise-address={info['host_ip']}",
        f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key",
        f"--client-ca-file={pki}/ca.crt", f"--token-auth-file={pki}/tokens.csv",
        "--authorization-mode=Node,RBAC", "--anonymous-auth=true",
        f"--service-account-issuer={SA_ISSUER}", f"--service-account-key-file={pki}/sa.pub",
        f"--service-account-signing-key-file={pki}/sa.key",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={pki}/apiserver-kubelet-client.crt",
        f"--kubelet-client-key={pki}/apiserver-kubelet-client.key",
        "--runtime-config=resource.k8s.io/v1=true",
        "--enable-admission-plugins=NodeRestriction",   # on top of the defaults (PodSecurity, ...)
        "--max-requests-inflight=800", "--max-mutating-requests-inflight=400",
        "--profiling=false", "--v=1",
    ] + gate_args + audit_args())
    info["components"].append("kube-apiserver")
    _record(info)
    wait_for("kube-apiserver /healthz", lambda: _api_ok(info, "/healthz"), 60, proc="kube-apiserver")
    log("kube-apiserver healthy; starting kube-controller-manager and kube-scheduler")


def _start_controllers(info, kbin, gate_args):
    """kube-controller-manager and kube-scheduler, until the API server is ready and the controllers
    made the default namespace and its service account."""
    pki = p("pki")
    spawn("kube-controller-manager", [
        os.path.join(kbin, "kube-controller-manager"),
        f"--kubeconfig={p('kcm.kubeconfig')}",
        "--bind-address=127.0.0.1", f"--secure-port={info['ports']['kcm']}", f"--cert-dir={p('kcm')}",
        f"--service-account-private-key-file={pki}/sa.key", f"--root-ca-file={pki}/ca.crt",
        f"--cluster-signing-cert-file={pki}/ca.crt", f"--cluster-signing-key-file={pki}/ca.key",
        "--controllers=*", "--use-service-account-credentials=true", "--leader-elect=false",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--kube-api-qps=200", "--kube-api-burst=400", "--v=1",
    ] + gate_args)
    spawn("kube-scheduler", [
        os.path.join(kbin, "kube-scheduler"), f"--config={p('scheduler.yaml')}",
        "--bind-address=127.0.0.1", f"--secure-port={info['ports']['scheduler']}", f"--cert-dir={p('scheduler')}",
        "--v=1",
    ] + gate_args)
    info["components"] += ["kube-controller-manager", "kube-scheduler"]
    _record(info)
    wait_for("kube-apiserver /readyz", lambda: _api_ok(info), 60, proc="kube-apiserver")
    log("kube-apiserver ready")
    wait_for("the default namespace", lambda: _api_has(info, "/api/v1/namespaces/default"), 30, proc="kube-apiserver")
    wait_for("the default service account",
             lambda: _api_has(info, "/api/v1/namespaces/default/serviceaccounts/default"),
             60, proc="kube-controller-manager")
    log(f"control plane ready: {info['apiserver']} (Kubernetes {info['k8s_version']}, etcd {info['etcd_version']})")


def _start_simulator(info, settings):
    """The supervised simulator of CLUSTER_NODES nodes (none for a cluster of real nodes only), until
    they are Ready."""
    nodes = int(settings["CLUSTER_NODES"])
    if not nodes:
        log("no simulated nodes (CLUSTER_NODES=0)")
        return
    if not os.path.exists(SIM_MAIN):
        log(f"WARNING: {SIM_MAIN} does not exist yet: no simulated nodes")
        return
    env = dict(os.environ)
    env.update(settings)
    if settings.get("CLUSTER_SIMULATE_DRIVER", "true").lower() in ("true", "1", "yes"):
        env["CLUSTER_DRIVER_DIR"] = driver_binaries()   # its `dracpu publish` plays the nodes' drivers
    env.update({"KUBECONFIG": p("kubeconfig"), "CLUSTER_STATE_DIR": STATE, "CLUSTER_NETNS": netns_name(),
                "CLUSTER_NETNS_IFACE": VETH_NS, "CLUSTER_NODE_CIDR": info["node_cidr"],
                "CLUSTER_HOST_IP": info["host_ip"],
                "CLUSTER_CA_CERT": p("pki", "ca.crt"), "CLUSTER_CA_KEY": p("pki", "ca.key"),
                "PYTHONPATH": REPO + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
                "PYTHONUNBUFFERED": "1"})
    spawn("sim", [sys.executable, CLUSTER_PY, "_supervise", "sim", "--",
                  sys.executable, SIM_MAIN], env=env, cwd=REPO)
    info["components"].append("sim")
    _record(info)
    timeout = float(os.environ.get("CLUSTER_UP_TIMEOUT") or (120 + 0.3 * nodes))
    wait_for(f"{nodes} Ready node(s)", lambda: ready_nodes(info) >= nodes, timeout, interval=0.5, proc="sim")
    log(f"{nodes} simulated node(s) Ready")


def _finish(info, pushed, skipped, problems):
    """The charts' outcome, the final cluster.json, <state>/env, and what `up` prints."""
    wait_for("helm mirror", lambda: http_get(f"{info['helm_mirror']}/")[0] == 200, 20, proc="helm-mirror")
    info["chart_versions"] = sorted(pushed + skipped)
    for pr in problems:
        log(f"WARNING: chart {pr}")
    log(f"charts in {info['registry']}: pushed {pushed or 'none'}, already there {skipped or 'none'}")
    _record(info)
    write_file(p("env"), env_lines(info))
    log(f"up in {time.monotonic() - T0:.1f}s; chart oci://{info['registry']}/{CHART_REPO}/{CHART_NAME}, "
        f"registry {info['registry']}; `source {p('env')}`")
    sys.stdout.write(env_lines(info))


def env_lines(info):
    env = {
        "KUBECONFIG": p("kubeconfig"),
        "DRA_CPU_CHART": f"oci://{info['registry']}/{CHART_REPO}/{CHART_NAME}",
        "CLUSTER_REGISTRY": info["registry"],
        "CLUSTER_HELM_BINARY": info["helm_binary"],
        "CLUSTER_HELM_MIRROR": info["helm_mirror"],
        "CLUSTER_HELM_VERSION": info["helm_version"],
        "CLUSTER_APISERVER": info["apiserver"],
        "CLUSTER_APISERVER_METRICS": f"{info['apiserver']}/metrics",
        "CLUSTER_ADMIN_TOKEN": info["token"],
        "CLUSTER_CA_FILE": p("pki", "ca.crt"),
        "CLUSTER_STATE_DIR": STATE,
        "CLUSTER_NETNS": info["netns"],
        "CLUSTER_NODE_CIDR": info["node_cidr"],
        "CLUSTER_CHART_VERSIONS": " ".join(info.get("chart_versions", [])),
    }
    env.update(info["settings"])
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())


AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
"""


def audit_args():
    """CLUSTER_AUDIT_LOG=true: every write (create/update/patch/delete) goes to <state>/logs/audit.log
    at Metadata level (user, verb, resource, user agent), for tests that count writes."""
    if os.environ.get("CLUSTER_AUDIT_LOG") != "true":
        return []
    write_file(p("audit-policy.yaml"), AUDIT_POLICY)
    return [f"--audit-policy-file={p('audit-policy.yaml')}", f"--audit-log-path={p('logs', 'audit.log')}",
            "--audit-log-format=json", "--audit-log-mode=blocking"]


def cmd_restart_apiserver(down_seconds=0.0):
    """Kill kube-apiserver (the whole process group), wait, start it with the same command line."""
    info = read_json(p("cluster.json"))
    pinfo = pidinfo("kube-apiserver")
    if not info or not pinfo:
        die("no kube-apiserver recorded in this state dir: is the cluster up?", 3)
    cmd = pinfo["cmd"]
    t0 = time.monotonic()
    kill_group("kube-apiserver", grace=0.5)
    log(f"kube-apiserver killed; down for {down_seconds:g}s")
    time.sleep(down_seconds)
    spawn("kube-apiserver", cmd)

    def ready():
        try:
            return http_get(f"{info['apiserver']}/readyz", token=info["token"], cafile=p("pki", "ca.crt"))[0] == 200
        except (urllib.error.URLError, OSError):
            return False
    wait_for("kube-apiserver /readyz", ready, 90, proc="kube-apiserver")
    log(f"kube-apiserver ready again after {time.monotonic() - t0:.1f}s")


def ready_nodes(info):
    _, body = http_get(f"{info['apiserver']}/api/v1/nodes", token=info["token"], cafile=p("pki", "ca.crt"), timeout=10)
    n = 0
    for node in json.loads(body).get("items", []):
        for c in node.get("status", {}).get("conditions", []):
            if c.get("type") == "Ready" and c.get("status") == "True":
                n += 1
    return n
