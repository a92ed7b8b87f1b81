"""Where a test cluster lives and the small helpers every part of cluster.py uses.

Owns: the state and cache directories (paths under them), the knobs and their defaults, the
fixed names (chart repository, network namespace/veth names derived from the state dir), logging,
`die`, atomic file writes, JSON reads, plain HTTP(S) GETs, free ports and shell commands.
Must not: start or stop processes, create network devices, generate keys or talk to the registry
(cluster_processes.py, cluster_netns.py, cluster_pki.py, cluster_registry_charts.py do that).
"""
import hashlib
import json
import os
import shlex
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLUSTER_PY = os.path.join(HERE, "cluster.py")
STATE = os.path.abspath(os.environ.get("CLUSTER_STATE_DIR") or os.path.join(REPO, ".cluster"))
CACHE = os.path.abspath(os.environ.get("CLUSTER_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kubevirtci-dra-cpu"))
BUILD_SH = os.path.join(HERE, "build.sh")
SIM_MAIN = os.path.join(HERE, "sim", "main.py")
MARKER = ".dracpu-cluster"          # a state dir we own (and may wipe)
ID_ENV = "DRACPU_CLUSTER_ID"        # set in every child's environment: down finds stragglers by it
CHART_REPO = "dra-driver-cpu/charts"
CHART_NAME = "dra-driver-cpu"
SERVICE_CIDR = "10.96.0.0/16"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
T0 = time.monotonic()

# Knobs (docs/internals.md "Test cluster interface"); the defaults apply when a variable is unset.
# The only place the node defaults live: `make demo`'s cluster, one real node (real01) and no
# simulated one; simulated nodes (tests/cluster/sim/) only when CLUSTER_NODES asks for them.
KNOBS = {
    "CLUSTER_NODES": "0",        # simulated nodes node01, ... (kwok-style, sim/main.py)
    "KUBEVIRT_NUM_VCPU": "12",
    "KUBEVIRT_NUM_NUMA_NODES": "2",
    "CLUSTER_K8S_VERSION": "v1.36.3",
    "CLUSTER_FEATURE_GATES": "",
    "CLUSTER_SIMULATE_DRIVER": "true",
    "CLUSTER_NODE_OVERRIDES": "",
    "CLUSTER_SLICE_DELETE_DELAY": "30",
    "CLUSTER_REAL_NODES": "1",   # real containerd + kubelet nodes real01, ... (cluster_real_node.py)
    "CLUSTER_REAL_NODE_OVERRIDES": "",   # their CPU hardware, per node (cluster_node_hw.py)
}

# Components in start order; down stops them in reverse.
ORDER = ["registry", "helm-mirror", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "sim"]

VETH_NS = "eth0"                          # name of the veth end inside the namespace


def log(msg):
    print(f"[cluster {time.monotonic() - T0:5.1f}s] {msg}", file=sys.stderr, flush=True)


def die(msg, code=1):
    log(f"ERROR: {msg}")
    sys.exit(code)


def p(*parts):
    return os.path.join(STATE, *parts)


def short_hash():
    return hashlib.sha256(STATE.encode()).hexdigest()[:8]


def netns_name():
    return f"dracpu-{short_hash()}"


def veth_host():
    return f"dracpu{short_hash()[:6]}"   # 12 chars (IFNAMSIZ is 16)


def run(cmd, check=True, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(shlex.quote, cmd))} failed ({r.returncode}): {r.stderr.strip() or r.stdout.strip()}")
    return r


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def write_file(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def http_get(url, token=None, cafile=None, timeout=3, accept=None):
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if accept:
        req.add_header("Accept", accept)
    ctx = ssl.create_default_context(cafile=cafile) if url.startswith("https") else None
    with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
        return r.status, r.read()


def tail(path, n=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"
