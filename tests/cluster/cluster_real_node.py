"""Real nodes (CLUSTER_REAL_NODES): a real containerd (or CRI-O) + kubelet pair per node, started and torn down.

Owns: whether the host can run them, their tokens and binaries (build.sh real-node), the order of a
start (images from cluster_images.py, each node's files from cluster_real_node_config.py, one process
`real-<name>` per node in the cluster's network namespace, then kube-proxy) and of a teardown, and
<state>/real-nodes.json. Must not: touch the simulated nodes, the control plane, or another state dir.
"""
import json
import os
import secrets
import subprocess
import time

from cluster_crio import crio_problem
from cluster_host_state import host_state
from cluster_images import BUSYBOX_IMAGE, PAUSE_IMAGE, push_busybox, push_driver, push_pause
from cluster_kube_proxy import start_kube_proxy, stop_kube_proxy
from cluster_netns import in_netns, ns_ip
from cluster_node_hw import SpecError, node_spec, topology
from cluster_processes import (kill_group, kill_until_gone, pidinfo, pids_in_mntns, proc_alive, spawn, wait_for,
                               wait_new_mntns)
from cluster_real_node_config import cgroup_dirs, node_config
from cluster_state import (
    BUILD_SH, CACHE, SERVICE_CIDR, VETH_NS, die, http_get, log, netns_name, p, read_json, run, write_file,
)

# How long a node may take to turn Ready: generous, for a start in an I/O stall (as SOCKET_WAIT in
# cluster_real_node_config.py).
READY_WAIT = 240


def node_names(settings):
    n = int(settings.get("CLUSTER_REAL_NODES") or 0)
    return [f"real{i:02d}" for i in range(1, n + 1)]


def host_problem(settings, mounts="/proc/self/mounts"):
    """Why this host cannot run the real nodes the settings ask for, or None: they need cgroup v1
    hierarchies (the kubelet's cgroupfs driver with failCgroupV1 false), and a CRI-O
    node needs Debian's conmon (crio_problem). `cluster.py up` asks before it stops or starts anything."""
    if not node_names(settings):
        return None
    with open(mounts) as f:
        if any(line.split()[2:3] == ["cgroup"] for line in f):
            try:   # a CRI-O node without conmon: said before anything stops or starts
                return crio_problem({name: node_spec(settings, name) for name in node_names(settings)})
            except SpecError:
                return None   # start_real_nodes names the bad spec
    return (f"CLUSTER_REAL_NODES={settings['CLUSTER_REAL_NODES']}: real nodes need the host's cgroup v1 "
            "hierarchies (their kubelets use the cgroupfs driver on cgroup v1) and this host mounts none; "
            "use simulated nodes instead: CLUSTER_REAL_NODES=0 CLUSTER_NODES=1")


def token_lines(names, tokens):
    """tokens.csv lines: system:node:<name> in system:nodes (Node authorizer, NodeRestriction)."""
    for name in names:
        tokens[name] = secrets.token_hex(24)
    return "".join(f'{tokens[n]},system:node:{n},node-{n}-uid,"system:nodes"\n' for n in names)


def binaries(k8s_version, crio=False):
    """The directories of build.sh real-node's binaries; with crio, also build.sh cri-o's (`crio`)."""
    env = dict(os.environ, CLUSTER_K8S_VERSION=k8s_version, CLUSTER_CACHE_DIR=CACHE)
    r = subprocess.run([BUILD_SH, "real-node"], stdout=subprocess.PIPE, env=env, text=True)
    if r.returncode != 0:
        die(f"build.sh real-node failed (exit {r.returncode})")
    keys = ["kubelet", "containerd", "runc", "cni", "crane", "pause", "kube-proxy", "driver", "upstream"]
    dirs = dict(zip(keys, r.stdout.split()))
    if crio:
        r = subprocess.run([BUILD_SH, "cri-o"], stdout=subprocess.PIPE, env=env, text=True)
        if r.returncode != 0:
            die(f"build.sh cri-o failed (exit {r.returncode})")
        dirs["crio"] = r.stdout.strip()
    return dirs


