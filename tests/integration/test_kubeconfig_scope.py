"""Issue 10 items 5 and 6: a run touches only the cluster it was told about, names it before its
first write, and a kubeconfig given as a dict has only its secrets hidden.

- `make demo` (hack/demo.sh) with HOME, KUBECONFIG, K8S_AUTH_KUBECONFIG and the kubevirtci path all
  pointing at a decoy kubeconfig (its server is a loopback port this test listens on) brings up
  its own test cluster, installs there, names that cluster and never connects to the decoy; its
  verify pod runs on the demo's real node, pinned by the driver.
- preflight with a dict kubeconfig at -vvv: its report reads `resource.k8s.io/v1` and the server
  version unmasked; no credential of the kubeconfig appears anywhere in the output.
- target_cluster names the API server and context the client was built from.

Nodes: the demo's own: one real node (a real kubelet + containerd), so that test runs last, after
the real-node build; the others use the session cluster (its real node, real01).
"""
import os
import re
import socket
import subprocess
import sys
import threading

import pytest
import yaml

from ansible_run import REPO, run_playbook
from real_nodes_lib import skip_marks
from reliability_lib import cluster_credentials

pytestmark = pytest.mark.timeout(1800)
REAL_NODE_BUILT, AS_ROOT = skip_marks()   # the demo's real node: run last, after build.sh real-node


def _kubeconfig(cluster):
    with open(cluster.kubeconfig) as f:
        return yaml.safe_load(f)


def _server_version(cluster):
    from kubernetes import client
    return client.VersionApi(cluster.api_client).get_code().git_version


def _playbook(tmp_path, name, task):
    path = tmp_path / (name + ".yml")
    path.write_text(yaml.safe_dump([{"name": name, "hosts": "localhost", "connection": "local",
                                     "gather_facts": False, "tasks": task}], sort_keys=False))
    return str(path)


# ------------------------------------------------------------------------------- item 6: redaction


def test_dict_kubeconfig_masks_only_its_secrets(cluster, tmp_path):
    kc = _kubeconfig(cluster)
    creds = cluster_credentials(cluster)
    secrets = creds["tokens"] + creds["private_keys"]
    # the dict's own credential (cluster_credentials checks it is one of the API server's tokens)
    assert kc["users"][0]["user"]["token"] in secrets
    play = _playbook(tmp_path, "preflight-dict", [
        {"name": "Preflight with a dict kubeconfig", "kubevirtci.dra_cpu.preflight": {
            "kubeconfig": "{{ dict_kubeconfig }}", "reserved_cpus": "0-1", "ignore": ["cpu_manager_policy"]},
         "register": "pf", "ignore_errors": True},
        {"name": "Report", "ansible.builtin.debug": {"msg": "{{ pf.findings | map(attribute='message') | list }}"}},
    ])
    vars_file = tmp_path / "vars.yml"
    vars_file.write_text(yaml.safe_dump({"dict_kubeconfig": kc}))
    # the vars file keeps the dict out of the command line; the default callback at -vvv shows
    # the module's invocation (its arguments) as a user sees them
    r = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), play, "-e", "@" + str(vars_file), "-vvv"],
        env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                 ANSIBLE_FORCE_COLOR="0"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600, cwd=REPO)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    version = _server_version(cluster)
    assert "resource.k8s.io/v1 is served" in out, out[-4000:]
    assert "Kubernetes %s" % version in out, out[-4000:]
    assert "resource.k8s.io/********" not in out and "********.%s" % version.split(".", 1)[1] not in out
    leaks = [s[:6] + "..." for s in secrets if s in out]
    assert not leaks, "kubeconfig secrets in the -vvv output: %s" % leaks
    # the rest of the kubeconfig stays readable in the invocation (its server URL, for one)
    assert kc["clusters"][0]["cluster"]["server"] in out


# ------------------------------------------------------------------- item 5: which cluster changes


