"""A real node (containerd 2.4.2 + the cluster's kubelet) next to the simulated ones: CLUSTER_REAL_NODES=1.

The node registers and becomes Ready from a real kubelet (its /configz through the API server's
node proxy, nodeInfo from the CRI), a hostNetwork pod and a bridge-network pod run with the
harness-built pause image pulled through the registry mirror from the local registry, and
`cluster.py down` leaves nothing behind: processes, mounts, the bridge and its veths, cgroup
dirs, host sysctls, the network namespace with the real kube-proxy's rules (it serves the
`kubernetes` Service while the node runs). The node lives in the cluster's network namespace, so
the host's iptables and links never change and a second cluster with a real node runs beside it. Runs last, after the real-node binaries are built (`tests/cluster/build.sh
real-node`, about 5 minutes on a new machine; late_builds.py).
"""
import glob
import hashlib
import ipaddress
import json
import os
import ssl
import subprocess
import urllib.request

from cluster_pids import processes_of
from real_nodes_lib import NODE, TAINT_KEY, is_ready, skip_marks, wait

HOST_STATE = "/run/dracpu-real-nodes.json"
FIXED = ["/var/lib/kubelet", "/run/containerd", "/run/netns", "/var/lib/cni", "/run/nri", "/run/cdi",
         "/var/log/pods", "/var/log/containers", "/run/crio"]
SYSCTLS = ["net/ipv4/ip_forward", "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops"]

pytestmark = skip_marks()


def sysctls():
    out = {}
    for s in SYSCTLS:
        with open("/proc/sys/" + s) as f:
            out[s] = f.read().strip()
    return out


def kube_chains(netns=None):
    """The KUBE-* chains of every iptables table (kube-proxy's and the kubelet's), on the host or in
    the network namespace netns."""
    out = {}
    for binary in ("iptables-save", "ip6tables-save"):
        text = subprocess.run(in_netns(netns, [binary]), capture_output=True, text=True).stdout
        out[binary] = sorted(line.split()[0] for line in text.splitlines() if line.startswith(":KUBE-"))
    return out


def in_netns(netns, argv):
    return (["nsenter", f"--net=/run/netns/{netns}"] if netns else []) + argv


def pod(name, host_network):
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": NODE},
            "tolerations": [{"key": TAINT_KEY, "operator": "Exists"}],
            "hostNetwork": host_network, "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1"}],
        },
    }