def start_real_nodes(info, settings, tokens):
    """Starts every node of CLUSTER_REAL_NODES; returns the component names (real-<name>)."""
    names = node_names(settings)
    if not names:
        return []
    try:
        specs = {name: node_spec(settings, name) for name in names}
        for spec in specs.values():
            topology(spec)
    except SpecError as e:
        die(f"real nodes: {e}", 2)
    problem = crio_problem(specs)
    if problem:
        die(problem, 2)
    dirs = binaries(info["k8s_version"], crio=any(s["runtime"] == "cri-o" for s in specs.values()))
    t0 = time.monotonic()
    ref = push_pause(dirs, info["registry"])
    log(f"pause image pushed as {ref} (served as {PAUSE_IMAGE} through the mirror)")
    ref = push_busybox(dirs, info["registry"])
    log(f"busybox image pushed as {ref} (served as {BUSYBOX_IMAGE} through the mirror)")
    log(f"driver images pushed: {' '.join(push_driver(dirs, info['registry']))}")
    state = read_json(p("real-nodes.json")) or {"nodes": {}}
    write_file(p("real-nodes.json"), json.dumps(state, indent=1))
    for problem in host_state(join=True):
        log(f"WARNING: {problem}")
    # the namespace has no default route: without one for the Service range a dial of 10.96.0.1
    # fails with "network is unreachable" before kube-proxy's DNAT (OUTPUT) is consulted
    run(["ip", "-n", netns_name(), "route", "replace", SERVICE_CIDR, "via", info["host_ip"]])
    comps = []
    for i, name in enumerate(names):
        node = node_config(name, i, dirs, info, tokens[name], specs[name], shared_netns=len(names) > 1)
        run(["ip", "-n", netns_name(), "addr", "replace", f"{node['ip']}/32", "dev", VETH_NS])
        comp = f"real-{name}"
        # `nsenter --net` into the cluster's network namespace, then its own mount + UTS namespace (run.sh)
        spawn(comp, in_netns(["unshare", "-m", "-u", "--propagation", "private", "bash",
                              os.path.join(node["dir"], "run.sh")]))
        node["mntns"] = wait_new_mntns(pidinfo(comp)["pid"])
        state["nodes"][name] = node
        write_file(p("real-nodes.json"), json.dumps(state, indent=1))
        comps.append(comp)
    for name in names:
        wait_for(f"real node {name} Ready", lambda: _node_ready(info, name), READY_WAIT, interval=0.5, proc=f"real-{name}",
                 logs=node_logs(name, specs[name]["runtime"]))
    comps.append(start_kube_proxy(dirs, info, names[0], ns_ip(info)))
    log(f"{len(names)} real node(s) Ready in {time.monotonic() - t0:.1f}s: "
        + ", ".join(f"{n} ({state['nodes'][n]['cpus']} CPUs, {state['nodes'][n]['cells']} cells, "
                    f"{state['nodes'][n]['runtime']})" for n in names))
    return comps


def node_logs(name, runtime="containerd"):
    """The log files of node `name`'s container runtime (containerd or crio) and kubelet (run.sh's own
    is logs/real-<name>.log)."""
    return [p("logs", f"real-{name}-{prog}.log") for prog in ("crio" if runtime == "cri-o" else "containerd", "kubelet")]


def _node_ready(info, name):
    _, body = http_get(f"{info['apiserver']}/api/v1/nodes/{name}", token=info["token"], cafile=p("pki", "ca.crt"))
    return any(c["type"] == "Ready" and c["status"] == "True" for c in json.loads(body)["status"]["conditions"])


def _cgroup_pids(top):
    pids = []
    for root, _dirs, files in os.walk(top):
        if "cgroup.procs" in files:
            try:
                with open(os.path.join(root, "cgroup.procs")) as f:
                    pids += [int(x) for x in f.read().split()]
            except OSError:
                pass
    return pids


def _rmdir_tree(top):
    for root, dirs, _files in os.walk(top, topdown=False):
        for d in dirs:
            try:
                os.rmdir(os.path.join(root, d))
            except OSError:
                pass
    try:
        os.rmdir(top)
    except OSError:
        pass


def stop_real_nodes():
    """Stops every real node of this state dir and removes what they left behind (safe twice): kube-proxy
    and its rules, the process group, every process left in the node's mount namespace or cgroups (shims,
    containers), the CNI bridge, the cgroup dirs, and (cluster_host_state.py) the host sysctls the kubelet
    changes and the mount points made for FIXED."""
    state = read_json(p("real-nodes.json"))
    if not state:
        return
    problems = stop_kube_proxy()
    for name, node in state.get("nodes", {}).items():
        kill_group(f"real-{name}", grace=5.0)
        _, cgs = cgroup_dirs(name)
        def node_pids(node=node, cgs=cgs):
            pids = set(pids_in_mntns(node["mntns"]) if node.get("mntns") else [])
            for cg in cgs:
                pids |= set(_cgroup_pids(cg))
            return pids - {os.getpid()}
        left = kill_until_gone(node_pids, rounds=50, pause=0.1)
        if left:
            problems.append(f"{name}: processes left {sorted(left)}")
        run(["ip", "-n", netns_name(), "link", "del", node["bridge"]], check=False)
        for cg in cgs:
            for _ in range(20):
                _rmdir_tree(cg)
                if not os.path.exists(cg):
                    break
                time.sleep(0.1)
            else:
                problems.append(f"{name}: cgroup {cg} still present")
    os.unlink(p("real-nodes.json"))
    problems += host_state(join=False)
    for pr in problems:
        log(f"WARNING: real node teardown: {pr}")


def real_nodes_alive():
    state = read_json(p("real-nodes.json")) or {}
    return [n for n in state.get("nodes", {}) if proc_alive(f"real-{n}")]
