"""The test cluster itself: what `cluster.py up` provides, and that `down` leaves nothing behind.

Runs its own cluster in a private state dir, so it never disturbs the session `cluster`.

Nodes: the simulated ones; the real node's lifecycle (down leaves nothing) is test_real_node.py's.
"""
import hashlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from cluster_pids import processes_of

pytestmark = pytest.mark.timeout(900)


def get(url, token=None, cafile=None, timeout=10):
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    ctx = ssl.create_default_context(cafile=cafile) if url.startswith("https") else None
    with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
        return r.status, r.read()


@pytest.fixture(scope="module")
def lifecycle(cluster_cli):
    state = os.path.join(tempfile.mkdtemp(prefix="dracpu-lifecycle-"), "state")
    env = dict(os.environ)
    env.pop("CLUSTER_NODE_CIDR", None)
    # one simulated node and no real one (not the default): this checks the control plane, registry
    # and mirror, with no wait for the real-node binaries (test_real_node.py checks a real node's lifecycle)
    env.update(CLUSTER_NODES="1", CLUSTER_REAL_NODES="0", CLUSTER_STATE_DIR=state)
    t0 = time.monotonic()
    r = cluster_cli.run(state, "up", env=env)
    took = time.monotonic() - t0
    with open(os.path.join(state, "cluster.json")) as f:
        info = json.load(f)
    data = {"state": state, "env": cluster_cli.parse_env(r.stdout), "cli": cluster_cli, "info": info, "took": took,
            "stderr": r.stderr,
            "run_env": env}
    yield data
    cluster_cli.run(state, "down", env=env, check=False)
    if os.environ.get("CLUSTER_KEEP") != "true":
        shutil.rmtree(os.path.dirname(state), ignore_errors=True)


def test_up_prints_and_writes_the_env(lifecycle):
    env = lifecycle["env"]
    for key in ("KUBECONFIG", "DRA_CPU_CHART", "CLUSTER_REGISTRY", "CLUSTER_HELM_BINARY", "CLUSTER_HELM_MIRROR",
                "CLUSTER_HELM_VERSION", "CLUSTER_APISERVER_METRICS", "CLUSTER_NETNS", "CLUSTER_NODE_CIDR"):
        assert env.get(key), f"{key} missing from the output of `cluster.py up`"
    with open(os.path.join(lifecycle["state"], "env")) as f:
        assert lifecycle["cli"].parse_env(f.read()) == env
    assert env["DRA_CPU_CHART"] == f"oci://{env['CLUSTER_REGISTRY']}/dra-driver-cpu/charts/dra-driver-cpu"
    assert os.access(env["CLUSTER_HELM_BINARY"], os.X_OK)
    out = subprocess.run([env["CLUSTER_HELM_BINARY"], "version", "--short"], stdout=subprocess.PIPE, text=True).stdout
    assert out.startswith(env["CLUSTER_HELM_VERSION"])
    print(f"cluster up took {lifecycle['took']:.1f}s")
    budget = float(os.environ.get("CLUSTER_UP_BUDGET", "60"))
    assert lifecycle["took"] < budget, lifecycle["stderr"]


def test_api_ready_and_resource_v1_served(lifecycle):
    env = lifecycle["env"]
    token, ca = env["CLUSTER_ADMIN_TOKEN"], env["CLUSTER_CA_FILE"]
    code, body = get(env["CLUSTER_APISERVER"] + "/readyz", token, ca)
    assert code == 200 and body.strip() == b"ok"
    _, body = get(env["CLUSTER_APISERVER"] + "/apis/resource.k8s.io/v1", token, ca)
    kinds = {r["kind"] for r in json.loads(body)["resources"]}
    assert {"ResourceSlice", "ResourceClaim", "DeviceClass"} <= kinds


def test_kubernetes_client_and_default_service_account(lifecycle):
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=lifecycle["env"]["KUBECONFIG"])
    v1 = client.CoreV1Api(api)
    assert v1.read_namespaced_service_account("default", "default").metadata.name == "default"
    version = client.VersionApi(api).get_code()
    assert version.git_version == lifecycle["info"]["k8s_version"]


