"""A helm that can read the chart: the 0.3.0 fixture's draft 2020-12 schema against an older helm.

The older helm is real: helm v3.18.4 (the last release validating with a draft-7 library) built from
Go modules like the cluster's own (tests/cluster/tools/helm-v3.18.4, `make build-helm-old`, cached
under ${XDG_CACHE_HOME:-~/.cache}/kubevirtci-dra-cpu/helm/; these tests run last, after that build:
late_builds.py). First the proof that it really
validates the 0.3.0 chart wrongly while the cluster's helm does not; then the role with that helm
first on PATH (replaced by a download of dra_cpu_helm_version from the cluster's helm mirror) and
as dra_cpu_helm_binary (refused before any change).

Nodes: they play no part (helm's schema validation); the session cluster's real node (real01).
"""
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_run import BIN, run_playbook
from chart_sources import chart_dir

pytestmark = [pytest.mark.timeout(1200), pytest.mark.late_build("helm-old")]

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tests" / "cluster" / "tools"
CACHE = Path(os.environ.get("CLUSTER_CACHE_DIR") or Path(
    os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubevirtci-dra-cpu")


def _pinned(go_mod):
    return re.search(r"^require helm\.sh/helm/v3 (v\S+)$", go_mod.read_text(), re.M).group(1)


OLD_VERSION = _pinned(TOOLS / "helm-v3.18.4" / "go.mod")
NEW_VERSION = _pinned(TOOLS / "helm" / "go.mod")


def _binary(version):
    path = CACHE / "helm" / version / "helm"
    assert os.access(path, os.X_OK), f"helm {version} was built, yet {path} is not there"
    return str(path)


@pytest.fixture(scope="module")
def old_helm():
    return _binary(OLD_VERSION)


@pytest.fixture(scope="module")
def new_helm():
    return _binary(NEW_VERSION)


def template(helm, tmp_path, version, values):
    vfile = tmp_path / "values.yaml"
    vfile.write_text(yaml.safe_dump(values))
    env = dict(os.environ, HELM_CACHE_HOME=str(tmp_path / "c"), HELM_CONFIG_HOME=str(tmp_path / "f"),
               HELM_DATA_HOME=str(tmp_path / "d"))
    return subprocess.run([helm, "template", "r", chart_dir(version), "-f", str(vfile),
                           "--kube-version", "1.36.3"], capture_output=True, text=True, env=env, timeout=120)


def config_of(rendered):
    for doc in yaml.safe_load_all(rendered):
        if doc and doc["kind"] == "ConfigMap":
            return yaml.safe_load(doc["data"]["config.yaml"])
    return None


# --------------------------------------------------------------------------- the helms themselves

def test_the_helms_are_the_pinned_versions(old_helm, new_helm):
    for helm, version in ((old_helm, OLD_VERSION), (new_helm, NEW_VERSION)):
        out = subprocess.run([helm, "version", "--short"], capture_output=True, text=True, timeout=60)
        assert out.stdout.startswith(version), out


@pytest.mark.parametrize("bad", [{"bindAddress": ":8081"}, {"bogus": True}, {"reservedCpus": "0-1"}])
def test_old_helm_lets_what_the_030_schema_refuses_pass(old_helm, new_helm, tmp_path, bad):
    """The chart's schema refuses these driverConfig keys (the driver would refuse its config file);
    helm v3.18.4 renders them into the ConfigMap, the cluster's helm refuses them."""
    values = {"driverConfig": dict(bad, reservedCPUs="0-1")}
    old = template(old_helm, tmp_path, "0.3.0", values)
    assert old.returncode == 0, old.stderr
    assert config_of(old.stdout) == values["driverConfig"]
    new = template(new_helm, tmp_path, "0.3.0", values)
    assert new.returncode != 0 and "schema" in new.stderr.lower(), new


def test_old_helm_validates_the_draft7_keywords(old_helm, tmp_path):
    # it is a validator, not a no-op: what draft 7 knows it checks, also on the 0.2.0 chart (which
    # declares draft 2020-12 with draft-7 keywords only, as upstream's v0.2.0)
    for version, bad in (("0.3.0", {"driverConfig": {"groupBy": "core"}}),
                         ("0.3.0", {"args": {"bogus": 1}}), ("0.2.0", {"args": {"bogus": 1}})):
        res = template(old_helm, tmp_path, version, bad)
        assert res.returncode != 0 and "schema" in res.stderr.lower(), (version, bad, res)


# --------------------------------------------------------------------------- the role

@pytest.fixture
def registry_has_this_fixture(cluster, new_helm, tmp_path):
    """The cluster's registry serves this checkout's fixture charts (its storage is shared by every
    checkout on the machine: a checkout with other fixture files re-pushes its own version)."""
    for version in ("0.2.0", "0.3.0"):
        out = tmp_path / f"pulled-{version}"
        res = subprocess.run([new_helm, "pull", cluster.chart, "--version", version, "--plain-http",
                              "--untar", "--untardir", str(out)], capture_output=True, text=True,
                             timeout=120, env=dict(os.environ, HELM_CONFIG_HOME=str(tmp_path / "hc"),
                                                   HELM_CACHE_HOME=str(tmp_path / "hc")))
        assert res.returncode == 0, res.stderr
        pulled = (out / "dra-driver-cpu" / "values.schema.json").read_text()
        assert pulled == Path(chart_dir(version), "values.schema.json").read_text(), (
            f"the registry's chart {version} is not this checkout's fixture: another checkout with "
            "different fixture files pushed it; restart the cluster from this checkout")


FIT = "Fit helm to the chart's values schema"


def _path_with(helm, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    link = bindir / "helm"
    if not link.exists():
        link.symlink_to(helm)
    return {"PATH": os.pathsep.join([str(bindir), BIN, os.environ.get("PATH", "")])}


def test_old_helm_on_path_is_replaced_by_the_configured_version(cluster, old_helm, tmp_path,
                                                                 registry_has_this_fixture):
    cache = tmp_path / "helm-cache"
    r = run_playbook(cluster, "install", env=_path_with(old_helm, tmp_path), extra_vars={
        "dra_cpu_chart_version": "0.3.0", "dra_cpu_helm_cache_dir": str(cache)})
    assert r.rc == 0, r
    fitted = r.result(FIT)
    choice = fitted["helm_choice"]
    assert choice["action"] == "download", choice
    why = choice["message"]
    assert why.startswith(f"helm {OLD_VERSION} on PATH is not used: the chart's values.schema.json "
                          "needs a JSON Schema draft 2020-12 validator, which helm has from v3.18.5"), why
    assert why.endswith(f"Downloading dra_cpu_helm_version {cluster.env['CLUSTER_HELM_VERSION']}."), why
    downloaded = cache / cluster.env["CLUSTER_HELM_VERSION"] / "linux-amd64" / "helm"
    assert downloaded.is_file()
    assert fitted["path"] == str(downloaded) and fitted["source"] == "download", fitted
    # the chart stage only pulled with the helm found; it downloads no helm of its own
    assert "helm" not in r.result("Map the settings onto the values of chart")
    report = r.result("Report")["msg"]
    assert f"helm: {why}" in report and any(line.startswith("helm: downloaded") for line in report), report
    from kubernetes import client
    secrets = client.CoreV1Api(cluster.api_client).list_namespaced_secret(
        "dra-driver-cpu", label_selector="owner=helm,status=deployed").items
    assert [s.metadata.labels["name"] for s in secrets] == ["dra-driver-cpu"]


def test_check_mode_says_it_would_download(cluster, old_helm, tmp_path, registry_has_this_fixture):
    cache = tmp_path / "helm-cache"
    r = run_playbook(cluster, "install", env=_path_with(old_helm, tmp_path), check=True, extra_vars={
        "dra_cpu_chart_version": "0.3.0", "dra_cpu_helm_cache_dir": str(cache)})
    assert r.rc == 0, r
    choice = r.result(FIT)["helm_choice"]
    assert choice["message"].startswith(f"helm {OLD_VERSION} on PATH is not used"), choice
    assert r.result(FIT)["missing"] is True
    assert not list(cache.rglob("helm")), "check mode downloaded helm"


def test_old_helm_on_path_is_kept_for_a_chart_it_validates(cluster, old_helm, tmp_path,
                                                         registry_has_this_fixture):
    # the 0.2.0 chart declares draft 2020-12 too, but uses nothing helm v3.18.4 gets wrong
    cache = tmp_path / "helm-cache"
    r = run_playbook(cluster, "install", env=_path_with(old_helm, tmp_path), extra_vars={
        "dra_cpu_chart_version": "0.2.0", "dra_cpu_helm_cache_dir": str(cache)})
    assert r.rc == 0, r
    # 0.2.0 needs no newer helm (no schema_requirements.min_helm): the fit is skipped, helm kept
    assert r.result(FIT).get("skipped") is True, r
    assert r.result("Find or download helm")["source"] == "path", r
    assert not list(cache.rglob("helm")), "helm was downloaded although the one on PATH fits"
    # back to the default chart for the tests after this one
    assert run_playbook(cluster, "install").rc == 0


def test_old_helm_binary_is_refused_before_any_change(cluster, old_helm, tmp_path,
                                                     registry_has_this_fixture):
    from kubernetes import client
    core = client.CoreV1Api(cluster.api_client)
    before = sorted(s.metadata.resource_version for s in core.list_namespaced_secret("dra-driver-cpu").items)
    r = run_playbook(cluster, "install", extra_vars={
        "dra_cpu_chart_version": "0.3.0", "dra_cpu_helm_binary": old_helm,
        "dra_cpu_chart_values": {"driverConfig": {"groupBy": "socket"}}})
    assert r.rc != 0, r
    msgs = [m for m in r.failure_messages() if m]
    assert msgs and msgs[-1].startswith(f"dra_cpu_helm_binary '{old_helm}' is helm {OLD_VERSION}: "), msgs
    after = sorted(s.metadata.resource_version for s in core.list_namespaced_secret("dra-driver-cpu").items)
    assert after == before, "the release changed although the role refused the helm"
