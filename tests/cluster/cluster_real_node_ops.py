"""Fault injection on a running real node (cluster.py stop-kubelet / start-kubelet).

Owns: finding a real node's kubelet process (in the node's mount namespace, recorded in
<state>/real-nodes.json, with `--hostname-override=<name>` on its command line) and freezing or
resuming it with SIGSTOP / SIGCONT. A frozen kubelet keeps its process, its sockets and everything
it started (containerd, shims, pods, the driver): the node only stops answering (node status and
lease renewals, `/configz` through the API server's node proxy, plugin registration), the way a
hung or partitioned kubelet looks to the control plane. The node lifecycle controller marks it
`Ready=Unknown` (`NodeStatusUnknown`) and taints it `node.kubernetes.io/unreachable` once
kube-controller-manager's --node-monitor-grace-period (default, 40 s here) has passed.
A SIGKILL would not do: run.sh then stops containerd and the whole node exits.
Must not: touch another node, another state dir, or any process outside the node's mount namespace.
"""
import os
import signal

from cluster_state import die, log, p, read_json


def kubelet_pids(name):
    """Pids of node `name`'s kubelet (normally one)."""
    state = read_json(p("real-nodes.json")) or {}
    node = (state.get("nodes") or {}).get(name)
    if not node:
        known = ", ".join(state.get("nodes") or {}) or "none"
        die(f"no real node {name!r} in {p('real-nodes.json')} (known: {known})", 2)
    if not node.get("mntns"):
        die(f"real node {name}: its mount namespace was not recorded; cannot find its kubelet")
    flag = f"--hostname-override={name}".encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{d}/ns/mnt") != node["mntns"]:
                continue
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"kubelet" and flag in argv:
            pids.append(int(d))
    return pids


def cmd_kubelet_signal(name, stop):
    """stop: SIGSTOP node `name`'s kubelet; else SIGCONT. Prints the pid(s)."""
    pids = kubelet_pids(name)
    if not pids:
        die(f"real node {name}: no kubelet process found (is the node running? `cluster.py status`)")
    sig = signal.SIGSTOP if stop else signal.SIGCONT
    for pid in pids:
        os.kill(pid, sig)
    log(f"kubelet of {name} (pid {', '.join(map(str, pids))}) "
        + ("stopped (SIGSTOP): the node goes NotReady after the node monitor grace period"
           if stop else "continued (SIGCONT)"))
    print(" ".join(map(str, pids)))
