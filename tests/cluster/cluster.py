#!/usr/bin/env python3
"""The hermetic test cluster: real etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
helm and OCI registry on loopback; simulated nodes/pods/driver (tests/cluster/sim/).

    cluster.py up       start it (idempotent); prints the `export ...` lines of <state>/env
    cluster.py down     stop everything it started, remove the network namespace and veth
    cluster.py status   what runs (exit 0 healthy, 1 partly up, 3 down)
    cluster.py env      print <state>/env (for `eval "$(tests/cluster/cluster.py env)"`)
    cluster.py restart-apiserver [SECONDS]
                        kill kube-apiserver, keep it down SECONDS (default 0), start it again with
                        the same flags and wait for /readyz (fault injection)

State directory: ${CLUSTER_STATE_DIR:-<repo>/.cluster}. Binaries: tests/cluster/build.sh, cached in
${CLUSTER_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/kubevirtci-dra-cpu}. See tests/cluster/README.md.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VENV_PY = os.path.join(REPO, ".venv", "bin", "python")

# Re-exec under the repository's virtualenv (PyYAML, kubernetes, cryptography live there).
if os.path.exists(VENV_PY) and os.path.realpath(sys.prefix) != os.path.realpath(os.path.join(REPO, ".venv")) \
        and not os.environ.get("_DRACPU_CLUSTER_REEXEC"):
    os.environ["_DRACPU_CLUSTER_REEXEC"] = "1"
    os.execv(VENV_PY, [VENV_PY, os.path.abspath(__file__)] + sys.argv[1:])

import base64  # noqa: E402
import datetime  # noqa: E402
import hashlib  # noqa: E402
import ipaddress  # noqa: E402
import json  # noqa: E402
import secrets  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import ssl  # noqa: E402
import subprocess  # noqa: E402
import tarfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402

import yaml  # noqa: E402

STATE = os.path.abspath(os.environ.get("CLUSTER_STATE_DIR") or os.path.join(REPO, ".cluster"))
CACHE = os.path.abspath(os.environ.get("CLUSTER_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kubevirtci-dra-cpu"))
BUILD_SH = os.path.join(HERE, "build.sh")
SIM_MAIN = os.path.join(HERE, "sim", "main.py")
CHARTS_DIR = os.path.join(REPO, "tests", "fixtures", "charts", "dra-driver-cpu")
MARKER = ".dracpu-cluster"          # a state dir we own (and may wipe)
ID_ENV = "DRACPU_CLUSTER_ID"        # set in every child's environment: down finds stragglers by it
CHART_REPO = "dra-driver-cpu/charts"
CHART_NAME = "dra-driver-cpu"
SERVICE_CIDR = "10.96.0.0/16"
DEFAULT_NODE_CIDR = "10.213.0.0/16"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
T0 = time.monotonic()

# Knobs (docs/internals.md "Test cluster interface"); the defaults apply when a variable is unset.
KNOBS = {
    "CLUSTER_NODES": "1",
    "KUBEVIRT_NUM_VCPU": "12",
    "KUBEVIRT_NUM_NUMA_NODES": "2",
    "CLUSTER_K8S_VERSION": "v1.36.3",
    "CLUSTER_FEATURE_GATES": "",
    "CLUSTER_SIMULATE_DRIVER": "true",
    "CLUSTER_NODE_OVERRIDES": "",
    "CLUSTER_SLICE_DELETE_DELAY": "30",
}
# Passed through to the simulator as they are (besides the knobs above), when set.
SIM_PASSTHROUGH_PREFIXES = ("CLUSTER_SIM_", "SIM_", "KUBEVIRT_")

# Components in start order; down stops them in reverse.
ORDER = ["registry", "helm-mirror", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "sim"]


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


VETH_NS = "eth0"                          # name of the veth end inside the namespace


# ---------------------------------------------------------------------------------------------
# small helpers


def run(cmd, check=True, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(shlex.quote, cmd))} failed ({r.returncode}): {r.stderr.strip() or r.stdout.strip()}")
    return r


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


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


def wait_for(what, fn, timeout, interval=0.2, proc=None):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc and not proc_alive(proc):
            die(f"{what}: {proc} exited; last log lines:\n{tail(p('logs', proc + '.log'))}")
        try:
            if fn():
                return
        except Exception as e:  # noqa: BLE001 -- keep polling, remember the reason
            last = e
        time.sleep(interval)
    die(f"timed out after {timeout}s waiting for {what} (last error: {last})"
        + (f"; last log lines of {proc}:\n{tail(p('logs', proc + '.log'))}" if proc else ""))


def tail(path, n=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"


# ---------------------------------------------------------------------------------------------
# processes: each one detached in its own session (process group), pid file + start time


def proc_start_time(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def pidinfo(name):
    return read_json(p("pids", name + ".json"))


def proc_alive(name):
    info = pidinfo(name)
    if not info:
        return False
    st = proc_start_time(info["pid"])
    if st is None or st != info["start"]:
        return False
    try:
        with open(f"/proc/{info['pid']}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def spawn(name, cmd, env=None, cwd=None):
    os.makedirs(p("logs"), exist_ok=True)
    os.makedirs(p("pids"), exist_ok=True)
    full_env = dict(env if env is not None else os.environ)
    full_env[ID_ENV] = STATE
    logf = open(p("logs", name + ".log"), "ab")
    logf.write(f"\n==== {datetime.datetime.now().isoformat()} {' '.join(map(shlex.quote, cmd))}\n".encode())
    logf.flush()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                            env=full_env, cwd=cwd or STATE, start_new_session=True, close_fds=True)
    logf.close()
    info = {"pid": proc.pid, "start": proc_start_time(proc.pid), "cmd": cmd}
    write_file(p("pids", name + ".json"), json.dumps(info))
    # the child is detached; reap it if it dies while we are still running
    threading.Thread(target=proc.wait, daemon=True).start()
    return proc.pid


def kill_group(name, grace=5.0):
    info = pidinfo(name)
    if not info:
        return
    pid = info["pid"]
    if proc_start_time(pid) == info["start"]:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and proc_start_time(pid) == info["start"] and proc_alive(name):
            time.sleep(0.1)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.unlink(p("pids", name + ".json"))
    except OSError:
        pass


def stragglers():
    """Processes carrying this state dir's id in their environment (children that left the group)."""
    me = os.getpid()
    needle = f"{ID_ENV}={STATE}".encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(d))
        except OSError:
            continue
    return found


