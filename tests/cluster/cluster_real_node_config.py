"""What a real node runs from: the files in its directory <state>/real-nodes/<name>/ and its cgroups.

Owns: the node's address, pod subnet and bridge, its cgroup root (and kubepods) in every cgroup v1
hierarchy, and the files `node_config` writes: the registry mirror's hosts files, the runc wrapper,
containerd's or CRI-O's configuration, the CNI conf, the KubeletConfiguration, the kubeconfig and run.sh.
Must not: start or stop anything (cluster_real_node.py does).
"""
import ipaddress
import json
import os
import shlex

import yaml

from cluster_crio import CRIO_SOCK, crio_conf, registries_conf
from cluster_host_state import FIXED
from cluster_images import PAUSE_IMAGE
from cluster_netns import api_from_netns
from cluster_node_hw import kubelet_flags, kubelet_settings, lay_out, register_taints, runc_cpu_args
from cluster_pki import kubeconfig
from cluster_state import STATE, free_port, p, short_hash, write_file

# Beside simulated nodes (CLUSTER_NODES > 0) real nodes register with this taint: DaemonSets that
# tolerate every NoSchedule taint (the driver chart's default) stay on the simulated nodes unless told
# to tolerate it. A cluster of real nodes only (`make demo`) has no such taint: every pod may land there.
TAINT = {"key": "dra-cpu.kubevirtci.io/real-node", "value": "true", "effect": "NoExecute"}
CGROUP_V1 = "/sys/fs/cgroup"
# How long a node's runtime may take to make its socket: generous, for a start in an I/O stall. Seen in
# a fresh-clone `make test` (2026-12-05): CRI-O wrote its first log line 41 s after run.sh started it
# and had no socket after the 60 s then allowed, while both lanes waited on the disk (PSI io "full"
# 42 % over 5 min; the same start takes seconds on an idle machine).
SOCKET_WAIT = 180


def cgroup_dirs(name):
    """The node's cgroup root, relative and in every mounted cgroup v1 hierarchy."""
    rel = f"dracpu-{short_hash()}-{name}"
    return rel, [os.path.join(CGROUP_V1, h, rel) for h in sorted(os.listdir(CGROUP_V1))
                 if os.path.isdir(os.path.join(CGROUP_V1, h)) and os.path.ismount(os.path.join(CGROUP_V1, h))]


def _make_cgroups(name):
    rel, dirs = cgroup_dirs(name)
    for d in dirs:
        # <root>/kubepods too: the kubelet writes the whole (fake) CPU set into a kubepods cpuset it
        # creates and refuses to start; one made beforehand with the real set is kept
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
    """Real node `index`'s address (0-based): 10.N.249.index+1, beside the simulated nodes' 10.N.1.x, on
    the namespace's end of the veth (the API server dials its kubelet there). The kubelet, containerd and
    kube-proxy dial the API server and the registry at the host end of the veth (10.N.0.1)."""
    return str(ipaddress.ip_network(info["node_cidr"]).network_address + 249 * 256 + index + 1)


def pod_subnet(info, index):
    """Real node `index`'s pods: 10.N.250+index.0/24 on the node's own bridge."""
    second = ipaddress.ip_network(info["node_cidr"]).network_address + (250 + index) * 256
    return ipaddress.ip_network(f"{second}/24")


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
    """Writes node `name`'s directory; returns its record for <state>/real-nodes.json."""
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
    _write_runc_wrapper(nd, dirs, spec, crio, node_ip(info, index) if shared_netns else None)
    if crio:
        _write_crio_files(nd, dirs, reg)
    _write_containerd_toml(nd, dirs, sock)
    subnet = pod_subnet(info, index)
    _write_cni_conf(nd, name, subnet)
    port = _write_kubelet_yaml(nd, name, info, index, spec, sock, subnet)
    topo, hw_mounts = lay_out(nd, spec)
    write_file(os.path.join(nd, "kubeconfig"), kubeconfig(api_from_netns(info), token, f"system:node:{name}"), 0o600)
    _write_run_sh(nd, name, dirs, node_ip(info, index), spec, sock, hw_mounts, len(topo.cpus))
    return {"name": name, "dir": nd, "ip": node_ip(info, index), "port": port, "subnet": str(subnet),
            "bridge": _bridge(name), "ctr": os.path.join(dirs["containerd"], "ctr"), "registry": reg,
            "cpus": len(topo.cpus), "cells": len(topo.cells), "runtime": spec["runtime"]}