def test_metrics_readable_by_admin(lifecycle):
    env = lifecycle["env"]
    code, body = get(env["CLUSTER_APISERVER_METRICS"], env["CLUSTER_ADMIN_TOKEN"], env["CLUSTER_CA_FILE"])
    assert code == 200
    assert b"kubernetes_feature_enabled" in body
    with pytest.raises(urllib.error.HTTPError) as e:   # anonymous users may not
        get(env["CLUSTER_APISERVER_METRICS"], None, env["CLUSTER_CA_FILE"])
    assert e.value.code in (401, 403)


def test_registry_holds_both_chart_versions(lifecycle):
    env = lifecycle["env"]
    helm_env = dict(os.environ, HELM_CACHE_HOME=os.path.join(lifecycle["state"], "helm", "cache"),
                    HELM_CONFIG_HOME=os.path.join(lifecycle["state"], "helm", "config"),
                    HELM_DATA_HOME=os.path.join(lifecycle["state"], "helm", "data"))
    for version in ("0.2.0", "0.3.0"):
        r = subprocess.run([env["CLUSTER_HELM_BINARY"], "show", "chart", env["DRA_CPU_CHART"], "--version", version,
                            "--plain-http"], env=helm_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert r.returncode == 0, r.stderr
        assert "name: dra-driver-cpu" in r.stdout and f"version: {version}" in r.stdout


def test_helm_mirror_serves_a_verifiable_tarball(lifecycle):
    env = lifecycle["env"]
    name = f"helm-{env['CLUSTER_HELM_VERSION']}-linux-amd64.tar.gz"
    _, tgz = get(f"{env['CLUSTER_HELM_MIRROR']}/{name}")
    _, sums = get(f"{env['CLUSTER_HELM_MIRROR']}/{name}.sha256sum")
    digest, fname = sums.decode().split()
    assert fname == name
    assert hashlib.sha256(tgz).hexdigest() == digest
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
        helm = tar.getmember("linux-amd64/helm")
        assert helm.isfile() and helm.mode & 0o111


def test_network_namespace_present(lifecycle):
    env = lifecycle["env"]
    assert env["CLUSTER_NETNS"] in subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE,
                                                  text=True).stdout.split()
    veth = lifecycle["info"]["veth"]
    out = subprocess.run(["ip", "-o", "-4", "addr", "show", "dev", veth], stdout=subprocess.PIPE, text=True).stdout
    assert lifecycle["info"]["host_ip"] in out


def test_up_again_is_idempotent(lifecycle):
    t0 = time.monotonic()
    r = lifecycle["cli"].run(lifecycle["state"], "up", env=lifecycle["run_env"])
    assert time.monotonic() - t0 < 15
    assert lifecycle["cli"].parse_env(r.stdout)["KUBECONFIG"] == lifecycle["env"]["KUBECONFIG"]
    assert lifecycle["cli"].parse_env(r.stdout)["CLUSTER_APISERVER"] == lifecycle["env"]["CLUSTER_APISERVER"]
    assert "already up" in r.stderr
    assert lifecycle["cli"].run(lifecycle["state"], "status", env=lifecycle["run_env"], check=False).returncode == 0


def test_down_leaves_nothing_behind(lifecycle):
    state, info = lifecycle["state"], lifecycle["info"]
    assert processes_of(state), "the cluster should be running before down"
    lifecycle["cli"].run(state, "down", env=lifecycle["run_env"])
    assert processes_of(state) == []
    for name in os.listdir(os.path.join(state, "pids")):
        pytest.fail(f"pid file left: {name}")
    assert info["netns"] not in subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout
    assert subprocess.run(["ip", "link", "show", info["veth"]], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode != 0, "veth left behind"
    for what, port in info["ports"].items():
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError as e:
                pytest.fail(f"port {port} ({what}) still in use after down: {e}")
    # safe to run twice; status says down
    lifecycle["cli"].run(state, "down", env=lifecycle["run_env"])
    assert lifecycle["cli"].run(state, "status", env=lifecycle["run_env"], check=False).returncode == 3