# ---------------------------------------------------------------------------------------------
# PKI (cryptography from the venv)


def gen_pki():
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    d = p("pki")
    os.makedirs(d, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=365)

    def save_key(key, name):
        write_file(os.path.join(d, name), key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()).decode(), 0o600)

    def save_cert(cert, name):
        write_file(os.path.join(d, name), cert.public_bytes(serialization.Encoding.PEM).decode())

    def name(cn, org=None):
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        if org:
            attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
        return x509.Name(attrs)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name(f"dracpu-test-ca-{short_hash()}")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(until + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    save_key(ca_key, "ca.key")
    save_cert(ca, "ca.crt")

    def leaf(fname, cn, org=None, server=False, sans=()):
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(name(cn, org)).issuer_name(ca_name)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now).not_valid_after(until)
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.ExtendedKeyUsage(
                 [ExtendedKeyUsageOID.SERVER_AUTH] if server else [ExtendedKeyUsageOID.CLIENT_AUTH]),
                 critical=False)
             .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                            critical=False))
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(s)) if s[0].isdigit() else x509.DNSName(s) for s in sans]),
                critical=False)
        save_key(key, fname + ".key")
        save_cert(b.sign(ca_key, hashes.SHA256()), fname + ".crt")

    leaf("apiserver", "kube-apiserver", server=True,
         sans=["127.0.0.1", "10.96.0.1", "localhost", "kubernetes", "kubernetes.default",
               "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"])
    leaf("apiserver-kubelet-client", "kube-apiserver-kubelet-client", org="system:masters")
    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    save_key(sa, "sa.key")
    write_file(os.path.join(d, "sa.pub"), sa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode())


def kubeconfig(server, token, user):
    with open(p("pki", "ca.crt"), "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "dracpu", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "dracpu", "context": {"cluster": "dracpu", "user": user}}],
        "current-context": "dracpu",
    }, sort_keys=False)


# ---------------------------------------------------------------------------------------------
# binaries


def binaries(k8s_version):
    """bin dirs from build.sh (a no-op when the cache holds them built with the current recipe)."""
    dirs = {}
    env = dict(os.environ, CLUSTER_K8S_VERSION=k8s_version, CLUSTER_CACHE_DIR=CACHE)
    for what in ("etcd", "helm", "kubernetes"):
        r = subprocess.run([BUILD_SH, what], stdout=subprocess.PIPE, env=env, text=True)
        if r.returncode != 0:
            die(f"build.sh {what} failed (exit {r.returncode})")
        dirs[what] = r.stdout.strip().splitlines()[-1]
    helm_v = os.path.basename(dirs["helm"])
    etcd_v = os.path.basename(dirs["etcd"])
    return dirs, helm_v, etcd_v


