"""Issue 10 item 9: a helm checksum the mirror cannot rewrite.

Against the test cluster's helm mirror (a local build of the release, not helm's official tarball,
so the tests pin the mirror's own digest where they want a match): a pinned version/platform is
checked against the pin only and refused before anything is unpacked when the mirror's file
differs; an unpinned one falls back to the mirror's .sha256sum and the run says so.

Nodes: they play no part (helm's download and checksum); the session cluster's real node (real01).
"""
import urllib.request

import pytest
import yaml

from ansible_run import run_playbook

pytestmark = pytest.mark.timeout(900)

WRONG = "0" * 64


def mirror_sha256(cluster):
    name = "helm-%s-linux-amd64.tar.gz" % cluster.env["CLUSTER_HELM_VERSION"]
    text = urllib.request.urlopen(cluster.env["CLUSTER_HELM_MIRROR"] + "/" + name + ".sha256sum").read().decode()
    return text.split()[0]


def download(cluster, tmp_path, checksums):
    """Only the role's validate and helm stages (tasks_from), with these checksums: the test
    cluster's environment has no helm on PATH, so the helm stage downloads dra_cpu_helm_version."""
    play = tmp_path / "download.yml"
    play.write_text(yaml.safe_dump([{
        "name": "helm download", "hosts": "localhost", "connection": "local", "gather_facts": False,
        "tasks": [{"name": "Validate", "ansible.builtin.include_role": {
            "name": "kubevirtci.dra_cpu.dra_cpu", "tasks_from": "validate"}},
                  {"name": "Download helm", "ansible.builtin.include_role": {
                      "name": "kubevirtci.dra_cpu.dra_cpu", "tasks_from": "helm"}}]}], sort_keys=False))
    cache = tmp_path / "cache"
    r = run_playbook(cluster, str(play), extra_vars={"dra_cpu_helm_cache_dir": str(cache),
                                                     "dra_cpu_helm_checksums": checksums})
    return r, cache


def messages(r):
    """Every task's message and report lines (the helm stage returns its lines in ``report``)."""
    out = []
    for _, res in r.tasks():
        msg = res.get("msg", "")
        out.extend(msg if isinstance(msg, list) else [str(msg)])
        out.extend(res.get("report") or [])
    return out


def unpacked(cache):
    return [p for p in cache.rglob("helm") if p.is_file()]


def test_pinned_digest_matching_the_mirror_file_is_used(cluster, tmp_path):
    version = cluster.env["CLUSTER_HELM_VERSION"]
    r, cache = download(cluster, tmp_path, {version: {"linux-amd64": mirror_sha256(cluster)}})
    assert r.rc == 0, r
    assert unpacked(cache), list(cache.rglob("*"))
    assert not any("is not pinned" in m for m in messages(r)), messages(r)


def test_pinned_version_whose_mirror_file_differs_is_refused_before_unpacking(cluster, tmp_path):
    version = cluster.env["CLUSTER_HELM_VERSION"]
    got = mirror_sha256(cluster)
    r, cache = download(cluster, tmp_path, {version: {"linux-amd64": WRONG}})
    assert r.rc != 0, r
    msg = " ".join(r.failure_messages())
    for part in ("Refusing helm %s for linux-amd64" % version, "pins sha256 %s" % WRONG,
                 "served a file with sha256 %s" % got, "Nothing was unpacked"):
        assert part in msg, msg
    assert not unpacked(cache), "a refused helm was unpacked"
    assert not list(cache.rglob("*.tar.gz")), "a refused tarball was kept"


def test_unpinned_version_falls_back_to_the_mirror_sha256sum_and_says_so(cluster, tmp_path):
    version = cluster.env["CLUSTER_HELM_VERSION"]
    r, cache = download(cluster, tmp_path, {"v0.0.1": {"linux-amd64": WRONG}})
    assert r.rc == 0, r
    assert unpacked(cache)
    said = [m for m in messages(r) if "is not pinned" in m]
    assert said and version in said[0] and ".sha256sum" in said[0], messages(r)


def test_malformed_checksums_fail_naming_the_variable(cluster, tmp_path):
    r, cache = download(cluster, tmp_path, {cluster.env["CLUSTER_HELM_VERSION"]: {"linux-amd64": "abc"}})
    assert r.rc != 0
    assert any("dra_cpu_helm_checksums" in m and "'abc' is not a sha256" in m for m in r.failure_messages()), \
        r.failure_messages()
    assert not unpacked(cache)


def test_install_with_a_wrong_pin_changes_nothing_in_the_cluster(cluster, tmp_path):
    from kubernetes import client
    core = client.CoreV1Api(cluster.api_client)
    before = sorted(n.metadata.name for n in core.list_namespace().items)
    r = run_playbook(cluster, "install", {
        "dra_cpu_helm_cache_dir": str(tmp_path / "cache"),
        "dra_cpu_helm_checksums": {cluster.env["CLUSTER_HELM_VERSION"]: {"linux-amd64": WRONG}}})
    assert r.rc != 0
    assert any("Refusing helm" in m for m in r.failure_messages()), r.failure_messages()
    assert sorted(n.metadata.name for n in core.list_namespace().items) == before
