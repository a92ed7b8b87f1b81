# SPDX-License-Identifier: Apache-2.0
"""helm pull for the chart stage (module_utils/chart/fetch.py): the argv and environment, helm's
error classified into the role's message, the digest of a pulled chart and the layout cache."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tarfile

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart import fetch as cf
from ansible_collections.kubevirtci.dra_cpu.tests.cluster.chart_sources import chart_dir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))))
CHARTS = os.path.join(REPO, "tests", "fixtures", "charts", "dra-driver-cpu")
DIGEST = "sha256:" + "ab" * 32
OCI = "oci://127.0.0.1:5000/dra-driver-cpu/charts/dra-driver-cpu"


# --------------------------------------------------------------------------- argv and environment

def test_pull_argv_keeps_the_archive_with_version_and_plain_http():
    assert cf.pull_argv("/h/helm", OCI, "/tmp/x", "0.3.0", True) == [
        "/h/helm", "pull", OCI, "--destination", "/tmp/x", "--version", "0.3.0", "--plain-http"]


def test_pull_argv_without_version_takes_the_newest():
    assert cf.pull_argv("helm", OCI, "/tmp/x") == ["helm", "pull", OCI, "--destination", "/tmp/x"]


def test_pull_env_sets_ssl_cert_file_only_for_a_ca_file():
    assert cf.pull_env("") == {}
    assert cf.pull_env("~/ca.crt") == {"SSL_CERT_FILE": os.path.expanduser("~/ca.crt")}


# --------------------------------------------------------------------------- error classification

@pytest.mark.parametrize("stderr", [
    'Error: failed to perform "FetchReference" on source: r/dra-driver-cpu:9.9.9: not found',
    "Error: chart \"dra-driver-cpu\" matching 9.9.9 not found in dra index",
    "Error: manifest unknown",
    "Error: no chart version found for dra-driver-cpu-9.9.9",
    "Error: GET ...: unknown tag",
])
def test_a_missing_version_says_the_chart_exists_but_not_in_this_version(stderr):
    msg = cf.fetch_failure(OCI, "9.9.9", "some progress\n" + stderr + "\n", 1)
    assert msg.startswith("dra_cpu_chart '%s' with dra_cpu_chart_version '9.9.9' cannot be fetched, "
                          "so nothing was installed: %s." % (OCI, stderr.strip()))
    assert msg.endswith("The chart exists but not in this version: pick one the registry has.")


@pytest.mark.parametrize("stderr", [
    'Error: Get "http://127.0.0.1:9/v2/x/tags/list": dial tcp 127.0.0.1:9: connect: connection refused',
    "Error: tls: failed to verify certificate: x509: certificate signed by unknown authority",
])
def test_an_unreachable_or_untrusted_registry_says_what_to_check(stderr):
    msg = cf.fetch_failure(OCI, "0.3.0", stderr, 1)
    assert "cannot be fetched, so nothing was installed: " + stderr in msg
    assert msg.endswith("Check the reference, that the registry or repository answers, and "
                        "dra_cpu_chart_plain_http / dra_cpu_chart_ca_file.")
    assert "not in this version" not in msg


def test_no_error_output_names_the_exit_code():
    assert "installed: helm exited with 3. Check" in cf.fetch_failure(OCI, "", "  \n", 3)
    assert "with dra_cpu_chart_version ''" in cf.fetch_failure(OCI, "", "", 3)


# --------------------------------------------------------------------------- fetching

def _tgz(path, version="0.3.0"):
    with tarfile.open(str(path), "w:gz") as tar:
        tar.add(chart_dir(version), arcname="dra-driver-cpu")
    return str(path)


class FakeHelm(object):
    """Stands in for helm pull: writes the fixture .tgz into --destination, prints like helm."""

    def __init__(self, rc=0, stderr="", digest=DIGEST, archives=1):
        self.rc, self.stderr, self.digest, self.archives = rc, stderr, digest, archives
        self.calls = []

    def __call__(self, argv, env):
        self.calls.append((argv, env))
        dest = argv[argv.index("--destination") + 1]
        self.dest = dest
        assert os.path.isdir(dest)
        if self.rc:
            return self.rc, "", self.stderr
        for i in range(self.archives):
            _tgz(os.path.join(dest, "dra-driver-cpu-0.3.%d.tgz" % i))
        err = "Pulled: r/dra-driver-cpu:0.3.0\n" + ("Digest: %s\n" % self.digest if self.digest else "")
        return 0, "", err


def test_fetch_pulls_into_a_temporary_directory_and_cleanup_removes_it():
    helm = FakeHelm()
    pulled = cf.fetch_chart(helm, "/h/helm", OCI, "0.3.0", plain_http=True, ca_file="/ca.crt")
    argv, env = helm.calls[0]
    assert argv == ["/h/helm", "pull", OCI, "--destination", helm.dest, "--version", "0.3.0", "--plain-http"]
    assert env == {"SSL_CERT_FILE": "/ca.crt"}
    assert os.path.basename(helm.dest).startswith("dra-cpu-chart-")
    assert pulled.digest == DIGEST and os.path.isfile(pulled.tgz)
    pulled.cleanup()
    assert not os.path.exists(helm.dest)
    pulled.cleanup()  # twice is fine


def test_a_chart_repository_pull_is_digested_by_its_archive():
    helm = FakeHelm(digest="")
    pulled = cf.fetch_chart(helm, "helm", "https://charts.example/dra", "0.3.0")
    try:
        assert pulled.digest == cf.sha256_file(pulled.tgz) and pulled.digest != DIGEST
    finally:
        pulled.cleanup()


@pytest.mark.parametrize("helm", [FakeHelm(rc=1, stderr="Error: manifest unknown"), FakeHelm(archives=0)])
def test_a_failed_pull_raises_the_message_and_leaves_nothing(helm):
    with pytest.raises(cf.FetchError) as exc:
        cf.fetch_chart(helm, "helm", OCI, "9.9.9")
    assert "dra_cpu_chart_version '9.9.9' cannot be fetched" in str(exc.value)
    assert not os.path.exists(helm.dest)


def test_digest_prefers_helms_oci_digest(tmp_path):
    tgz = _tgz(tmp_path / "c.tgz")
    assert cf.digest_of("Pulled: x\nDigest: %s\n" % DIGEST, tgz) == DIGEST
    assert cf.digest_of("Pulled: x\n", tgz) == cf.sha256_file(tgz)


def test_run_subprocess_lays_env_over_this_process(monkeypatch):
    monkeypatch.setenv("DRA_CPU_FETCH_TEST", "kept")
    rc, out, _err = cf.run_subprocess(["sh", "-c", "echo $DRA_CPU_FETCH_TEST $SSL_CERT_FILE"], {"SSL_CERT_FILE": "/ca"})
    assert (rc, out.strip()) == (0, "kept /ca")
    rc, _out, err = cf.run_subprocess(["/nonexistent/helm", "pull"], {})
    assert rc == 127 and "/nonexistent/helm" in err


def test_is_local():
    assert cf.is_local(CHARTS) and not cf.is_local(OCI) and not cf.is_local("")


# --------------------------------------------------------------------------- the cache

def test_cache_round_trip_beside_the_helm_cache(tmp_path):
    entry = {"layout": {"values_key": "driverConfig"}, "metadata": {"version": "0.3.0"}}
    path = cf.cache_write(str(tmp_path), DIGEST, entry)
    assert path == str(tmp_path / "charts" / ("sha256-" + "ab" * 32 + ".json"))
    got = cf.cache_read(str(tmp_path), DIGEST)
    assert got["layout"] == entry["layout"] and got["digest"] == DIGEST and got["format"] == cf.CACHE_FORMAT
    assert [p.name for p in (tmp_path / "charts").iterdir()] == [os.path.basename(path)]  # no temp file left


def test_cache_misses(tmp_path):
    assert cf.cache_read(str(tmp_path), DIGEST) is None  # nothing there
    assert cf.cache_read("", DIGEST) is None and cf.cache_write("", DIGEST, {}) == ""
    assert cf.cache_write(str(tmp_path), "sha256:../../etc", {}) == ""  # not a digest: never a path
    path = cf.cache_path(str(tmp_path), DIGEST)
    os.makedirs(os.path.dirname(path))
    for bad in ("{not json", json.dumps({"format": 0, "digest": DIGEST}), json.dumps({"format": 1, "digest": "x"}),
                json.dumps([1])):
        with open(path, "w") as fh:
            fh.write(bad)
        assert cf.cache_read(str(tmp_path), DIGEST) is None, bad


def test_cache_write_failure_is_not_an_error(tmp_path):
    blocker = tmp_path / "charts"
    blocker.write_text("a file where the directory should be")
    assert cf.cache_write(str(tmp_path), DIGEST, {"a": 1}) == ""