# ---------------------------------------------------------------------------------------------
# network namespace for the simulated kubelets


def pick_node_cidr():
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


def netns_up(cidr):
    ns, host = netns_name(), veth_host()
    net = ipaddress.ip_network(cidr)
    host_ip, ns_ip = net.network_address + 1, net.network_address + 2
    netns_down()
    run(["ip", "netns", "add", ns])
    run(["ip", "link", "add", host, "type", "veth", "peer", "name", VETH_NS, "netns", ns])
    run(["ip", "addr", "add", f"{host_ip}/{net.prefixlen}", "dev", host])
    run(["ip", "link", "set", host, "up"])
    run(["ip", "-n", ns, "addr", "add", f"{ns_ip}/{net.prefixlen}", "dev", VETH_NS])
    run(["ip", "-n", ns, "link", "set", VETH_NS, "up"])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])
    return str(host_ip), str(ns_ip)


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


# ---------------------------------------------------------------------------------------------
# OCI registry + charts, helm tarball mirror


def registry_config(port):
    storage = os.path.join(CACHE, "registry")
    os.makedirs(storage, exist_ok=True)
    cfg = {
        "version": 0.1,
        "log": {"level": "warn", "fields": {"service": "registry"}},
        "storage": {"filesystem": {"rootdirectory": storage}, "delete": {"enabled": True},
                    "cache": {"blobdescriptor": "inmemory"}},
        "http": {"addr": f"127.0.0.1:{port}", "headers": {"X-Content-Type-Options": ["nosniff"]}},
    }
    write_file(p("registry.yml"), yaml.safe_dump(cfg, sort_keys=False))
    return p("registry.yml")


def helm_env():
    return dict(os.environ, HELM_CACHE_HOME=p("helm", "cache"), HELM_CONFIG_HOME=p("helm", "config"),
                HELM_DATA_HOME=p("helm", "data"), HELM_REGISTRY_CONFIG=p("helm", "config", "registry.json"))


def tree_hash(d):
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(d)):
        dirs.sort()
        for fn in sorted(files):
            fp = os.path.join(root, fn)
            h.update(os.path.relpath(fp, d).encode() + b"\0")
            with open(fp, "rb") as f:
                h.update(f.read() + b"\0")
    return h.hexdigest()


def manifest_digest(registry, version):
    """The chart layer digest the registry holds for <version>, or None."""
    try:
        _, body = http_get(f"http://{registry}/v2/{CHART_REPO}/{CHART_NAME}/manifests/{version}",
                           accept="application/vnd.oci.image.manifest.v1+json")
        return json.loads(body)["layers"][0]["digest"]
    except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError):
        return None


def push_charts(helm, registry):
    """helm package + helm push every fixture chart version (skipped when the registry has it)."""
    pushed, skipped, problems = [], [], []
    if not os.path.isdir(CHARTS_DIR):
        return pushed, skipped, [f"{CHARTS_DIR} does not exist"]
    record_dir = os.path.join(CACHE, "registry-pushed")
    os.makedirs(record_dir, exist_ok=True)
    out = p("charts")
    os.makedirs(out, exist_ok=True)
    for version in sorted(os.listdir(CHARTS_DIR)):
        src = os.path.join(CHARTS_DIR, version)
        if not os.path.isfile(os.path.join(src, "Chart.yaml")):
            problems.append(f"{version}: no Chart.yaml yet, not pushed")
            continue
        h = tree_hash(src)
        record = os.path.join(record_dir, f"{version}.json")
        rec = read_json(record, {})
        have = manifest_digest(registry, version)
        if have and rec.get("tree") == h and rec.get("digest") == have:
            skipped.append(version)
            continue
        r = run([helm, "package", src, "-d", out], check=False, env=helm_env())
        if r.returncode != 0:
            problems.append(f"{version}: helm package failed: {r.stderr.strip()}")
            continue
        tgz = os.path.join(out, f"{CHART_NAME}-{version}.tgz")
        if not os.path.exists(tgz):
            problems.append(f"{version}: helm package did not write {tgz} (Chart.yaml name/version?)")
            continue
        with open(tgz, "rb") as f:
            digest = "sha256:" + hashlib.sha256(f.read()).hexdigest()
        if have == digest:
            skipped.append(version)
        else:
            r = run([helm, "push", tgz, f"oci://{registry}/{CHART_REPO}", "--plain-http"], check=False, env=helm_env())
            if r.returncode != 0:
                problems.append(f"{version}: helm push failed: {r.stderr.strip()}")
                continue
            pushed.append(version)
            digest = manifest_digest(registry, version) or digest
        write_file(record, json.dumps({"tree": h, "digest": digest}))
    return pushed, skipped, problems