def test_real_node_runs_pods_and_down_leaves_nothing(cluster_factory):
    before = sysctls()
    chains_before = kube_chains()
    # another state dir with real nodes shares the host-wide state (sysctls, mount points)
    shared = os.path.exists(HOST_STATE)
    existed = [os.path.lexists(f) for f in FIXED]
    c = cluster_factory("real-node", CLUSTER_NODES=1, CLUSTER_REAL_NODES=1)   # real01 beside simulated node01: its NoExecute taint
    from kubernetes import client
    core = client.CoreV1Api(c.api_client)
    state = json.load(open(os.path.join(c.state_dir, "real-nodes.json")))
    node_state = state["nodes"][NODE]
    try:
        # the node, from the real kubelet
        node = core.read_node(NODE)
        assert any(x.type == "Ready" and x.status == "True" for x in node.status.conditions)
        assert node.status.node_info.container_runtime_version == "containerd://2.4.2"
        assert node.status.node_info.kubelet_version == c.env["CLUSTER_K8S_VERSION"]
        assert any(t.key == TAINT_KEY and t.effect == "NoExecute" for t in node.spec.taints or [])
        req = urllib.request.Request(f"{c.env['CLUSTER_APISERVER']}/api/v1/nodes/{NODE}/proxy/configz",
                                     headers={"Authorization": f"Bearer {c.env['CLUSTER_ADMIN_TOKEN']}"})
        ctx = ssl.create_default_context(cafile=c.env["CLUSTER_CA_FILE"])
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            data = json.load(r)
        assert data["kubeletconfig"]["cpuManagerPolicy"] == "none"
        assert data["kubeletconfig"]["cgroupDriver"] == "cgroupfs"

        # pods: hostNetwork and bridge, the pause image through the mirror
        for name, hn in (("real-hostnet", True), ("real-bridge", False)):
            core.create_namespaced_pod("default", pod(name, hn))
        for name in ("real-hostnet", "real-bridge"):
            wait(f"pod {name} Running", lambda: core.read_namespaced_pod(name, "default").status.phase == "Running",
                 timeout=90)
        hostnet = core.read_namespaced_pod("real-hostnet", "default")
        bridge = core.read_namespaced_pod("real-bridge", "default")
        # the node's address in the cluster's network namespace (cluster_real_node_config.node_ip)
        node_cidr = ipaddress.ip_network(c.env["CLUSTER_NODE_CIDR"])
        assert node.status.addresses[0].address == str(node_cidr.network_address + 249 * 256 + 1) == node_state["ip"]
        assert hostnet.status.pod_ip == node.status.addresses[0].address
        assert ipaddress.ip_address(bridge.status.pod_ip) in ipaddress.ip_network(node_state["subnet"])
        reg_log = open(os.path.join(c.state_dir, "logs", "registry.log"), errors="replace").read()
        assert "ns=registry.k8s.io" in reg_log and "/v2/pause/manifests/" in reg_log
        netns = c.env["CLUSTER_NETNS"]
        veths = subprocess.run(["ip", "-n", netns, "-o", "link", "show", "master", node_state["bridge"]],
                               capture_output=True, text=True).stdout
        veths = [line.split(":")[1].strip().split("@")[0] for line in veths.splitlines()]
        assert veths, "the bridge pod has no veth on the node's bridge"
        with open(os.path.join(c.state_dir, "pids", f"real-{NODE}.json")) as f:
            pids = [json.load(f)["pid"]]
        cg = f"dracpu-{hashlib.sha256(c.state_dir.encode()).hexdigest()[:8]}-{NODE}"   # cluster_real_node_config
        cgroups = glob.glob(f"/sys/fs/cgroup/*/{cg}")
        assert cgroups and os.path.isdir(f"/sys/fs/cgroup/memory/{cg}/kubepods")
        # the real kube-proxy serves the kubernetes Service for in-cluster clients on the real
        # nodes, from the namespace's own tables; the host's are as they were, and so are its links
        nat = subprocess.run(in_netns(netns, ["iptables-save", "-t", "nat"]), capture_output=True, text=True).stdout
        assert "default/kubernetes:https" in nat and "10.96.0.1/32" in nat, nat[-1500:]
        assert kube_chains() == chains_before, "the host's iptables changed while the real node ran"
        host_links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        assert node_state["bridge"] + ":" not in host_links
        # a second cluster with a real node runs beside it: its own namespace, kube-proxy and real01
        c2 = cluster_factory("real-node-2", CLUSTER_NODES=1, CLUSTER_REAL_NODES=1)
        try:
            core2 = client.CoreV1Api(c2.api_client)
            assert c2.env["CLUSTER_NETNS"] != netns
            assert is_ready(core2.read_node(NODE)) and is_ready(core.read_node(NODE))
            core2.create_namespaced_pod("default", pod("real-hostnet-2", True))
            wait("pod real-hostnet-2 Running in the second cluster",
                 lambda: core2.read_namespaced_pod("real-hostnet-2", "default").status.phase == "Running", timeout=90)
            assert core.read_namespaced_pod("real-hostnet", "default").status.phase == "Running"
        finally:
            c2.down()
    finally:
        c.down()

    # nothing left
    mountinfo = open("/proc/self/mountinfo").read()
    assert c.state_dir not in mountinfo
    for f in FIXED[:2] + FIXED[3:]:   # /run/netns: the host's own (ip netns) mount
        assert f" {f} " not in mountinfo, f
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), pid
    left = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if c.state_dir.encode() in open(f"/proc/{d}/cmdline", "rb").read():
                    left.append(d)
            except OSError:
                pass
    # the node's processes by the cluster's id in their environment, not by the number of its mount
    # namespace alone (cluster_pids.py)
    left += processes_of(c.state_dir)
    assert not left, f"processes left: {left}"
    assert netns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert node_state["bridge"] + ":" not in links
    for v in veths:
        assert f" {v}@" not in links and f" {v}:" not in links, v
    assert not [g for g in cgroups if os.path.exists(g)]
    assert kube_chains() == chains_before, "iptables chains left on the host"
    if not shared:
        assert sysctls() == before
        assert not os.path.exists(HOST_STATE)
        assert [os.path.lexists(f) for f in FIXED] == existed, "bind-mount targets created and left behind"
    assert not os.path.exists(os.path.join(c.state_dir, "real-nodes.json"))
