"""The OCI registry, the charts pushed into it, and the helm tarball mirror.

Owns: the docker-registry config (storage in <cache>/registry), helm's private dirs under <state>/helm,
`helm push` of every chart version chart_sources.py names (skipped when the registry already holds the
same sources, recorded in <cache>/registry-pushed), and the helm tarball + .sha256sum in <cache>/helm-mirror.
Must not: start the registry or the mirror (cluster_control_plane.py does), nor change the fixture charts.
"""
import hashlib
import json
import os
import tarfile
import urllib.error

import yaml

from chart_sources import chart_sources
from cluster_state import CACHE, CHART_NAME, CHART_REPO, http_get, p, read_json, run, write_file

def registry_config(port, addr="127.0.0.1"):
    storage = os.path.join(CACHE, "registry")
    os.makedirs(storage, exist_ok=True)
    cfg = {
        "version": 0.1,
        "log": {"level": "warn", "fields": {"service": "registry"}},
        "storage": {"filesystem": {"rootdirectory": storage}, "delete": {"enabled": True},
                    "cache": {"blobdescriptor": "inmemory"}},
        "http": {"addr": f"{addr}:{port}", "headers": {"X-Content-Type-Options": ["nosniff"]}},
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
    """helm push every chart version of chart_sources() (skipped when the registry has it): upstream's own
    0.2.0 as its release packages it, a fixture through `helm package`."""
    pushed, skipped, problems = [], [], []
    try:
        sources = chart_sources()
    except RuntimeError as e:
        return pushed, skipped, [str(e)]
    record_dir = os.path.join(CACHE, "registry-pushed")
    os.makedirs(record_dir, exist_ok=True)
    out = p("charts")
    os.makedirs(out, exist_ok=True)
    for version, src in sources.items():
        if os.path.isdir(src) and not os.path.isfile(os.path.join(src, "Chart.yaml")):
            problems.append(f"{version}: no Chart.yaml yet, not pushed")
            continue
        h = tree_hash(src) if os.path.isdir(src) else file_hash(src)
        record = os.path.join(record_dir, f"{version}.json")
        rec = read_json(record, {})
        have = manifest_digest(registry, version)
        if have and rec.get("tree") == h and rec.get("digest") == have:
            skipped.append(version)
            continue
        tgz = src
        if os.path.isdir(src):
            r = run([helm, "package", src, "-d", out], check=False, env=helm_env())
            if r.returncode != 0:
                problems.append(f"{version}: helm package failed: {r.stderr.strip()}")
                continue
            tgz = os.path.join(out, f"{CHART_NAME}-{version}.tgz")
            if not os.path.exists(tgz):
                problems.append(f"{version}: helm package did not write {tgz} (Chart.yaml name/version?)")
                continue
        digest = "sha256:" + file_hash(tgz)
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


def file_hash(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


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
