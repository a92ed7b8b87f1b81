"""The charts the test registry serves rendered by the real helm: upstream's own 0.2.0 (chart_sources.py,
the Go module proxy's v0.2.0) and the 0.3.0 fixture (tests/fixtures/charts/dra-driver-cpu/0.3.0). On
0.2.0 the assertions are what the role and the fixture take from upstream's chart, checked on it.

No cluster needed: `helm lint` and `helm template` only. The helm binary is the one the test
cluster uses: $CLUSTER_HELM_BINARY, else the build cache of tests/cluster/build.sh, else `helm`
on PATH; the module is skipped (with the reason) when none exists.

Nodes: none.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from chart_sources import chart_dir

REPO = Path(__file__).resolve().parents[2]
CHARTS = REPO / "tests" / "fixtures" / "charts" / "dra-driver-cpu"


def src(version):
    """Chart <version>'s sources: upstream's own 0.2.0, else the fixture."""
    return Path(chart_dir(version))

VERSIONS = ("0.2.0", "0.3.0")
HELM_VERSION = "v3.22.0"
KUBE_VERSION = "1.36.3"
NAMESPACE = "dra-driver-cpu"
RELEASE = "dra-driver-cpu"


def _find_helm():
    env = os.environ.get("CLUSTER_HELM_BINARY")
    if env:
        return env if os.access(env, os.X_OK) else None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cached = cache / "kubevirtci-dra-cpu" / "helm" / HELM_VERSION / "helm"
    if cached.is_file() and os.access(cached, os.X_OK):
        return str(cached)
    return shutil.which("helm")


@pytest.fixture(scope="module")
def helm():
    path = _find_helm()
    if not path:
        pytest.skip(
            "no helm binary: set CLUSTER_HELM_BINARY, build it with `tests/cluster/build.sh helm` "
            f"(-> ${{XDG_CACHE_HOME:-~/.cache}}/kubevirtci-dra-cpu/helm/{HELM_VERSION}/helm), "
            "or put helm on PATH"
        )
    return path


def _run(helm, args, tmp_path, values=None):
    cmd = [helm, *args]
    if values is not None:
        vfile = tmp_path / f"values-{len(list(tmp_path.iterdir()))}.yaml"
        vfile.write_text(yaml.safe_dump(values))
        cmd += ["-f", str(vfile)]
    env = dict(os.environ, HELM_CACHE_HOME=str(tmp_path / "cache"),
               HELM_CONFIG_HOME=str(tmp_path / "config"), HELM_DATA_HOME=str(tmp_path / "data"))
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


def template(helm, tmp_path, version, values=None, release=RELEASE, ok=True):
    """`helm template`; returns {(kind, name): object} or, with ok=False, the failed result."""
    res = _run(helm, ["template", release, str(src(version)), "--namespace", NAMESPACE,
                      "--kube-version", KUBE_VERSION], tmp_path, values)
    if not ok:
        assert res.returncode != 0, f"helm template unexpectedly succeeded:\n{res.stdout}"
        return res
    assert res.returncode == 0, res.stderr
    objs = {}
    for doc in yaml.safe_load_all(res.stdout):
        if doc:
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in objs, f"duplicate object {key}"
            objs[key] = doc
    return objs


def daemonset(objs, name=RELEASE):
    return objs[("DaemonSet", name)]


def container(objs, name=RELEASE):
    (c,) = daemonset(objs, name)["spec"]["template"]["spec"]["containers"]
    return c


def args(objs, name=RELEASE):
    return container(objs, name)["args"]


def config_yaml(objs, name=RELEASE):
    cm = objs[("ConfigMap", f"{name}-config")]
    return yaml.safe_load(cm["data"]["config.yaml"])


# --------------------------------------------------------------------------- both versions

@pytest.mark.parametrize("version", VERSIONS)
def test_lint(helm, tmp_path, version):
    res = _run(helm, ["lint", "--strict", "--kube-version", KUBE_VERSION, str(src(version))],
               tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_chart_metadata(helm, tmp_path, version):
    res = _run(helm, ["show", "chart", str(src(version))], tmp_path)
    assert res.returncode == 0, res.stderr
    meta = yaml.safe_load(res.stdout)
    assert meta["apiVersion"] == "v2"
    assert meta["name"] == "dra-driver-cpu"
    assert meta["version"] == version
    assert meta["appVersion"] == f"v{version}"
    assert meta["kubeVersion"] == ">= 1.34.0-0"


@pytest.mark.parametrize("version", VERSIONS)
def test_kube_version_constraint(helm, tmp_path, version):
    res = _run(helm, ["template", RELEASE, str(src(version)), "--kube-version", "1.33.5"],
               tmp_path)
    assert res.returncode != 0
    assert "kubeVersion" in res.stderr or "incompatible" in res.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_default_objects(helm, tmp_path, version):
    objs = template(helm, tmp_path, version)
    assert set(objs) == {
        ("DaemonSet", RELEASE), ("ServiceAccount", RELEASE), ("ClusterRole", RELEASE),
        ("ClusterRoleBinding", RELEASE), ("DeviceClass", "dra.cpu"),
    }
    for (kind, _), obj in objs.items():
        if kind in ("DaemonSet", "ServiceAccount"):
            assert obj["metadata"]["namespace"] == NAMESPACE
        else:
            assert "namespace" not in obj["metadata"]


@pytest.mark.parametrize("version", VERSIONS)
def test_daemonset_shape(helm, tmp_path, version):
    objs = template(helm, tmp_path, version)
    ds = daemonset(objs)
    assert ds["apiVersion"] == "apps/v1"
    selector = ds["spec"]["selector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/name": "dra-driver-cpu",
                        "app.kubernetes.io/instance": RELEASE}
    pod = ds["spec"]["template"]
    labels = pod["metadata"]["labels"]
    for k, v in {**selector, "tier": "node", "k8s-app": "dra-driver-cpu",
                 "app.kubernetes.io/version": f"v{version}",
                 "app.kubernetes.io/managed-by": "Helm"}.items():
        assert labels[k] == v
        assert ds["metadata"]["labels"][k] == v
    spec = pod["spec"]
    assert spec["hostNetwork"] is True
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["serviceAccountName"] == RELEASE
    assert spec["tolerations"] == [{"operator": "Exists", "effect": "NoSchedule"}]
    assert "nodeSelector" not in spec and "affinity" not in spec
    c = container(objs)
    assert c["name"] == "dracpu"
    repo = ("registry.k8s.io/dra-driver-cpu/dra-driver-cpu" if version == "0.3.0"
            else "us-central1-docker.pkg.dev/k8s-staging-images/dra-driver-cpu/dra-driver-cpu")
    assert c["image"] == f"{repo}:v{version}"
    assert c["ports"] == [{"name": "healthz", "containerPort": 8080}]
    for probe in ("livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"] == {"path": "/healthz", "port": "healthz"}
    assert c["resources"] == {"requests": {"cpu": "100m", "memory": "50Mi"}}
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts == {"device-plugin": "/var/lib/kubelet/plugins",
                      "plugin-registry": "/var/lib/kubelet/plugins_registry",
                      "nri-plugin": "/var/run/nri", "cdi-dir": "/var/run/cdi"}
    vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    assert vols == mounts


@pytest.mark.parametrize("version", VERSIONS)
def test_rbac_and_deviceclass(helm, tmp_path, version):
    objs = template(helm, tmp_path, version)
    rules = objs[("ClusterRole", RELEASE)]["rules"]
    granted = {}
    for r in rules:
        for group in r["apiGroups"]:
            for res in r["resources"]:
                granted.setdefault((group, res), set()).update(r["verbs"])
    assert granted[("", "nodes")] >= {"get"}
    assert granted[("resource.k8s.io", "resourceslices")] >= {
        "list", "watch", "create", "update", "delete"}
    assert granted[("resource.k8s.io", "resourceclaims")] >= {"get"}
    assert granted[("resource.k8s.io", "deviceclasses")] >= {"get"}
    assert granted[("resource.k8s.io", "resourceclaims/status")] >= {"patch", "update"}
    assert granted[("", "pods")] >= {"get", "list", "watch"}
    crb = objs[("ClusterRoleBinding", RELEASE)]
    assert crb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                              "name": RELEASE}
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": RELEASE,
                                "namespace": NAMESPACE}]
    dc = objs[("DeviceClass", "dra.cpu")]
    assert dc["apiVersion"] == "resource.k8s.io/v1"
    assert dc["spec"]["selectors"] == [{"cel": {"expression": 'device.driver == "dra.cpu"'}}]

    objs = template(helm, tmp_path, version, {"rbac": {"create": False}})
    assert ("ClusterRole", RELEASE) not in objs and ("ClusterRoleBinding", RELEASE) not in objs
    assert ("ServiceAccount", RELEASE) in objs


@pytest.mark.parametrize("version", VERSIONS)
def test_names(helm, tmp_path, version):
    # upstream's fullname rule: the release name when it contains the chart name,
    # else "<release>-dra-driver-cpu"; fullnameOverride replaces it.
    objs = template(helm, tmp_path, version, release="my-dra-driver-cpu")
    assert ("DaemonSet", "my-dra-driver-cpu") in objs
    objs = template(helm, tmp_path, version, release="dracpu")
    assert ("DaemonSet", "dracpu-dra-driver-cpu") in objs
    assert ("ClusterRole", "dracpu-dra-driver-cpu") in objs
    objs = template(helm, tmp_path, version, {"fullnameOverride": "cpu-driver"}, release="x")
    names = {n for k, n in objs if k != "DeviceClass"}
    assert names == {"cpu-driver"}
    assert daemonset(objs, "cpu-driver")["spec"]["selector"]["matchLabels"][
        "app.kubernetes.io/instance"] == "x"
    objs = template(helm, tmp_path, version, {"nameOverride": "cpu"}, release="r")
    ds = daemonset(objs, "r-cpu")
    assert ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == "cpu"
    assert ds["spec"]["template"]["metadata"]["labels"]["k8s-app"] == "cpu"


@pytest.mark.parametrize("version", VERSIONS)
def test_pod_metadata_and_image_values(helm, tmp_path, version):
    values = {"podLabels": {"extra": "yes"}, "podAnnotations": {"note": "hi"},
              "serviceAccount": {"annotations": {"sa": "1"}},
              "image": {"repository": "127.0.0.1:5000/dracpu", "tag": "dev",
                        "pullPolicy": "Never"},
              "imagePullSecrets": [{"name": "pull"}],
              "healthzPort": 9177, "healthzPath": "/livez",
              "tolerations": [{"operator": "Exists"}],
              "resources": {"requests": {"cpu": "50m"}, "limits": {"memory": "1Gi"}}}
    objs = template(helm, tmp_path, version, values)
    pod = daemonset(objs)["spec"]["template"]
    assert pod["metadata"]["labels"]["extra"] == "yes"
    assert pod["metadata"]["annotations"]["note"] == "hi"
    assert objs[("ServiceAccount", RELEASE)]["metadata"]["annotations"] == {"sa": "1"}
    assert pod["spec"]["imagePullSecrets"] == [{"name": "pull"}]
    assert pod["spec"]["tolerations"] == [{"operator": "Exists"}]
    c = container(objs)
    assert c["image"] == "127.0.0.1:5000/dracpu:dev"
    assert c["imagePullPolicy"] == "Never"
    assert c["ports"] == [{"name": "healthz", "containerPort": 9177}]
    assert c["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert "--bind-address=:9177" in c["args"]
    assert c["resources"]["requests"]["cpu"] == "50m"
    assert c["resources"]["limits"] == {"memory": "1Gi"}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("bad", [
    {"args": {"bogus": 1}},
    {"args": {"reservedCpus": "0-1"}},
    {"args": {"groupBy": "core"}},
    {"args": {"cpuDeviceMode": "shared"}},
    {"args": {"logLevel": -1}},
    {"args": {"logLevel": "4"}},
    {"image": {"registry": "x"}},
    {"image": {"pullPolicy": "Sometimes"}},
    {"rbac": {"enabled": True}},
    {"rbac": {"create": "yes"}},
    {"resources": {"requests": {"gpu": "1"}}},
    {"resources": {"claims": []}},
    {"healthzPort": 0},
    {"tolerations": [{"operator": "Exists", "effect": "Sometimes"}]},
])
def test_schema_rejects(helm, tmp_path, version, bad):
    res = template(helm, tmp_path, version, bad, ok=False)
    assert "schema" in res.stderr.lower(), res.stderr


# --------------------------------------------------------------------------- 0.2.0

def test_020_default_args(helm, tmp_path):
    objs = template(helm, tmp_path, "0.2.0")
    assert args(objs) == ["/dracpu", "--v=4", "--cpu-device-mode=grouped",
                          "--group-by=numanode", "--bind-address=:8080"]
    assert container(objs)["securityContext"]["capabilities"]["add"] == ["NET_ADMIN", "SYS_ADMIN"]


def test_020_args_from_values(helm, tmp_path):
    objs = template(helm, tmp_path, "0.2.0", {"args": {
        "logLevel": 2, "cpuDeviceMode": "individual", "groupBy": "socket",
        "reservedCPUs": "0-1,8", "hostnameOverride": "node01", "exposePCIeRoots": True}})
    assert args(objs) == ["/dracpu", "--v=2", "--cpu-device-mode=individual",
                          "--group-by=socket", "--bind-address=:8080",
                          "--reserved-cpus=0-1,8", "--hostname-override=node01",
                          "--expose-pcie-roots"]


def test_020_has_no_config_nor_placement(helm, tmp_path):
    # 0.2.0 has no nodeSelector/affinity/driverConfig values; the schema allows unknown
    # top-level keys (as upstream), so they are accepted and simply not rendered.
    objs = template(helm, tmp_path, "0.2.0", {
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["n1"]}]}]}}},
        "driverConfig": {"reservedCPUs": "0-1"},
        "kubeletRootDir": "/data/kubelet",
    })
    spec = daemonset(objs)["spec"]["template"]["spec"]
    assert "nodeSelector" not in spec and "affinity" not in spec
    assert not any(k == "ConfigMap" for k, _ in objs)
    assert not any(a.startswith(("--config", "--reserved-cpus", "--kubelet-root-dir"))
                   for a in args(objs))
    # and 0.2.0 does not know the 0.3.0 empty-string defaults of args.*
    template(helm, tmp_path, "0.2.0", {"args": {"groupBy": ""}}, ok=False)


# --------------------------------------------------------------------------- 0.3.0

def test_030_default_args_no_config(helm, tmp_path):
    objs = template(helm, tmp_path, "0.3.0")
    assert args(objs) == ["/dracpu", "--v=4", "--bind-address=:8080",
                          "--expose-pcie-roots=false"]
    assert not any(k == "ConfigMap" for k, _ in objs)
    pod = daemonset(objs)["spec"]["template"]
    assert "driver-config" not in {v["name"] for v in pod["spec"]["volumes"]}
    assert not (pod["metadata"].get("annotations") or {})
    assert "securityContext" not in container(objs)


def test_030_driver_config(helm, tmp_path):
    objs = template(helm, tmp_path, "0.3.0", {"driverConfig": {
        "reservedCPUs": "0-1", "groupBy": "numanode"}})
    assert config_yaml(objs) == {"reservedCPUs": "0-1", "groupBy": "numanode"}
    cm = objs[("ConfigMap", f"{RELEASE}-config")]
    assert cm["metadata"]["namespace"] == NAMESPACE
    assert args(objs) == ["/dracpu", "--v=4", "--bind-address=:8080",
                          "--expose-pcie-roots=false", "--config=/etc/dracpu/config.yaml"]
    pod = daemonset(objs)["spec"]["template"]
    mount = [m for m in container(objs)["volumeMounts"] if m["name"] == "driver-config"]
    assert mount == [{"name": "driver-config", "mountPath": "/etc/dracpu", "readOnly": True}]
    vol = [v for v in pod["spec"]["volumes"] if v["name"] == "driver-config"]
    assert vol == [{"name": "driver-config", "configMap": {"name": f"{RELEASE}-config"}}]
    assert pod["metadata"]["annotations"]["checksum/config"]


def test_030_driver_config_all_fields(helm, tmp_path):
    cfg = {"apiVersion": "v1alpha1", "cpuDeviceMode": "individual", "groupBy": "socket",
           "reservedCPUs": "0,2-3", "hostnameOverride": "node07", "kubeconfig": "/k",
           "publishNodeAllocatableResourceMapping": True, "sysfsOverlay": "/sys-overlay"}
    objs = template(helm, tmp_path, "0.3.0", {"driverConfig": cfg})
    assert config_yaml(objs) == cfg
    assert "--config=/etc/dracpu/config.yaml" in args(objs)
    # the config file is a flat map, keys sorted, no kind
    text = objs[("ConfigMap", f"{RELEASE}-config")]["data"]["config.yaml"]
    keys = [line.split(":")[0] for line in text.splitlines() if line]
    assert keys == sorted(cfg)


def test_030_args_override_driver_config(helm, tmp_path):
    objs = template(helm, tmp_path, "0.3.0", {
        "driverConfig": {"reservedCPUs": "0-1", "groupBy": "numanode",
                         "cpuDeviceMode": "grouped", "hostnameOverride": "a"},
        "args": {"reservedCPUs": "0-3", "groupBy": "socket", "cpuDeviceMode": "individual",
                 "hostnameOverride": "b"}})
    assert config_yaml(objs) == {"reservedCPUs": "0-3", "groupBy": "socket",
                                 "cpuDeviceMode": "individual", "hostnameOverride": "b"}
    # the deprecated args.* never become flags in 0.3.0 (upstream folds them into the file)
    assert not any(a.startswith(("--reserved-cpus", "--group-by", "--cpu-device-mode",
                                 "--hostname-override")) for a in args(objs))

    # only the args.* that are set win; the others come from driverConfig
    objs = template(helm, tmp_path, "0.3.0", {
        "driverConfig": {"reservedCPUs": "0-1", "groupBy": "numanode"},
        "args": {"groupBy": "machine"}})
    assert config_yaml(objs) == {"reservedCPUs": "0-1", "groupBy": "machine"}


def test_030_deprecated_args_alone_make_a_config(helm, tmp_path):
    objs = template(helm, tmp_path, "0.3.0", {"args": {"reservedCPUs": "0-1"}})
    assert config_yaml(objs) == {"reservedCPUs": "0-1"}
    assert args(objs)[-1] == "--config=/etc/dracpu/config.yaml"


def test_030_config_change_rolls_pods(helm, tmp_path):
    def checksum(values):
        objs = template(helm, tmp_path, "0.3.0", values)
        return daemonset(objs)["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    a = checksum({"driverConfig": {"reservedCPUs": "0-1"}})
    assert a == checksum({"driverConfig": {"reservedCPUs": "0-1"}})
    assert a != checksum({"driverConfig": {"reservedCPUs": "0-3"}})


@pytest.mark.parametrize("bad", [
    {"driverConfig": {"bogus": True}},
    {"driverConfig": {"reservedCpus": "0-1"}},
    {"driverConfig": {"kind": "DriverConfig"}},
    {"driverConfig": {"bindAddress": ":8081"}},
    {"driverConfig": {"exposePCIeRoots": True}},
    {"driverConfig": {"kubeletRootDir": "/var/lib/kubelet"}},
    {"driverConfig": {"apiVersion": "v1"}},
    {"driverConfig": {"groupBy": "core"}},
    {"driverConfig": {"cpuDeviceMode": ""}},
    {"driverConfig": {"publishNodeAllocatableResourceMapping": "yes"}},
    {"driverConfig": {"numa": {"reservedCPUs": "0-1"}}},
    {"args": {"groupBy": "numa"}},
    {"kubeletRootDir": "var/lib/kubelet"},
    {"kubeletRootDir": ""},
])
def test_030_schema_rejects(helm, tmp_path, bad):
    res = template(helm, tmp_path, "0.3.0", bad, ok=False)
    assert "schema" in res.stderr.lower() or "kubeletRootDir" in res.stderr, res.stderr


def test_030_placement_and_extra_volumes(helm, tmp_path):
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["node02"]}]}]}}}
    objs = template(helm, tmp_path, "0.3.0", {
        "nodeSelector": {"kubernetes.io/os": "linux"}, "affinity": affinity,
        "extraVolumes": [{"name": "overlay", "configMap": {"name": "sysfs"}}],
        "extraVolumeMounts": [{"name": "overlay", "mountPath": "/overlay"}],
        "driverConfig": {"sysfsOverlay": "/overlay"}})
    spec = daemonset(objs)["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert spec["affinity"] == affinity
    assert [v["name"] for v in spec["volumes"]] == [
        "device-plugin", "plugin-registry", "nri-plugin", "cdi-dir", "overlay", "driver-config"]
    assert [m["name"] for m in container(objs)["volumeMounts"]] == [
        "device-plugin", "plugin-registry", "nri-plugin", "cdi-dir", "overlay", "driver-config"]


def test_030_kubelet_root_dir(helm, tmp_path):
    objs = template(helm, tmp_path, "0.3.0", {"kubeletRootDir": "/data/kubelet/"})
    assert "--kubelet-root-dir=/data/kubelet" in args(objs)
    mounts = {m["name"]: m["mountPath"] for m in container(objs)["volumeMounts"]}
    assert mounts["device-plugin"] == "/data/kubelet/plugins"
    assert mounts["plugin-registry"] == "/data/kubelet/plugins_registry"
    vols = {v["name"]: v["hostPath"]["path"]
            for v in daemonset(objs)["spec"]["template"]["spec"]["volumes"]}
    assert vols["device-plugin"] == "/data/kubelet/plugins"
    # absent/null reads as the default (upgrade with --reuse-values from 0.2.0)
    objs = template(helm, tmp_path, "0.3.0", {"kubeletRootDir": None})
    assert not any(a.startswith("--kubelet-root-dir") for a in args(objs))


def test_selector_stable_across_versions(helm, tmp_path):
    sel = [daemonset(template(helm, tmp_path, v))["spec"]["selector"] for v in VERSIONS]
    assert sel[0] == sel[1]


def test_charts_are_not_upstream_copies():
    # a guard for the rule "write it from the facts": no upstream licence header or
    # generator annotations in the fixtures (upstream's own 0.2.0 is not among them)
    assert sorted(p.name for p in CHARTS.iterdir()) == ["0.3.0"]
    for path in CHARTS.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert "Copyright The Kubernetes Authors" not in text, path
            assert "@schema" not in text, path


def test_schema_files_are_json(tmp_path):
    for v in VERSIONS:
        schema = json.loads((src(v) / "values.schema.json").read_text())
        assert schema["properties"]["args"]["additionalProperties"] is False
        assert "additionalProperties" not in schema  # top level open, as upstream


@pytest.mark.parametrize("version", VERSIONS)
def test_package(helm, tmp_path, version):
    # what the test cluster pushes to its OCI registry
    res = _run(helm, ["package", str(src(version)), "--destination", str(tmp_path)], tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / f"dra-driver-cpu-{version}.tgz").is_file()
