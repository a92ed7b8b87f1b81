"""Real nodes: a real containerd + kubelet pair per node, next to the simulated ones (CLUSTER_REAL_NODES).

Owns: per node `real01`, `real02`, ...: its directory <state>/real-nodes/<name>/ (containerd
config v3 with the registry mirror, CNI bridge conf, KubeletConfiguration, kubeconfig, the
bind-mount sources), its cgroup root (and kubepods) in every cgroup v1 hierarchy, and one process
`real-<name>`: `nsenter --net` into the cluster's network namespace (cluster_netns.py, the one the
simulated kubelets listen in), then `unshare -m -u` (own mount + UTS namespace, hostname = node
name) running a shell
that bind-mounts the node's directories over the fixed paths (/var/lib/kubelet, /run/containerd,
/run/netns, ...) and its simulated CPU hardware (cluster_node_hw.py), then starts containerd and
the kubelet; the order of a start (binaries from build.sh real-node, images from
cluster_images.py, the nodes, then kube-proxy from cluster_kube_proxy.py) and of a teardown.
Teardown (`down`): kube-proxy and its rules, the process group, every process left in the node's
mount namespace or cgroups (shims, containers), the CNI bridge, the cgroup dirs, and the host
sysctls the kubelet changes, restored to what they were before the first node started, and the
mount points made for FIXED (machine-wide, shared by state dirs: cluster_host_state.py).
The node network, all inside the cluster's network namespace (so two clusters with real nodes run
side by side and the host's network is never touched): node i's address 10.N.249.i on the
namespace's end of the veth (the API server dials its kubelet there), pods get 10.N.250+i.0/24 on a
per-node bridge; the kubelet, containerd and kube-proxy dial the API server and the registry at the
host end of the veth (10.N.0.1).
Beside simulated nodes (CLUSTER_NODES > 0) real nodes are registered with the NoExecute taint
below: DaemonSets that tolerate every NoSchedule taint (the driver chart's default) stay on the
simulated nodes unless told to tolerate it. A cluster of real nodes only (CLUSTER_NODES=0, as
`make demo` runs) has no such taint: every pod may land there.
Must not: touch the simulated nodes, the control plane, or anything of another state dir.
"""
import ipaddress
import json
import os
import secrets
import shlex
import subprocess
import time

import yaml

from cluster_crio import CRIO_SOCK, crio_conf, crio_problem, registries_conf
from cluster_images import BUSYBOX_IMAGE, PAUSE_IMAGE, push_busybox, push_driver, push_pause
from cluster_host_state import FIXED, host_state
from cluster_kube_proxy import start_kube_proxy, stop_kube_proxy
from cluster_netns import api_from_netns, in_netns, ns_ip
from cluster_node_hw import (SpecError, kubelet_flags, kubelet_settings, lay_out, node_spec, register_taints,
                             runc_cpu_args, topology)
from cluster_pki import kubeconfig
from cluster_processes import (kill_group, kill_until_gone, pidinfo, pids_in_mntns, proc_alive, spawn, wait_for,
                               wait_new_mntns)
from cluster_state import (
    BUILD_SH, CACHE, SERVICE_CIDR, STATE, VETH_NS, die, free_port, http_get, log, netns_name, p, read_json, run,
    short_hash, write_file,
)

TAINT = {"key": "dra-cpu.kubevirtci.io/real-node", "value": "true", "effect": "NoExecute"}
CGROUP_V1 = "/sys/fs/cgroup"
# How long a node's runtime may take to make its socket, and the node to turn Ready: generous, for a
# start in an I/O stall. Seen in a fresh-clone `make test` (2026-12-05): CRI-O wrote its first log
# line 41 s after run.sh started it and had no socket after the 60 s then allowed, while both lanes
# waited on the disk (PSI io "full" 42 % over 5 min; the same start takes seconds on an idle machine).
SOCKET_WAIT = 180
READY_WAIT = 240


def node_names(settings):
    n = int(settings.get("CLUSTER_REAL_NODES") or 0)
    return [f"real{i:02d}" for i in range(1, n + 1)]