def helm_tarball(helm_dir, helm_v):
    """<cache>/helm-mirror/helm-<v>-linux-amd64.tar.gz (+ .sha256sum), laid out like the official one."""
    d = os.path.join(CACHE, "helm-mirror")
    os.makedirs(d, exist_ok=True)
    name = f"helm-{helm_v}-linux-amd64.tar.gz"
    tgz, sumf = os.path.join(d, name), os.path.join(d, name + ".sha256sum")
    binary = os.path.join(helm_dir, "helm")
    if os.path.exists(sumf) and os.path.exists(tgz) and os.path.getmtime(tgz) >= os.path.getmtime(binary):
        return d
    mod = os.path.join(os.environ.get("GOMODCACHE") or os.path.expanduser("~/go/pkg/mod"), f"helm.sh/helm/v3@{helm_v}")
    members = [("linux-amd64/helm", binary, 0o755)]
    for extra in ("LICENSE", "README.md"):
        if os.path.exists(os.path.join(mod, extra)):
            members.append((f"linux-amd64/{extra}", os.path.join(mod, extra), 0o644))
    tmp = f"{tgz}.tmp.{os.getpid()}"
    with tarfile.open(tmp, "w:gz", compresslevel=6) as tar:
        dinfo = tarfile.TarInfo("linux-amd64")
        dinfo.type, dinfo.mode, dinfo.mtime = tarfile.DIRTYPE, 0o755, int(os.path.getmtime(binary))
        tar.addfile(dinfo)
        for arc, src, mode in members:
            ti = tar.gettarinfo(src, arc)
            ti.mode, ti.uid, ti.gid, ti.uname, ti.gname = mode, 0, 0, "", ""
            with open(src, "rb") as f:
                tar.addfile(ti, f)
    os.replace(tmp, tgz)
    with open(tgz, "rb") as f:
        write_file(sumf, f"{hashlib.sha256(f.read()).hexdigest()}  {name}\n")
    return d


# ---------------------------------------------------------------------------------------------
# the cluster


def requested_settings(current=None):
    """Knob values: explicitly set variables win, then what the running cluster uses, then defaults."""
    s = {}
    for k, default in KNOBS.items():
        if k in os.environ:
            s[k] = os.environ[k]
        elif current and k in current:
            s[k] = current[k]
        else:
            s[k] = default
    return s


def healthy(info):
    if not info:
        return False, "not started"
    for name in info.get("components", []):
        if not proc_alive(name):
            return False, f"{name} is not running"
    if not netns_exists():
        return False, f"network namespace {netns_name()} is missing"
    try:
        code, body = http_get(f"{info['apiserver']}/readyz", token=info["token"], cafile=p("pki", "ca.crt"))
        if code != 200:
            return False, f"apiserver /readyz: {code} {body[:200]!r}"
        http_get(f"http://{info['registry']}/v2/")
        http_get(f"{info['helm_mirror']}/")
    except (urllib.error.URLError, OSError) as e:
        return False, f"endpoint not answering: {e}"
    return True, "ok"


def env_lines(info):
    env = {
        "KUBECONFIG": p("kubeconfig"),
        "DRA_CPU_CHART": f"oci://{info['registry']}/{CHART_REPO}/{CHART_NAME}",
        "CLUSTER_REGISTRY": info["registry"],
        "CLUSTER_HELM_BINARY": info["helm_binary"],
        "CLUSTER_HELM_MIRROR": info["helm_mirror"],
        "CLUSTER_HELM_VERSION": info["helm_version"],
        "CLUSTER_APISERVER": info["apiserver"],
        "CLUSTER_APISERVER_METRICS": f"{info['apiserver']}/metrics",
        "CLUSTER_ADMIN_TOKEN": info["token"],
        "CLUSTER_CA_FILE": p("pki", "ca.crt"),
        "CLUSTER_STATE_DIR": STATE,
        "CLUSTER_NETNS": info["netns"],
        "CLUSTER_NODE_CIDR": info["node_cidr"],
        "CLUSTER_CHART_VERSIONS": " ".join(info.get("chart_versions", [])),
    }
    env.update(info["settings"])
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())