def _write_runc_wrapper(nd, dirs, spec, crio, bind_ip):
    """The simulated hardware at the runtime: runc through a wrapper that maps the fake CPU ids a driver
    pins containers to (NRI) onto the machine's CPUs, logging each mapping."""
    # under CRI-O it also keeps oomScoreAdj at or above its own (containerd's restrict_oom_score_adj)
    # and drops the hugepageLimits CRI-O sets (no hugetlb cgroup here; containerd sets none); a node
    # on the machine's own CPU hardware (`hardware: machine`) maps no id (runc_cpu_args); where the
    # cluster's real nodes share one network namespace (several of them) the driver's container
    # binds its health port on the node's own address, as on a machine of its own (runc-cpumap's
    # driver.go: upstream's v0.2.0 binds ":8080", and a second node's driver could not)
    bind = f"--driver-bind-host {bind_ip} " if bind_ip else ""
    write_file(os.path.join(nd, "runc-cpumap"), f"""#!/bin/sh
exec {dirs['driver']}/runc-cpumap --runc {dirs['runc']}/runc {runc_cpu_args(spec, real_cpus(), nd)} --log {nd}/cpumap.log \
  {"--restrict-oom-score-adj true --drop-hugepage-limits true " if crio else ""}{bind}-- "$@"
""", 0o755)


def _write_crio_files(nd, dirs, reg):
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


def _write_containerd_toml(nd, dirs, sock):
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


def _write_cni_conf(nd, name, subnet):
    write_file(os.path.join(nd, "cni/net.d/10-bridge.conflist"), json.dumps({
        "cniVersion": "1.0.0", "name": f"dracpu-{name}",
        "plugins": [{"type": "bridge", "bridge": _bridge(name), "isGateway": True, "ipMasq": False,
                     "ipam": {"type": "host-local", "dataDir": os.path.join(nd, "cni-state"),
                              "ranges": [[{"subnet": str(subnet)}]], "routes": [{"dst": "0.0.0.0/0"}]}},
                    {"type": "loopback"}]}, indent=1))


def _write_kubelet_yaml(nd, name, info, index, spec, sock, subnet):
    """The KubeletConfiguration (cgroupfs driver on the node's cgroup root, webhook auth); returns the
    kubelet's port."""
    port, healthz = free_port(), free_port()
    settings = info["settings"]
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
        "registerWithTaints": ([TAINT] if int(settings["CLUSTER_NODES"]) else []) + register_taints(spec),
        "resolvConf": "/etc/resolv.conf",
        **({"featureGates": _feature_gates(settings.get("CLUSTER_FEATURE_GATES"))}
           if settings.get("CLUSTER_FEATURE_GATES") else {}),
    }, sort_keys=False))
    return port


def _runtime_command(nd, crio):
    """The container runtime's command line and what run.sh prepares for it."""
    if crio:
        return (f"CONTAINERS_STORAGE_CONF={nd}/storage.conf CONTAINERS_REGISTRIES_CONF={nd}/registries.conf "
                f"crio --config {nd}/crio.conf --config-dir {nd}/crio.conf.d --registries-conf {nd}/registries.conf "
                f"--registries-conf-dir {nd}/crio.conf.d --log-level info",
                "mkdir -p /run/crio/ns /run/crio/exits /run/crio/storage\n")
    return f"containerd --config {nd}/containerd.toml", ""


def _write_run_sh(nd, name, dirs, ip, spec, sock, hw_mounts, cpus):
    """run.sh, the node's one process inside its own mount and UTS namespaces: bind-mounts the node's
    directories over the fixed paths (FIXED) and its simulated CPU hardware, starts the runtime, waits
    for its socket, starts the kubelet, and exits (stopping the other) when either exits."""
    crio = spec["runtime"] == "cri-o"
    mounts = "".join(f"mount --bind {nd}/mnt{f} {f}\n" for f in FIXED)
    path = ":".join([dirs["crio"] if crio else dirs["containerd"], dirs["runc"],
                     "/usr/local/sbin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"])
    logs = p("logs")
    rt = "crio" if crio else "containerd"
    rt_cmd, rt_prep = _runtime_command(nd, crio)
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
{hw_mounts}{rt_prep}say "mounts done: {len(FIXED)} node directories, the CPU hardware ({cpus} CPUs)"
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
  --hostname-override={name} --node-ip={ip} {" ".join(shlex.quote(f) for f in kubelet_flags(spec))} --v=1 >>{logs}/real-{name}-kubelet.log 2>&1 &
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