def host_problem(settings, mounts="/proc/self/mounts"):
    """Why this host cannot run the real nodes the settings ask for, or None: they need cgroup v1
    hierarchies (the kubelet's cgroupfs driver with failCgroupV1 false, real-nodes.md), and a CRI-O
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


def _cgroup_dirs(name):
    rel = f"dracpu-{short_hash()}-{name}"
    return rel, [os.path.join(CGROUP_V1, h, rel) for h in sorted(os.listdir(CGROUP_V1))
                 if os.path.isdir(os.path.join(CGROUP_V1, h)) and os.path.ismount(os.path.join(CGROUP_V1, h))]


def _make_cgroups(name):
    rel, dirs = _cgroup_dirs(name)
    for d in dirs:
        # <root>/kubepods too: the kubelet writes the whole (fake) CPU set into a kubepods cpuset it
        # creates and refuses to start; one made beforehand with the real set is kept (real-nodes.md)
        for sub in (d, os.path.join(d, "kubepods")):
            os.makedirs(sub, exist_ok=True)
            if os.path.basename(os.path.dirname(d)) == "cpuset":
                for f in ("cpuset.cpus", "cpuset.mems"):     # an empty cpuset cannot take tasks
                    with open(os.path.join(os.path.dirname(sub), f)) as src, open(os.path.join(sub, f), "w") as dst:
                        dst.write(src.read())
    return "/" + rel


def real_cpus():
    """The machine's CPUs, as a cpuset (the runc wrapper maps the nodes' fake ids onto them)."""
    return ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))


def node_ip(info, index):
    """Real node `index`'s address (0-based): 10.N.249.index+1, beside the simulated nodes' 10.N.1.x."""
    return str(ipaddress.ip_network(info["node_cidr"]).network_address + 249 * 256 + index + 1)


def mirror_hosts(registry):
    """containerd's hosts files (certs.d, read at each pull) that send every image name to `registry`."""
    host = f'[host."http://{registry}"]\n  capabilities = ["pull", "resolve"]\n'
    return {"certs.d/registry.k8s.io/hosts.toml": f'server = "https://registry.k8s.io"\n\n{host}',
            "certs.d/_default/hosts.toml": host}


def _bridge(name):
    return f"drn{short_hash()[:6]}{name[-2:]}"


def _feature_gates(gates):
    out = {}
    for item in filter(None, (g.strip() for g in (gates or "").split(","))):
        k, _, v = item.partition("=")
        out[k.strip()] = v.strip().lower() == "true"
    return out