def cmd_up():
    if os.geteuid() != 0:
        die("the test cluster needs root (network namespace, veth)")
    for tool in ("ip",):
        if not shutil.which(tool):
            die(f"'{tool}' is missing: run hack/setup.sh (installs iproute2)")
    if not os.access("/usr/bin/docker-registry", os.X_OK):
        die("/usr/bin/docker-registry is missing: run hack/setup.sh (installs Debian's docker-registry)")

    info = read_json(p("cluster.json"))
    if info and info.get("components"):
        want = requested_settings(info.get("settings"))
        ok, why = healthy(info)
        changed = {k: (info["settings"].get(k), v) for k, v in want.items() if info["settings"].get(k) != v}
        if ok and not changed:
            if os.path.exists(SIM_MAIN) and "sim" not in info.get("components", []):
                log("the simulator exists now; restarting the cluster to run it")
            else:
                pushed, skipped, problems = push_charts(info["helm_binary"], info["registry"])
                info["chart_versions"] = sorted(set(info.get("chart_versions", [])) | set(pushed) | set(skipped))
                write_file(p("cluster.json"), json.dumps(info, indent=1))
                write_file(p("env"), env_lines(info))
                for pr in problems:
                    log(f"WARNING: chart {pr}")
                log("already up and healthy")
                sys.stdout.write(env_lines(info))
                return
        elif ok:
            log("settings changed (" + ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed.items())
                + "); recreating the cluster")
        else:
            log(f"existing cluster is not healthy ({why}); recreating it")
        settings = want
    else:
        settings = requested_settings()
    cmd_down(quiet=True)
    try:
        start(settings)
    except BaseException:
        if os.environ.get("CLUSTER_KEEP_ON_FAILURE") != "true":
            log(f"start failed: stopping what was started (logs in {p('logs')}; CLUSTER_KEEP_ON_FAILURE=true keeps it)")
            cmd_down(quiet=True)
        raise


