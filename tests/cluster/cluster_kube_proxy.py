"""The real nodes' kube-proxy: the `kubernetes` Service (10.96.0.1:443) for in-cluster clients.

Owns: <state>/kube-proxy.yaml and kube-proxy.kubeconfig, the process `kube-proxy`, in the cluster's
network namespace (its rules in the namespace's own tables). Must not: run outside that namespace.
"""
import os
import time

import yaml

from cluster_pki import kubeconfig
from cluster_processes import kill_group, proc_alive, spawn, wait_for
from cluster_netns import api_from_netns, in_netns
from cluster_state import free_port, http_get, log, netns_name, p, run, write_file


def start_kube_proxy(dirs, info, node, ns_ip):
    """Starts kube-proxy in the network namespace (node: the one it names itself after; ns_ip: the
    namespace's end of the veth, where the host reads its /healthz); returns its name.

    A driver pod on a real node has no kubeconfig: client-go's in-cluster config dials the Service's
    ClusterIP, and nothing answers there without a kube-proxy. The real nodes share the cluster's
    network namespace (cluster_netns.py; their hostNetwork pods too), so one real kube-proxy
    (k8s.io/kubernetes/cmd/kube-proxy, same version as the kubelet, iptables mode on Debian's iptables
    with the nf_tables backend) runs there, the way kind runs one per node's network namespace, and
    serves all of them: it DNATs the ClusterIP to the API server's advertised endpoint (the host end of
    the cluster's veth; the API server listens on every address when real nodes run). Its rules live in
    the namespace's own tables: the host's iptables are never touched, two clusters with real nodes run
    side by side, and `down` (which deletes the namespace) leaves no rule behind."""
    health = free_port()
    write_file(p("kube-proxy.kubeconfig"), kubeconfig(api_from_netns(info), info["token"], "admin"), 0o600)
    write_file(p("kube-proxy.yaml"), yaml.safe_dump({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": p("kube-proxy.kubeconfig")},
        "hostnameOverride": node, "mode": "iptables",
        "healthzBindAddress": f"{ns_ip}:{health}", "metricsBindAddress": f"127.0.0.1:{free_port()}",
        # no conntrack sysctls written (0 = leave them as they are), no localhost NodePorts (they
        # need route_localnet)
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        "iptables": {"localhostNodePorts": False},
    }, sort_keys=False))
    kp = os.path.join(dirs["kube-proxy"], "kube-proxy")
    spawn("kube-proxy", in_netns([kp, f"--config={p('kube-proxy.yaml')}", "--v=1"]))
    wait_for("kube-proxy /healthz", lambda: http_get(f"http://{ns_ip}:{health}/healthz")[0] == 200, 60,
             proc="kube-proxy")
    wait_for("kube-proxy's rule for the kubernetes Service", service_rule, 30, proc="kube-proxy")
    log(f"kube-proxy serving the kubernetes Service in {netns_name()} (10.96.0.1:443 -> {info['host_ip']})")
    return "kube-proxy"


def service_rule():
    """True once the namespace's nat table has the rule for default/kubernetes."""
    r = run(in_netns(["iptables-save", "-t", "nat"]), check=False)
    return "default/kubernetes:https" in r.stdout


def wait_for_exit():
    for _ in range(50):
        if not proc_alive("kube-proxy"):
            return True
        time.sleep(0.1)
    return not proc_alive("kube-proxy")


def stop_kube_proxy():
    """Stops it (safe twice); its rules go with the network namespace."""
    if not os.path.exists(p("kube-proxy.yaml")):
        return []
    kill_group("kube-proxy", grace=5.0)
    problems = [] if wait_for_exit() else ["kube-proxy still running after SIGKILL"]
    for f in ("kube-proxy.yaml", "kube-proxy.kubeconfig"):
        try:
            os.unlink(p(f))
        except OSError:
            pass
    return problems
