"""Fault injection on a running real node (cluster.py stop-kubelet / start-kubelet, registry-off / registry-on).

Owns: finding a real node's kubelet process, freezing or resuming it (SIGSTOP / SIGCONT), and cutting the
node off from the cluster's registry or giving it back.
Must not: touch another node, another state dir, or any process outside the node's mount namespace.
"""
import os
import signal

from cluster_images import PAUSE_IMAGE
from cluster_processes import marked
from cluster_real_node_config import mirror_hosts
from cluster_state import die, log, p, read_json, run, write_file

CLOSED = "127.0.0.1:1"   # nothing listens there in the cluster's network namespace: a pull is refused at once


def real_node(name):
    """Node `name`'s record in <state>/real-nodes.json (cluster_real_node_config.node_config), or exit 2."""
    state = read_json(p("real-nodes.json")) or {}
    node = (state.get("nodes") or {}).get(name)
    if not node:
        known = ", ".join(state.get("nodes") or {}) or "none"
        die(f"no real node {name!r} in {p('real-nodes.json')} (known: {known})", 2)
    return node


def kubelet_pids(name):
    """Pids of node `name`'s kubelet (normally one): in the node's mount namespace, recorded in
    <state>/real-nodes.json, with `--hostname-override=<name>` on its command line."""
    node = real_node(name)
    if not node.get("mntns"):
        die(f"real node {name}: its mount namespace was not recorded; cannot find its kubelet")
    flag = f"--hostname-override={name}".encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{d}/ns/mnt") != node["mntns"] or not marked(d):
                continue
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"kubelet" and flag in argv:
            pids.append(int(d))
    return pids


def cmd_kubelet_signal(name, stop):
    """stop: SIGSTOP node `name`'s kubelet; else SIGCONT. Prints the pid(s).

    A frozen kubelet keeps its process, its sockets and everything it started (containerd, shims, pods,
    the driver): the node only stops answering (node status and lease renewals, `/configz` through the
    API server's node proxy, plugin registration), the way a hung or partitioned kubelet looks to the
    control plane. The node lifecycle controller marks it `Ready=Unknown` (`NodeStatusUnknown`) and
    taints it `node.kubernetes.io/unreachable` once kube-controller-manager's
    --node-monitor-grace-period (default, 40 s here) has passed. A SIGKILL would not do: run.sh then
    stops containerd and the whole node exits."""
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


def removable_images(refs, sandbox=PAUSE_IMAGE):
    """The image names of `refs` (containerd's `images ls -q`) a node cut off from its registry must
    pull again: every name but the sandbox image's (the kubelet needs it for every pod) and the bare
    `sha256:` ids (the CRI plugin's own references, removed with the last name)."""
    repo = sandbox.rsplit(":", 1)[0]
    return [r for r in refs if not r.startswith("sha256:") and r.split("@")[0].rsplit(":", 1)[0] != repo]


def hosts_files(registry, reachable):
    """The node's certs.d hosts files: as started (reachable), or every name at CLOSED."""
    files = mirror_hosts(registry)
    if reachable:
        return files
    return {rel: f'server = "http://{CLOSED}"\n' for rel in files}


def cmd_registry(name, reachable):
    """registry-on / registry-off NODE. Prints the image names removed.

    Off cuts one node off the way a node behind a broken mirror or network is: its containerd's hosts
    files (certs.d, read at each pull) point every image name at a closed port, and the images it
    pulled (every name but the sandbox image's) leave its store (`ctr images rm`, in the node's mount
    namespace), so the next pod of such an image on that node really fails to pull (ErrImagePull, then
    the kubelet's ImagePullBackOff) while its running containers and the other nodes go on. On writes
    the hosts files back as the node started."""
    node = real_node(name)
    if "registry" not in node:
        die(f"real node {name}: started by an older cluster.py (no registry recorded); run `cluster.py up` again")
    if node.get("runtime", "containerd") != "containerd":
        die(f"real node {name} runs {node['runtime']}: registry-off / registry-on rewrite containerd's hosts "
            "files and image store, and only containerd nodes have those", 2)
    for rel, text in hosts_files(node["registry"], reachable).items():
        write_file(os.path.join(node["dir"], rel), text)
    if reachable:
        log(f"real node {name}: its containerd pulls from the registry {node['registry']} again")
        return
    pids = kubelet_pids(name)
    if not pids:
        die(f"real node {name}: no kubelet process found (is the node running? `cluster.py status`)")
    ctr = ["nsenter", f"--mount=/proc/{pids[0]}/ns/mnt", "--", node["ctr"],
           "--address", "/run/containerd/containerd.sock", "--namespace", "k8s.io", "images"]
    gone = removable_images(run(ctr + ["ls", "--quiet"]).stdout.split())
    if gone:
        run(ctr + ["rm", *gone])
    log(f"real node {name}: cut off from the registry (pulls go to {CLOSED}); removed from its store: "
        + (", ".join(gone) or "nothing"))
    print(" ".join(gone))
