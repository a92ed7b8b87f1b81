# SPDX-License-Identifier: Apache-2.0
"""module_utils/helm/find.py: which helm (configured / PATH / cache / download needed), without I/O."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm import find


def uname():
    return ("Linux", "host", "6.1", "#1", "x86_64")


def params(tmp_path, **kw):
    p = {"binary": "", "version": "v3.22.0", "mirror": "https://mirror.invalid", "cache_dir": str(tmp_path / "c"),
         "checksums": {}, "pinned_checksums": {}, "force_download": False, "timeout": 10}
    p.update(kw)
    return p


class Helm(object):
    """Fake run/which: ``helm version --short`` answers ``answers[argv[0]]`` = (rc, stdout)."""

    def __init__(self, answers, on_path=True):
        self.answers, self.on_path, self.calls = answers, on_path, []

    def run(self, argv):
        self.calls.append(argv)
        return self.answers.get(argv[0], (127, ""))

    def which(self, name):
        return "/usr/bin/" + name if self.on_path else None


def cached(tmp_path):
    dest = tmp_path / "c" / "v3.22.0" / "linux-amd64" / "helm"
    dest.parent.mkdir(parents=True)
    dest.write_text("#!/bin/sh\n")
    dest.chmod(0o755)
    return str(dest)


@pytest.mark.parametrize("text,want", [
    ("v3.18.4+gd80839c", "3.18.4"), ("v3.22.0", "3.22.0"), ("3.13.0\n", "3.13.0"),
    ("version.BuildInfo{Version:\"v3.9.1\"}", "3.9.1"), ("", ""), ("garbage", ""), (None, "")])
def test_parse_helm_version(text, want):
    assert find.parse_helm_version(text) == want


@pytest.mark.parametrize("version,ok", [
    ("3.13.0", True), ("3.22.0", True), ("v3.99.1", True), ("3.12.9", False), ("4.0.0", False),
    ("4.1.0", False), ("2.17.0", False), ("", False)])
def test_usable_range(version, ok):
    assert find.usable(version) is ok


@pytest.mark.parametrize("binary,found,rc,version,force,want", [
    ("/opt/helm", "/usr/bin/helm", 0, "3.22.0", False, "binary"),
    ("", "/usr/bin/helm", 0, "3.22.0", False, "path"),
    ("", "/usr/bin/helm", 1, "3.22.0", False, "download"),
    ("", "/usr/bin/helm", 0, "3.12.0", False, "download"),
    ("", "/usr/bin/helm", 0, "4.0.1", False, "download"),
    ("", None, None, "", False, "download"),
    ("/opt/helm", "/usr/bin/helm", 0, "3.22.0", True, "download"),
    ("", "/usr/bin/helm", 0, "3.22.0", True, "download")])
def test_choose(binary, found, rc, version, force, want):
    assert find.choose(binary, found, rc, version, force) == want


def test_configured_binary_is_used_whatever_its_version(tmp_path):
    helm = Helm({"/opt/helm": (0, "v3.9.0+gabc\n")})
    r = find.helm_tool(params(tmp_path, binary="/opt/helm"), False, helm.run, helm.which, uname)
    assert r == {"changed": False, "source": "binary", "path": "/opt/helm", "cmd": "/opt/helm", "version": "3.9.0",
                 "missing": False, "report": ["helm: v3.9.0, dra_cpu_helm_binary /opt/helm"]}
    assert helm.calls == [["/opt/helm", "version", "--short"]]


def test_configured_binary_of_unknown_version(tmp_path):
    helm = Helm({"/opt/helm": (1, "")})
    r = find.helm_tool(params(tmp_path, binary="/opt/helm"), False, helm.run, helm.which, uname)
    assert r["version"] == "" and r["source"] == "binary"
    assert r["report"] == ["helm: dra_cpu_helm_binary /opt/helm (its version is unknown)"]


def test_helm_on_path(tmp_path):
    helm = Helm({"helm": (0, "v3.18.4+gd80839c\n")})
    r = find.helm_tool(params(tmp_path), False, helm.run, helm.which, uname)
    assert r == {"changed": False, "source": "path", "path": "", "cmd": "helm", "version": "3.18.4",
                 "missing": False, "report": ["helm: v3.18.4 from PATH"]}


@pytest.mark.parametrize("answer,why", [
    ((0, "v3.12.3"), "helm v3.12.3 on PATH is not used: the role needs helm v3 >= 3.13"),
    ((0, "v4.0.0"), "helm v4.0.0 on PATH is not used: the role needs helm v3 >= 3.13"),
    ((1, ""), "helm on PATH is not used: helm version --short failed or gave no version")])
def test_unusable_helm_on_path_takes_the_cached_download(tmp_path, answer, why):
    dest = cached(tmp_path)
    helm = Helm({"helm": answer})
    r = find.helm_tool(params(tmp_path), False, helm.run, helm.which, uname)
    assert r == {"changed": False, "source": "download", "path": dest, "cmd": dest, "version": "3.22.0",
                 "missing": False, "report": [why, "helm: v3.22.0, cached %s" % dest]}


def test_force_download_skips_binary_and_path(tmp_path):
    dest = cached(tmp_path)
    helm = Helm({"helm": (0, "v3.22.0"), "/opt/helm": (0, "v3.22.0")})
    r = find.helm_tool(params(tmp_path, binary="/opt/helm", force_download=True), False, helm.run, helm.which,
                       uname)
    assert r["source"] == "download" and r["path"] == dest
    assert helm.calls == []


def test_no_helm_at_all_in_check_mode_is_missing(tmp_path):
    helm = Helm({}, on_path=False)
    r = find.helm_tool(params(tmp_path, version="3.22.0"), True, helm.run, helm.which, uname)
    dest = os.path.join(str(tmp_path), "c", "v3.22.0", "linux-amd64", "helm")
    assert r["missing"] is True and r["changed"] is False and r["source"] == "download"
    assert r["path"] == r["cmd"] == dest and r["version"] == "3.22.0"
    assert r["report"][0].startswith("helm: none yet (check mode: it would be downloaded from "
                                     "https://mirror.invalid/helm-v3.22.0-linux-amd64.tar.gz")
    assert not (tmp_path / "c").exists()


def test_cached_helm_in_check_mode_is_not_missing(tmp_path):
    dest = cached(tmp_path)
    helm = Helm({}, on_path=False)
    r = find.helm_tool(params(tmp_path), True, helm.run, helm.which, uname)
    assert r["missing"] is False and r["path"] == dest


def test_a_download_needs_a_version(tmp_path):
    helm = Helm({}, on_path=False)
    r = find.helm_tool(params(tmp_path, version=""), False, helm.run, helm.which, uname)
    assert r["failed"] is True and "dra_cpu_helm_version" in r["msg"]


def test_malformed_checksums_do_not_matter_for_helm_on_path(tmp_path):
    # as before the stage was one module: the map is read only when a download is needed
    helm = Helm({"helm": (0, "v3.22.0")})
    r = find.helm_tool(params(tmp_path, checksums="abc"), False, helm.run, helm.which, uname)
    assert r["source"] == "path"
    helm = Helm({}, on_path=False)
    r = find.helm_tool(params(tmp_path, checksums="abc"), False, helm.run, helm.which, uname)
    assert r["failed"] is True and r["msg"].startswith("dra_cpu_helm_checksums: 'abc' is not a mapping")


def test_subprocess_runner(tmp_path):
    script = tmp_path / "helm"
    script.write_text("#!/bin/sh\necho v3.20.1+g123\n")
    script.chmod(0o755)
    run = find.subprocess_runner(10)
    assert run([str(script), "version", "--short"]) == (0, "v3.20.1+g123\n")
    rc, _out = run([str(tmp_path / "nothing"), "version"])
    assert rc == 127