def start(settings):
    k8s_v = settings["CLUSTER_K8S_VERSION"]
    gates = settings["CLUSTER_FEATURE_GATES"]
    nodes = int(settings["CLUSTER_NODES"])
    dirs, helm_v, etcd_v = binaries(k8s_v)
    helm = os.path.join(dirs["helm"], "helm")
    kbin = dirs["kubernetes"]

    # a fresh state dir (we only ever wipe one that we created)
    if os.path.isdir(STATE) and os.listdir(STATE) and not os.path.exists(p(MARKER)):
        die(f"{STATE} exists, is not empty and is not a test cluster state dir; refusing to use it")
    if os.path.isdir(STATE):
        keep_logs = p("logs")
        for e in os.listdir(STATE):
            if os.path.join(STATE, e) != keep_logs:
                fp = os.path.join(STATE, e)
                shutil.rmtree(fp) if os.path.isdir(fp) and not os.path.islink(fp) else os.unlink(fp)
        if os.path.isdir(keep_logs):
            prev = p("logs.prev")
            os.rename(keep_logs, prev)
            shutil.rmtree(prev)
    os.makedirs(STATE, exist_ok=True)
    write_file(p(MARKER), "state directory of tests/cluster/cluster.py; `cluster.py down` stops it\n")
    for d in ("logs", "pids", "etcd", "kcm", "scheduler"):
        os.makedirs(p(d), exist_ok=True)

    ports = {k: free_port() for k in ("etcd", "etcd-peer", "apiserver", "kcm", "scheduler", "registry", "mirror")}
    while len(set(ports.values())) != len(ports):
        ports = {k: free_port() for k in ports}
    registry = f"127.0.0.1:{ports['registry']}"
    info = {
        "settings": settings, "ports": ports, "registry": registry,
        "apiserver": f"https://127.0.0.1:{ports['apiserver']}",
        "helm_mirror": f"http://127.0.0.1:{ports['mirror']}",
        "helm_binary": helm, "helm_version": helm_v, "etcd_version": etcd_v, "k8s_version": k8s_v,
        "token": secrets.token_hex(24), "netns": netns_name(), "veth": veth_host(), "components": [],
    }

    # registry + helm mirror first: independent of the control plane, charts pushed in the background
    spawn("registry", ["/usr/bin/docker-registry", "serve", registry_config(ports["registry"])])
    info["components"] += ["registry", "helm-mirror"]
    chart_result = {}

    def charts():
        try:
            mirror_dir = helm_tarball(dirs["helm"], helm_v)
            spawn("helm-mirror", [sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                                  "--directory", mirror_dir, str(ports["mirror"])])
            wait_for("registry", lambda: http_get(f"http://{registry}/v2/")[0] == 200, 20, proc="registry")
            chart_result["r"] = push_charts(helm, registry)
        except SystemExit:
            chart_result["r"] = ([], [], ["registry did not come up"])
        except Exception as e:  # noqa: BLE001
            chart_result["r"] = ([], [], [f"push failed: {e}"])
    pusher = threading.Thread(target=charts)
    pusher.start()

    # network namespace for the simulated kubelets
    node_cidr = pick_node_cidr()
    host_ip, _ = netns_up(node_cidr)
    info["node_cidr"], info["host_ip"] = node_cidr, host_ip

    # etcd
    etcd_url = f"http://127.0.0.1:{ports['etcd']}"
    peer = f"http://127.0.0.1:{ports['etcd-peer']}"
    spawn("etcd", [os.path.join(dirs["etcd"], "etcd"), "--name", "default", "--data-dir", p("etcd"),
                   "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
                   "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                   "--initial-cluster", f"default={peer}", "--initial-cluster-state", "new",
                   "--unsafe-no-fsync", "--log-level", "warn"])
    info["components"].append("etcd")

    # PKI, tokens, kubeconfigs (while etcd starts)
    gen_pki()
    tokens = {"admin": info["token"], "kcm": secrets.token_hex(24), "scheduler": secrets.token_hex(24)}
    write_file(p("pki", "tokens.csv"),
               f'{tokens["admin"]},admin,admin-uid,"system:masters"\n'
               f'{tokens["kcm"]},system:kube-controller-manager,kcm-uid\n'
               f'{tokens["scheduler"]},system:kube-scheduler,scheduler-uid\n', 0o600)
    write_file(p("kubeconfig"), kubeconfig(info["apiserver"], tokens["admin"], "admin"), 0o600)
    write_file(p("kcm.kubeconfig"), kubeconfig(info["apiserver"], tokens["kcm"], "system:kube-controller-manager"), 0o600)
    write_file(p("scheduler.kubeconfig"), kubeconfig(info["apiserver"], tokens["scheduler"], "system:kube-scheduler"), 0o600)
    write_file(p("scheduler.yaml"), yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": p("scheduler.kubeconfig"), "qps": 200, "burst": 400},
        "leaderElection": {"leaderElect": False},
    }, sort_keys=False))
    gate_args = [f"--feature-gates={gates}"] if gates else []
    wait_for("etcd", lambda: json.loads(http_get(f"{etcd_url}/health")[1]).get("health") == "true", 20, proc="etcd")
    log(f"etcd {etcd_v} ready on {etcd_url}")

    # kube-apiserver
    pki = p("pki")
    spawn("kube-apiserver", [
        os.path.join(kbin, "kube-apiserver"),
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1", f"--secure-port={ports['apiserver']}", f"--advertise-address={host_ip}",
        f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key",
        f"--client-ca-file={pki}/ca.crt", f"--token-auth-file={pki}/tokens.csv",
        "--authorization-mode=Node,RBAC", "--anonymous-auth=true",
        f"--service-account-issuer={SA_ISSUER}", f"--service-account-key-file={pki}/sa.pub",
        f"--service-account-signing-key-file={pki}/sa.key",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={pki}/apiserver-kubelet-client.crt",
        f"--kubelet-client-key={pki}/apiserver-kubelet-client.key",
        "--runtime-config=resource.k8s.io/v1=true",
        "--enable-admission-plugins=NodeRestriction",   # on top of the defaults (PodSecurity, ...)
        "--max-requests-inflight=800", "--max-mutating-requests-inflight=400",
        "--profiling=false", "--v=1",
    ] + gate_args + audit_args())
    info["components"].append("kube-apiserver")
    write_file(p("cluster.json"), json.dumps(info, indent=1))   # so `down` works even if we fail below

    def api_ok(path="/readyz"):
        return http_get(f"{info['apiserver']}{path}", token=tokens["admin"], cafile=p("pki", "ca.crt"))[0] == 200
    wait_for("kube-apiserver /healthz", lambda: api_ok("/healthz"), 60, proc="kube-apiserver")
    log("kube-apiserver healthy; starting kube-controller-manager and kube-scheduler")

    # controller manager + scheduler
    spawn("kube-controller-manager", [
        os.path.join(kbin, "kube-controller-manager"),
        f"--kubeconfig={p('kcm.kubeconfig')}",
        "--bind-address=127.0.0.1", f"--secure-port={ports['kcm']}", f"--cert-dir={p('kcm')}",
        f"--service-account-private-key-file={pki}/sa.key", f"--root-ca-file={pki}/ca.crt",
        f"--cluster-signing-cert-file={pki}/ca.crt", f"--cluster-signing-key-file={pki}/ca.key",
        "--controllers=*", "--use-service-account-credentials=true", "--leader-elect=false",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--kube-api-qps=200", "--kube-api-burst=400", "--v=1",
    ] + gate_args)
    spawn("kube-scheduler", [
        os.path.join(kbin, "kube-scheduler"), f"--config={p('scheduler.yaml')}",
        "--bind-address=127.0.0.1", f"--secure-port={ports['scheduler']}", f"--cert-dir={p('scheduler')}",
        "--v=1",
    ] + gate_args)
    info["components"] += ["kube-controller-manager", "kube-scheduler"]
    write_file(p("cluster.json"), json.dumps(info, indent=1))
    wait_for("kube-apiserver /readyz", api_ok, 60, proc="kube-apiserver")
    log("kube-apiserver ready")

    def has(path):
        try:
            return http_get(f"{info['apiserver']}{path}", token=tokens["admin"], cafile=p("pki", "ca.crt"))[0] == 200
        except urllib.error.HTTPError:
            return False
    wait_for("the default namespace", lambda: has("/api/v1/namespaces/default"), 30, proc="kube-apiserver")
    wait_for("the default service account", lambda: has("/api/v1/namespaces/default/serviceaccounts/default"),
             60, proc="kube-controller-manager")
    log(f"control plane ready: {info['apiserver']} (Kubernetes {k8s_v}, etcd {etcd_v})")

    # simulator
    if os.path.exists(SIM_MAIN):
        env = dict(os.environ)
        env.update(settings)
        env.update({"KUBECONFIG": p("kubeconfig"), "CLUSTER_STATE_DIR": STATE, "CLUSTER_NETNS": netns_name(),
                    "CLUSTER_NETNS_IFACE": VETH_NS, "CLUSTER_NODE_CIDR": node_cidr, "CLUSTER_HOST_IP": host_ip,
                    "CLUSTER_CA_CERT": p("pki", "ca.crt"), "CLUSTER_CA_KEY": p("pki", "ca.key"),
                    "PYTHONPATH": REPO + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
                    "PYTHONUNBUFFERED": "1"})
        spawn("sim", [sys.executable, os.path.abspath(__file__), "_supervise", "sim", "--",
                      sys.executable, SIM_MAIN], env=env, cwd=REPO)
        info["components"].append("sim")
        write_file(p("cluster.json"), json.dumps(info, indent=1))
        timeout = float(os.environ.get("CLUSTER_UP_TIMEOUT") or (120 + 0.3 * nodes))
        wait_for(f"{nodes} Ready node(s)", lambda: ready_nodes(info) >= nodes, timeout, interval=0.5, proc="sim")
        log(f"{nodes} simulated node(s) Ready")
    else:
        log(f"WARNING: {SIM_MAIN} does not exist yet: no simulated nodes")

    pusher.join()
    pushed, skipped, problems = chart_result.get("r", ([], [], ["chart push did not finish"]))
    wait_for("helm mirror", lambda: http_get(f"{info['helm_mirror']}/")[0] == 200, 20, proc="helm-mirror")
    info["chart_versions"] = sorted(pushed + skipped)
    for pr in problems:
        log(f"WARNING: chart {pr}")
    log(f"charts in {registry}: pushed {pushed or 'none'}, already there {skipped or 'none'}")
    write_file(p("cluster.json"), json.dumps(info, indent=1))
    write_file(p("env"), env_lines(info))
    log(f"up in {time.monotonic() - T0:.1f}s; chart oci://{registry}/{CHART_REPO}/{CHART_NAME}, "
        f"registry {registry}; `source {p('env')}`")
    sys.stdout.write(env_lines(info))


AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
"""


def audit_args():
    """CLUSTER_AUDIT_LOG=true: every write (create/update/patch/delete) goes to <state>/logs/audit.log
    at Metadata level (user, verb, resource, user agent), for tests that count writes."""
    if os.environ.get("CLUSTER_AUDIT_LOG") != "true":
        return []
    write_file(p("audit-policy.yaml"), AUDIT_POLICY)
    return [f"--audit-policy-file={p('audit-policy.yaml')}", f"--audit-log-path={p('logs', 'audit.log')}",
            "--audit-log-format=json", "--audit-log-mode=blocking"]


def cmd_restart_apiserver(down_seconds=0.0):
    """Kill kube-apiserver (the whole process group), wait, start it with the same command line."""
    info = read_json(p("cluster.json"))
    pinfo = pidinfo("kube-apiserver")
    if not info or not pinfo:
        die("no kube-apiserver recorded in this state dir: is the cluster up?", 3)
    cmd = pinfo["cmd"]
    t0 = time.monotonic()
    kill_group("kube-apiserver", grace=0.5)
    log(f"kube-apiserver killed; down for {down_seconds:g}s")
    time.sleep(down_seconds)
    spawn("kube-apiserver", cmd)

    def ready():
        try:
            return http_get(f"{info['apiserver']}/readyz", token=info["token"], cafile=p("pki", "ca.crt"))[0] == 200
        except (urllib.error.URLError, OSError):
            return False
    wait_for("kube-apiserver /readyz", ready, 90, proc="kube-apiserver")
    log(f"kube-apiserver ready again after {time.monotonic() - t0:.1f}s")


def ready_nodes(info):
    _, body = http_get(f"{info['apiserver']}/api/v1/nodes", token=info["token"], cafile=p("pki", "ca.crt"), timeout=10)
    n = 0
    for node in json.loads(body).get("items", []):
        for c in node.get("status", {}).get("conditions", []):
            if c.get("type") == "Ready" and c.get("status") == "True":
                n += 1
    return n


def cmd_supervise(name, cmd):
    """Runs cmd, restarts it when it exits (backoff up to 30 s); stops it on SIGTERM."""
    child = None

    def stop(signum, _frame):
        if child and child.poll() is None:
            child.terminate()
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    backoff = 1
    while True:
        started = time.monotonic()
        child = subprocess.Popen(cmd)
        rc = child.wait()
        if time.monotonic() - started > 60:
            backoff = 1
        print(f"[supervise] {name} exited with {rc}; restarting in {backoff}s", flush=True)
        time.sleep(backoff)
        backoff = min(backoff * 2, 30)


def cmd_down(quiet=False):
    info = read_json(p("cluster.json"), {})
    names = [n for n in ORDER if os.path.exists(p("pids", n + ".json"))]
    for name in reversed(ORDER):
        if name in names:
            kill_group(name)
            if not quiet:
                log(f"stopped {name}")
    for _ in range(3):
        left = stragglers()
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    netns_down()
    if info:
        info["components"] = []
        write_file(p("cluster.json"), json.dumps(info, indent=1))
        try:
            os.unlink(p("env"))
        except OSError:
            pass
    if os.path.isdir(p("etcd")):
        shutil.rmtree(p("etcd"), ignore_errors=True)
    if not quiet:
        log(f"down (state {STATE}; logs kept in {p('logs')}; cache {CACHE} kept)")


def cmd_status():
    info = read_json(p("cluster.json"))
    if not info or not info.get("components"):
        print(f"cluster: down (state {STATE})")
        extra = [n for n in ORDER if proc_alive(n)]
        if extra or netns_exists() or veth_exists():
            print(f"  leftovers: processes {extra}, netns {netns_exists()}, veth {veth_exists()}: run `cluster.py down`")
            return 1
        return 3
    ok, why = healthy(info)
    print(f"cluster: {'up' if ok else 'DEGRADED: ' + why} (state {STATE}, Kubernetes {info['k8s_version']})")
    for name in info["components"]:
        pi = pidinfo(name) or {}
        print(f"  {name:24} {'running' if proc_alive(name) else 'NOT RUNNING':12} pid {pi.get('pid', '-')}"
              f"  log {p('logs', name + '.log')}")
    print(f"  apiserver  {info['apiserver']}")
    print(f"  registry   {info['registry']}  charts {' '.join(info.get('chart_versions', [])) or '-'}")
    print(f"  helm mirror {info['helm_mirror']}")
    print(f"  netns      {info['netns']} ({'present' if netns_exists() else 'MISSING'}), veth {info['veth']}, "
          f"nodes {info['node_cidr']}")
    try:
        print(f"  nodes      {ready_nodes(info)} Ready of {info['settings']['CLUSTER_NODES']} wanted")
    except (urllib.error.URLError, OSError, ValueError) as e:
        print(f"  nodes      ? ({e})")
    print(f"  export KUBECONFIG={p('kubeconfig')}")
    return 0 if ok else 1


def cmd_env():
    try:
        with open(p("env")) as f:
            sys.stdout.write(f.read())
    except OSError:
        die(f"no {p('env')}: the cluster is not up (run `cluster.py up`)", 3)


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cmd = argv[0]
    if cmd == "up":
        cmd_up()
    elif cmd == "down":
        cmd_down()
    elif cmd == "status":
        return cmd_status()
    elif cmd == "env":
        cmd_env()
    elif cmd == "restart-apiserver":
        cmd_restart_apiserver(float(argv[1]) if len(argv) > 1 else 0.0)
    elif cmd == "_supervise":
        cmd_supervise(argv[1], argv[argv.index("--") + 1:])
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