def test_target_cluster_names_server_and_context(cluster, tmp_path):
    kc = _kubeconfig(cluster)
    play = _playbook(tmp_path, "target", [
        {"name": "Target by option", "kubevirtci.dra_cpu.target_cluster": {"kubeconfig": cluster.kubeconfig},
         "register": "by_option"},
        {"name": "Target by K8S_AUTH_KUBECONFIG", "kubevirtci.dra_cpu.target_cluster": {}, "register": "by_env",
         "environment": {"K8S_AUTH_KUBECONFIG": cluster.kubeconfig}},
    ])
    r = run_playbook(None, play)
    assert r.rc == 0, r
    for name in ("Target by option", "Target by K8S_AUTH_KUBECONFIG"):
        got = r.result(name)
        assert got["server"].rstrip("/") == kc["clusters"][0]["cluster"]["server"].rstrip("/"), got
        assert got["context"] == kc["current-context"], got
        assert got["kubeconfig"] == cluster.kubeconfig, got
        assert got["server_version"] == _server_version(cluster)
        assert got["changed"] is False


class Decoy:
    """A TCP listener on a free loopback port that records every connection it gets."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self):
        self._stop = True
        self.sock.close()


def _decoy_kubeconfig(path, port):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "decoy",
        "clusters": [{"name": "decoy", "cluster": {"server": f"https://127.0.0.1:{port}",
                                                   "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "decoy", "context": {"cluster": "decoy", "user": "decoy"}}],
        "users": [{"name": "decoy", "user": {"token": "decoy-token-must-not-be-used"}}]}))


@REAL_NODE_BUILT
@AS_ROOT
def test_make_demo_uses_its_own_cluster_and_never_the_configured_one(tmp_path):
    decoy = Decoy()
    home = tmp_path / "home"
    _decoy_kubeconfig(home / ".kube" / "config", decoy.port)
    _decoy_kubeconfig(tmp_path / "kubeconfig-env", decoy.port)
    _decoy_kubeconfig(tmp_path / "kubevirtci" / "k8s-1.36" / ".kubeconfig", decoy.port)
    state = tmp_path / "demo-state"
    real_home = os.path.expanduser("~")
    cache = os.environ.get("CLUSTER_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(real_home, ".cache"), "kubevirtci-dra-cpu")
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("CLUSTER_") or key.startswith("K8S_AUTH_"):
            env.pop(key)
    env.update({
        "HOME": str(home),
        "KUBECONFIG": str(tmp_path / "kubeconfig-env"),
        "K8S_AUTH_KUBECONFIG": str(tmp_path / "kubeconfig-env"),
        "KUBEVIRTCI_CONFIG_PATH": str(tmp_path / "kubevirtci"), "KUBEVIRT_PROVIDER": "k8s-1.36",
        "DEMO_STATE_DIR": str(state),
        # the binaries built once for every test cluster (the cache is keyed by version, not HOME)
        "CLUSTER_CACHE_DIR": cache,
        "GOPATH": os.environ.get("GOPATH") or os.path.join(real_home, "go"),
        "GOMODCACHE": os.environ.get("GOMODCACHE") or os.path.join(real_home, "go", "pkg", "mod"),
        "GOCACHE": os.environ.get("GOCACHE") or os.path.join(real_home, ".cache", "go-build"),
        "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1",
    })
    try:
        r = subprocess.run([os.path.join(REPO, "hack", "demo.sh")], env=env, cwd=REPO, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=1500)
        out = r.stdout
        with open(state / "kubeconfig") as f:
            own = yaml.safe_load(f)["clusters"][0]["cluster"]["server"].rstrip("/")
    finally:
        subprocess.run([sys.executable, os.path.join(REPO, "tests", "cluster", "cluster.py"), "down"],
                       env=dict(env, CLUSTER_STATE_DIR=str(state)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600)
        decoy.close()
    assert r.returncode == 0, out[-6000:]
    assert decoy.connections == 0, "the demo contacted the cluster of KUBECONFIG / ~/.kube/config"
    assert f"127.0.0.1:{decoy.port}" not in out
    # the release task is named with the cluster it changes (install or uninstall)
    changed = re.findall(r"(?:Uninstall|Install or upgrade) release \S+ on (\S+) \(context", out)
    assert changed and all(s.rstrip("/") == own for s in changed), (changed, own)
    assert "decoy" not in out
    # the demo's node is real: verify's pod ran on its kubelet, pinned by the driver (verify.yml's
    # report, folded over lines by the YAML callback, a quote doubled)
    report = " ".join(out.split()).replace("''", "'")
    assert "allocated: node real01," in report and "pod virt-launcher-dra-cpu-verify Running, QoS Guaranteed" in report, out[-6000:]
    assert re.search(r"its container pinned to CPUs \S+ \(the driver's log on real01\)", report), out[-6000:]