def node_config(name, index, dirs, info, token, spec, shared_netns=False):
    nd = p("real-nodes", name)
    crio = spec["runtime"] == "cri-o"
    for sub in ["containerd", "runc", "cni/net.d", "certs.d/registry.k8s.io", "certs.d/_default", "cni-state"] + \
            (["crio/hooks.d", "crio/log", "crio/tmp", "crio/nri/plugins", "crio/nri/conf.d"] if crio else []) + \
            ["mnt" + f for f in FIXED]:
        os.makedirs(os.path.join(nd, sub), exist_ok=True)
    reg = f'{info["host_ip"]}:{info["ports"]["registry"]}'   # the registry, from the network namespace
    for rel, text in mirror_hosts(reg).items():
        write_file(os.path.join(nd, rel), text)
    # in the node's own /run/containerd (a bind mount of <node>/mnt/run/containerd): containerd, the
    # kubelet and run.sh all run in the node's mount namespace, and a socket path under a long state
    # dir would pass the 104 characters a unix socket may have (seen with pytest's tmp_path)
    sock = CRIO_SOCK if crio else "/run/containerd/containerd.sock"
    # the simulated hardware at the runtime: runc through a wrapper that maps the fake CPU ids a
    # driver pins containers to (NRI) onto the machine's CPUs, logging each mapping (real-nodes.md);
    # under CRI-O it also keeps oomScoreAdj at or above its own (containerd's restrict_oom_score_adj)
    # and drops the hugepageLimits CRI-O sets (no hugetlb cgroup here; containerd sets none); a node
    # on the machine's own CPU hardware (`hardware: machine`) maps no id (runc_cpu_args); where the
    # cluster's real nodes share one network namespace (several of them) the driver's container
    # binds its health port on the node's own address, as on a machine of its own (runc-cpumap's
    # driver.go: upstream's v0.2.0 binds ":8080", and a second node's driver could not)
    bind = f"--driver-bind-host {node_ip(info, index)} " if shared_netns else ""
    write_file(os.path.join(nd, "runc-cpumap"), f"""#!/bin/sh
exec {dirs['driver']}/runc-cpumap --runc {dirs['runc']}/runc {runc_cpu_args(spec, real_cpus(), nd)} --log {nd}/cpumap.log \
  {"--restrict-oom-score-adj true --drop-hugepage-limits true " if crio else ""}{bind}-- "$@"
""", 0o755)
    if crio:
        write_file(os.path.join(nd, "crio.conf"), crio_conf(nd, dirs, STATE))
        os.makedirs(os.path.join(nd, "crio.conf.d"), exist_ok=True)
        write_file(os.path.join(nd, "registries.conf"), registries_conf(reg))
        write_file(os.path.join(nd, "crio/policy.json"),
                   json.dumps({"default": [{"type": "insecureAcceptAnything"}]}) + "\n")
        # containers/storage reads /etc/containers/storage.conf unless told otherwise (CONTAINERS_STORAGE_CONF)
        write_file(os.path.join(nd, "storage.conf"), f"""[storage]
driver = "overlay"
graphroot = "{nd}/crio/storage"
runroot = "/run/crio/storage"
""")
    cri = 'plugins."io.containerd.cri.v1'
    write_file(os.path.join(nd, "containerd.toml"), f"""version = 3
root = "{nd}/containerd/root"
state = "{nd}/containerd/state"
temp = "{nd}/containerd/tmp"

[grpc]
  address = "{sock}"
[ttrpc]
  address = "{sock}.ttrpc"

[{cri}.images"]
  snapshotter = "overlayfs"
  [{cri}.images".pinned_images]
    sandbox = "{PAUSE_IMAGE}"
  [{cri}.images".registry]
    config_path = "{nd}/certs.d"

[{cri}.runtime"]
  restrict_oom_score_adj = true
  [{cri}.runtime".containerd]
    default_runtime_name = "runc"
    [{cri}.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.runtime".containerd.runtimes.runc.options]
        BinaryName = "{nd}/runc-cpumap"
        SystemdCgroup = false
        Root = "{nd}/runc"
  [{cri}.runtime".cni]
    bin_dirs = ["{dirs['cni']}"]
    conf_dir = "{nd}/cni/net.d"
""")
    second = ipaddress.ip_network(info["node_cidr"]).network_address + (250 + index) * 256
    subnet = ipaddress.ip_network(f"{second}/24")
    write_file(os.path.join(nd, "cni/net.d/10-bridge.conflist"), json.dumps({
        "cniVersion": "1.0.0", "name": f"dracpu-{name}",
        "plugins": [{"type": "bridge", "bridge": _bridge(name), "isGateway": True, "ipMasq": False,
                     "ipam": {"type": "host-local", "dataDir": os.path.join(nd, "cni-state"),
                              "ranges": [[{"subnet": str(subnet)}]], "routes": [{"dst": "0.0.0.0/0"}]}},
                    {"type": "loopback"}]}, indent=1))
    port, healthz = free_port(), free_port()
    write_file(os.path.join(nd, "kubelet.yaml"), yaml.safe_dump({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": node_ip(info, index), "port": port, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": healthz,
        "cgroupDriver": "cgroupfs", "cgroupRoot": _make_cgroups(name), "failCgroupV1": False, "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{sock}", "makeIPTablesUtilChains": False,
        **kubelet_settings(spec), "podCIDR": str(subnet),
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": p("pki", "ca.crt")}},
        "authorization": {"mode": "Webhook"},
        "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "registerWithTaints": ([TAINT] if int(info["settings"]["CLUSTER_NODES"]) else []) + register_taints(spec),
        "resolvConf": "/etc/resolv.conf",
        **({"featureGates": _feature_gates(info["settings"].get("CLUSTER_FEATURE_GATES"))}
           if info["settings"].get("CLUSTER_FEATURE_GATES") else {}),
    }, sort_keys=False))
    topo, hw_mounts = lay_out(nd, spec)
    write_file(os.path.join(nd, "kubeconfig"), kubeconfig(api_from_netns(info), token, f"system:node:{name}"), 0o600)
    mounts = "".join(f"mount --bind {nd}/mnt{f} {f}\n" for f in FIXED)
    path = ":".join([dirs["crio"] if crio else dirs["containerd"], dirs["runc"],
                     "/usr/local/sbin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"])
    logs = p("logs")
    rt = "crio" if crio else "containerd"
    if crio:
        rt_cmd = (f"CONTAINERS_STORAGE_CONF={nd}/storage.conf CONTAINERS_REGISTRIES_CONF={nd}/registries.conf "
                  f"crio --config {nd}/crio.conf --config-dir {nd}/crio.conf.d --registries-conf {nd}/registries.conf "
                  f"--registries-conf-dir {nd}/crio.conf.d --log-level info")
        rt_prep = "mkdir -p /run/crio/ns /run/crio/exits /run/crio/storage\n"
    else:
        rt_cmd, rt_prep = f"containerd --config {nd}/containerd.toml", ""
    write_file(os.path.join(nd, "run.sh"), f"""#!/bin/bash
# runs inside `unshare -m -u --propagation private`: this node's mount and UTS namespaces; exits
# (stopping the other) when {rt} (the container runtime) or the kubelet exits, so `cluster.py status`
# sees it. Says each step and why it ends in its own log (logs/real-{name}.log), which `cluster.py up`
# prints with the tails of {rt}'s and the kubelet's logs when the node does not come up
set -eu
say() {{ echo "run.sh $(date +%T.%N | cut -c1-12): $*"; }}
trap 'say "line $LINENO: exit $? from: $BASH_COMMAND"' ERR
export PATH={path}
mount --make-rshared /
hostname {name}
{mounts}# the simulated CPU hardware (cluster_node_hw.py), seen by containerd, the kubelet and its pods
{hw_mounts}{rt_prep}say "mounts done: {len(FIXED)} node directories, the CPU hardware ({len(topo.cpus)} CPUs)"
cpid= kpid=
trap 'say "SIGTERM/SIGINT: stopping {rt} and the kubelet"; kill -TERM $cpid $kpid 2>/dev/null; wait; exit 143' TERM INT
{rt_cmd} >>{logs}/real-{name}-{rt}.log 2>&1 &
cpid=$!
say "{rt} started (pid $cpid), waiting for {sock}"
i=0
while [ ! -S {sock} ]; do
  if ! kill -0 $cpid 2>/dev/null; then
    rc=0; wait $cpid || rc=$?
    say "{rt} exited with status $rc before its socket appeared"; exit 1
  fi
  i=$((i+1)); if [ $i -ge {SOCKET_WAIT * 10} ]; then say "no {rt} socket after {SOCKET_WAIT} s"; kill -TERM $cpid; exit 1; fi
  sleep 0.1
done
{dirs['kubelet']}/kubelet --config={nd}/kubelet.yaml --kubeconfig={nd}/kubeconfig --root-dir=/var/lib/kubelet \\
  --hostname-override={name} --node-ip={node_ip(info, index)} {" ".join(shlex.quote(f) for f in kubelet_flags(spec))} --v=1 >>{logs}/real-{name}-kubelet.log 2>&1 &
kpid=$!
say "{rt} socket up; kubelet started (pid $kpid)"
trap - ERR
rc=0; wait -n -p gone $cpid $kpid || rc=$?
if [ "${{gone:-}}" = "$cpid" ]; then who={rt}; else who=kubelet; fi
say "$who exited with status $rc; stopping the other"
kill -TERM $cpid $kpid 2>/dev/null || true
wait || true
exit $rc
""", 0o755)
    return {"name": name, "dir": nd, "ip": node_ip(info, index), "port": port, "subnet": str(subnet),
            "bridge": _bridge(name), "ctr": os.path.join(dirs["containerd"], "ctr"), "registry": reg,
            "cpus": len(topo.cpus), "cells": len(topo.cells), "runtime": spec["runtime"]}


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
    """Stops every real node of this state dir and removes what they left behind (safe twice)."""
    state = read_json(p("real-nodes.json"))
    if not state:
        return
    problems = stop_kube_proxy()
    for name, node in state.get("nodes", {}).items():
        kill_group(f"real-{name}", grace=5.0)
        _, cgs = _cgroup_dirs(name)
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
