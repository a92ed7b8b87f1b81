"""The network namespace and veth pair the nodes live in: the simulated kubelets listen there, the
real nodes (kubelet, containerd, their pods, kube-proxy) run there.

Owns: choosing the node CIDR, creating the namespace dracpu-<hash> with its veth pair, telling whether
they exist, running a command inside, and removing them (killing whatever still runs inside).
Must not: add per-node addresses, nor stop cluster processes other than those inside the namespace.
"""
import contextlib
import fcntl
import ipaddress
import os
import signal
import time

from cluster_state import VETH_NS, die, log, netns_name, run, veth_host


def pick_node_cidr():
    """CLUSTER_NODE_CIDR, else the first 10.N.0.0/16 (N from 213 to 249) no host address is in."""
    want = os.environ.get("CLUSTER_NODE_CIDR")
    used = run(["ip", "-o", "-4", "addr", "show"]).stdout
    used_nets = []
    for line in used.splitlines():
        parts = line.split()
        if "inet" in parts:
            used_nets.append(ipaddress.ip_interface(parts[parts.index("inet") + 1]).network)
    if want:
        return want
    for second in range(213, 250):
        net = ipaddress.ip_network(f"10.{second}.0.0/16")
        if not any(net.overlaps(u) for u in used_nets):
            return str(net)
    die("no free 10.213-249.0.0/16 range for the node network; set CLUSTER_NODE_CIDR")


# choosing and taking a range is one step under this host-wide flock, so clusters that start at the
# same moment (`make test` runs its stages in two lanes) never pick the same range
CIDR_LOCK = "/run/dracpu-node-cidr.lock"


@contextlib.contextmanager
def _cidr_lock():
    with open(CIDR_LOCK, "a") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        yield


def claim_node_network():
    """Picks a free node CIDR and brings the namespace up on it, both under the host-wide lock;
    returns (cidr, host_ip)."""
    with _cidr_lock():
        cidr = pick_node_cidr()
        host_ip, _ = netns_up(cidr)
    return cidr, host_ip


def veth_addresses(cidr):
    """The veth's two ends on the node network: (host end, namespace end), its first and second
    addresses."""
    net = ipaddress.ip_network(cidr)
    return net.network_address + 1, net.network_address + 2


def netns_up(cidr):
    ns, host = netns_name(), veth_host()
    net = ipaddress.ip_network(cidr)
    host_ip, ns_addr = veth_addresses(cidr)
    netns_down()
    run(["ip", "netns", "add", ns])
    run(["ip", "link", "add", host, "type", "veth", "peer", "name", VETH_NS, "netns", ns])
    run(["ip", "addr", "add", f"{host_ip}/{net.prefixlen}", "dev", host])
    run(["ip", "link", "set", host, "up"])
    run(["ip", "-n", ns, "addr", "add", f"{ns_addr}/{net.prefixlen}", "dev", VETH_NS])
    run(["ip", "-n", ns, "link", "set", VETH_NS, "up"])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])
    return str(host_ip), str(ns_addr)


def in_netns(argv):
    """argv run in the namespace (nsenter: no new mount namespace and no /sys remount, unlike
    `ip netns exec`): the real nodes and their kube-proxy."""
    return ["nsenter", f"--net=/run/netns/{netns_name()}"] + argv


def api_from_netns(info):
    """The API server's URL as the namespace reaches it: the host end of the veth."""
    return f"https://{info['host_ip']}:{info['ports']['apiserver']}"


def ns_ip(info):
    """The namespace's end of the veth (veth_addresses, as netns_up gave it)."""
    return str(veth_addresses(info["node_cidr"])[1])


def netns_exists():
    return netns_name() in run(["ip", "netns", "list"], check=False).stdout.split()


def veth_exists():
    return run(["ip", "link", "show", veth_host()], check=False).returncode == 0


def netns_down():
    ns = netns_name()
    if netns_exists():
        pids = run(["ip", "netns", "pids", ns], check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    if veth_exists():
        run(["ip", "link", "del", veth_host()], check=False)
    if netns_exists():
        run(["ip", "netns", "del", ns], check=False)
    for _ in range(50):            # the kernel tears the pair down asynchronously
        if not veth_exists() and not netns_exists():
            return
        time.sleep(0.1)
    log(f"WARNING: {ns}/{veth_host()} still present after removal")
