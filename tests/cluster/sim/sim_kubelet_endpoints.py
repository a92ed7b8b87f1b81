"""The simulated kubelets' HTTPS endpoints and the container logs they serve.

Owns: the container log files (PodLogs: <state>/sim/logs/<node>/<ns>_<pod>/<container>.log),
<state>/sim/kubelets.json (what kubelet_server.py serves per node address), the node addresses in
the network namespace, and starting/restarting/stopping the kubelet_server.py child there.
Must not: create the namespace or veth (tests/cluster/cluster_netns.py does), nor decide what a
container logs (sim_pods.py and sim_driver_publish.py write the lines). A mixin of main.Sim.
"""
import ipaddress
import json
import logging
import os
import subprocess
import sys
import threading

from sim_format import micro

HERE = os.path.dirname(os.path.abspath(__file__))
log = logging.getLogger("sim")


class PodLogs:
    """<dir>/<node>/<ns>_<pod>/<container>.log, lines '<RFC3339Nano> <text>' (read by kubelet_server)."""

    def __init__(self, root):
        self.root = root
        self.lock = threading.Lock()
        os.makedirs(root, exist_ok=True)

    def path(self, node, ns, pod, container):
        return os.path.join(self.root, node, f"{ns}_{pod}", f"{container}.log")

    def reset(self, node, ns, pod, containers):
        d = os.path.join(self.root, node, f"{ns}_{pod}")
        os.makedirs(d, exist_ok=True)
        for c in containers:
            open(os.path.join(d, f"{c}.log"), "w").close()

    def write(self, node, ns, pod, container, *lines):
        p = self.path(node, ns, pod, container)
        with self.lock:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "a") as f:
                for ln in lines:
                    f.write(f"{micro()} {ln}\n")

    def remove(self, node, ns, pod):
        d = os.path.join(self.root, node, f"{ns}_{pod}")
        try:
            for x in os.listdir(d):
                os.unlink(os.path.join(d, x))
            os.rmdir(d)
        except OSError:
            pass


class KubeletEndpointsMixin:
    def state_file(self):
        return os.path.join(self.state_dir, "sim", "kubelets.json")

    def write_state(self):
        data = {"logDir": self.logs.root, "nodes": {
            s.address: {"name": s.name, "configz": {"kubeletconfig": s.kubelet_config()}}
            for s in self.specs.values()}}
        p = self.state_file()
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p + ".tmp", "w") as f:
            json.dump(data, f)
        os.replace(p + ".tmp", p)

    def netns_iface(self):
        want = self.env.get("CLUSTER_NETNS_IFACE")
        if want:
            return want
        cidr = ipaddress.ip_network(self.env.get("CLUSTER_NODE_CIDR") or "10.213.0.0/16", strict=False)
        out = subprocess.run(["ip", "-n", self.netns, "-o", "-4", "addr", "show"], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[2] == "inet" and ipaddress.ip_address(parts[3].split("/")[0]) in cidr:
                return parts[1].split("@")[0]
        out = subprocess.run(["ip", "-n", self.netns, "-o", "link"], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            name = line.split(":")[1].strip().split("@")[0]
            if name != "lo":
                return name
        raise RuntimeError(f"no interface found in network namespace {self.netns}")

    def setup_netns(self):
        iface = self.netns_iface()
        cmds = "".join(f"addr replace {s.address}/32 dev {iface}\n" for s in self.specs.values())
        r = subprocess.run(["ip", "-n", self.netns, "-force", "-batch", "-"], input=cmds, capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise RuntimeError(f"adding node addresses in {self.netns}: {r.stderr.strip()}")
        log.info("added %d node address(es) to %s in network namespace %s", len(self.specs), iface, self.netns)

    def start_child(self):
        cmd = ["ip", "netns", "exec", self.netns, sys.executable, os.path.join(HERE, "kubelet_server.py"),
               "--state", self.state_file(), "--cert-dir", os.path.join(self.state_dir, "sim", "kubelet-pki")]
        self.child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
        log.info("kubelet server started (pid %d) in network namespace %s", self.child.pid, self.netns)

    def supervise_child(self):
        while not self.stop.wait(2):
            if self.child and self.child.poll() is not None and not self.stop.is_set():
                log.warning("kubelet server exited with %s: restarting", self.child.returncode)
                self.start_child()

    def stop_child(self):
        c = self.child
        if c and c.poll() is None:
            c.terminate()
            try:
                c.wait(5)
            except subprocess.TimeoutExpired:
                c.kill()
                c.wait(5)
