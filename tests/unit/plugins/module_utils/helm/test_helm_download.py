# SPDX-License-Identifier: Apache-2.0
"""module_utils/helm/download.py (and find.helm_tool's download branch) against a local http.server."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import hashlib
import io
import os
import tarfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm import download as dl
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.find import helm_tool

VERSION = "v3.22.0"
PLATFORM = "linux-amd64"
NAME = "helm-%s-%s.tar.gz" % (VERSION, PLATFORM)
HELM = b"#!/bin/sh\necho v3.22.0+gtest\n"


def tarball(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def mirror(tmp_path):
    root = tmp_path / "mirror"
    root.mkdir()
    data = tarball({PLATFORM + "/helm": HELM, PLATFORM + "/LICENSE": b"license", PLATFORM + "/README.md": b"x"})
    (root / NAME).write_bytes(data)
    (root / (NAME + ".sha256sum")).write_text("%s  %s\n" % (hashlib.sha256(data).hexdigest(), NAME))
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield {"root": root, "url": "http://127.0.0.1:%d" % server.server_address[1],
               "sha256": hashlib.sha256(data).hexdigest()}
    finally:
        server.shutdown()
        server.server_close()


def files(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


def params(mirror, cache, **kw):
    p = {"binary": "", "version": VERSION, "mirror": mirror["url"], "cache_dir": str(cache), "checksums": {},
         "pinned_checksums": {}, "force_download": True, "timeout": 10}
    p.update(kw)
    return p


def uname():
    return ("Linux", "host", "6.1", "#1", "x86_64")


# ------------------------------------------------------------------------------------------ pure

@pytest.mark.parametrize("system,machine,want", [
    ("Linux", "x86_64", "linux-amd64"), ("Linux", "aarch64", "linux-arm64"), ("Darwin", "arm64", "darwin-arm64"),
    ("Linux", "armv7l", "linux-arm"), ("Linux", "i686", "linux-386"), ("Linux", "ppc64le", "linux-ppc64le"),
    ("Linux", "s390x", "linux-s390x"), ("Linux", "riscv64", "linux-riscv64"),
    ("Linux", "mips", ""), ("FreeBSD", "amd64", ""), ("Windows", "x86_64", "")])
def test_platform_of(system, machine, want):
    assert dl.platform_of(system, machine) == want


def test_url_and_cache_path():
    assert dl.tarball_url("https://get.helm.sh/", "3.22.0", PLATFORM) == \
        "https://get.helm.sh/helm-v3.22.0-linux-amd64.tar.gz"
    assert dl.cached_binary("/c", "v3.22.0", PLATFORM) == "/c/v3.22.0/linux-amd64/helm"


@pytest.mark.parametrize("text,want", [
    ("a" * 64 + "\n", "a" * 64),
    ("%s  %s\n" % ("A" * 64, NAME), "a" * 64),
    ("%s *%s\n" % ("b" * 64, NAME), "b" * 64),
    ("%s  other.tar.gz\n%s  %s\n" % ("c" * 64, "d" * 64, NAME), "d" * 64),
    ("%s  other.tar.gz\n" % ("c" * 64), None),
    ("not a sum\n", None), ("", None)])
def test_parse_sha256sum(text, want):
    assert dl.parse_sha256sum(text, NAME) == want


# ------------------------------------------------------------------------------------------ download

def test_download_verified_against_the_mirror_sum(mirror, tmp_path):
    cache = tmp_path / "cache"
    r = helm_tool(params(mirror, cache), False, run=None, uname=uname)
    dest = cache / VERSION / PLATFORM / "helm"
    assert r == {"changed": True, "source": "download", "path": str(dest), "cmd": str(dest), "version": "3.22.0",
                 "missing": False, "report": r["report"]}
    assert dest.read_bytes() == HELM and os.access(str(dest), os.X_OK)
    assert files(cache) == [VERSION, VERSION + "/" + PLATFORM, VERSION + "/" + PLATFORM + "/helm"]
    assert r["report"][0] == ("helm: downloaded v3.22.0 to %s (sha256 verified against the mirror's "
                              ".sha256sum; not pinned)" % dest)
    assert "is not pinned" in r["report"][1] and mirror["url"] + "/" + NAME + ".sha256sum" in r["report"][1]
    # the second run takes the cached binary
    again = helm_tool(params(mirror, cache), False, run=None, uname=uname)
    assert again["changed"] is False and again["path"] == str(dest)
    assert again["report"] == ["helm: v3.22.0, cached %s" % dest]


def test_download_verified_against_the_pin_ignores_the_mirror_sum(mirror, tmp_path):
    (mirror["root"] / (NAME + ".sha256sum")).write_text("0" * 64 + "  " + NAME + "\n")
    cache = tmp_path / "cache"
    r = helm_tool(params(mirror, cache, pinned_checksums={VERSION: {PLATFORM: "f" * 64}},
                         checksums={VERSION: {PLATFORM: mirror["sha256"]}}), False, run=None, uname=uname)
    assert r["changed"] is True, r
    assert r["report"] == ["helm: downloaded v3.22.0 to %s (sha256 verified against the pinned %s)"
                           % (cache / VERSION / PLATFORM / "helm", mirror["sha256"])]


def test_pinned_mismatch_is_refused_and_leaves_nothing(mirror, tmp_path):
    cache = tmp_path / "cache"
    r = helm_tool(params(mirror, cache, checksums={VERSION: {PLATFORM: "0" * 64}}), False, run=None, uname=uname)
    assert r["failed"] is True
    for part in ("Refusing helm %s for linux-amd64" % VERSION, "pins sha256 %s" % ("0" * 64),
                 "served a file with sha256 %s" % mirror["sha256"], "Nothing was unpacked",
                 "nothing was installed"):
        assert part in r["msg"], r["msg"]
    assert files(cache) == []


def test_mismatch_with_the_mirror_sum_is_refused_and_leaves_nothing(mirror, tmp_path):
    (mirror["root"] / NAME).write_bytes((mirror["root"] / NAME).read_bytes() + b"tampered")
    cache = tmp_path / "cache"
    cache.mkdir()
    r = helm_tool(params(mirror, cache), False, run=None, uname=uname)
    assert r["failed"] is True
    assert r["msg"].startswith("Could not fetch a verified helm v3.22.0 from %s/%s (checksum %s/%s.sha256sum); "
                               "nothing was installed. The tarball does not match its published sha256"
                               % (mirror["url"], NAME, mirror["url"], NAME)), r["msg"]
    assert "The checksum for %s/%s did not match %s" % (mirror["url"], NAME, mirror["sha256"]) in r["msg"]
    assert files(cache) == []  # the cache dir existed and stays; nothing inside


@pytest.mark.parametrize("missing", [NAME, NAME + ".sha256sum"])
def test_missing_file_fails_with_the_cause(mirror, tmp_path, missing):
    (mirror["root"] / missing).unlink()
    cache = tmp_path / "cache"
    r = helm_tool(params(mirror, cache), False, run=None, uname=uname)
    assert r["failed"] is True
    assert "Could not fetch a verified helm v3.22.0" in r["msg"] and "404" in r["msg"], r["msg"]
    assert "does not match" not in r["msg"]
    assert not cache.exists()


def test_tarball_without_the_binary_fails_and_leaves_nothing(mirror, tmp_path):
    data = tarball({"darwin-arm64/helm": HELM})
    (mirror["root"] / NAME).write_bytes(data)
    cache = tmp_path / "cache"
    r = helm_tool(params(mirror, cache, checksums={VERSION: {PLATFORM: hashlib.sha256(data).hexdigest()}}),
                  False, run=None, uname=uname)
    assert r["failed"] is True and "the tarball has no linux-amd64/helm" in r["msg"], r["msg"]
    assert not cache.exists()


def test_check_mode_says_what_it_would_download_and_downloads_nothing(mirror, tmp_path):
    cache = tmp_path / "cache"
    r = helm_tool(params(mirror, cache), True, run=None, uname=uname)
    dest = cache / VERSION / PLATFORM / "helm"
    assert r["missing"] is True and r["changed"] is False and r["path"] == str(dest)
    url = "%s/%s" % (mirror["url"], NAME)
    assert r["report"][0] == ("helm: none yet (check mode: it would be downloaded from %s, verified against "
                              "%s.sha256sum and unpacked to %s)" % (url, url, dest))
    assert "is not pinned" in r["report"][1]
    assert not cache.exists()
    pinned = helm_tool(params(mirror, cache, checksums={VERSION: {PLATFORM: "a" * 64}}), True, run=None, uname=uname)
    assert "verified against the pinned sha256 %s" % ("a" * 64) in pinned["report"][0]
    assert len(pinned["report"]) == 1


def test_malformed_checksums_fail_naming_the_variable(mirror, tmp_path):
    r = helm_tool(params(mirror, tmp_path / "c", checksums={VERSION: {PLATFORM: "abc"}}), False, run=None,
                  uname=uname)
    assert r["failed"] is True
    assert "dra_cpu_helm_checksums" in r["msg"] and "'abc' is not a sha256" in r["msg"]
    assert not (tmp_path / "c").exists()


def test_no_helm_build_for_this_machine(mirror, tmp_path):
    r = helm_tool(params(mirror, tmp_path / "c"), False, run=None, uname=lambda: ("Linux", "h", "", "", "mips"))
    assert r == {"failed": True, "msg": "No helm build for Linux/mips: install helm v3 >= 3.13 yourself and set "
                                        "dra_cpu_helm_binary to its path."}
