# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import (
    Version,
    VersionError,
    is_helm_version,
    is_semver,
    parse_kube_version,
    parse_runtime_version,
    parse_version,
    version_at_least,
)


@pytest.mark.parametrize("text,release,pre,build", [
    ("v1.36.3", (1, 36, 3), None, None),
    ("1.36", (1, 36, 0), None, None),
    ("v1.36.0-alpha.1+abc", (1, 36, 0), "alpha.1", "abc"),
    ("v1.30.2-gke.1500", (1, 30, 2), "gke.1500", None),
    ("2", (2, 0, 0), None, None),
])
def test_parse_version(text, release, pre, build):
    v = parse_version(text)
    assert v.release == release
    assert v.pre == pre
    assert v.build == build


@pytest.mark.parametrize("text", ["", "abc", "1.x", "v", "1..2"])
def test_parse_version_invalid(text):
    with pytest.raises(VersionError):
        parse_version(text)


def test_ordering():
    assert parse_version("1.36.0-alpha.1") < parse_version("1.36.0-alpha.2")
    assert parse_version("1.36.0-alpha.2") < parse_version("1.36.0-beta.0")
    assert parse_version("1.36.0-rc.1") < parse_version("1.36.0")
    assert parse_version("1.36.0+build") == parse_version("1.36.0")
    assert parse_version("1.9.0") < parse_version("1.10.0")
    assert parse_version("1.36.3") > parse_version("1.36")
    assert parse_version("1.36.0") == parse_version("1.36")


def test_version_at_least_ignores_prerelease_by_default():
    assert version_at_least("v1.36.0-alpha.1+abc", "1.36")
    assert not version_at_least("v1.36.0-alpha.1", "1.36", ignore_prerelease=False)
    assert not version_at_least("v1.35.4", "1.36")
    assert version_at_least("v1.37.2", "1.36")


def test_parse_kube_version_dict():
    assert parse_kube_version({"major": "1", "minor": "36", "gitVersion": "v1.36.3"}).release == (1, 36, 3)
    assert parse_kube_version({"major": "1", "minor": "35+", "gitVersion": ""}).release == (1, 35, 0)
    with pytest.raises(VersionError):
        parse_kube_version({"major": "", "minor": ""})


@pytest.mark.parametrize("text,name,release", [
    ("cri-o://1.36.1", "cri-o", (1, 36, 1)),
    ("containerd://2.0.3", "containerd", (2, 0, 3)),
    ("containerd://1.7.27", "containerd", (1, 7, 27)),
    ("containerd://v2.1.0", "containerd", (2, 1, 0)),
    ("CRI-O://1.30.0", "cri-o", (1, 30, 0)),
    ("docker://24.0.7", "docker", (24, 0, 7)),
])
def test_runtime_versions(text, name, release):
    got_name, version = parse_runtime_version(text)
    assert got_name == name
    assert version.release == release


def test_runtime_version_unparseable():
    assert parse_runtime_version("containerd://garbage") == ("containerd", None)
    assert parse_runtime_version("") == ("", None)
    assert parse_runtime_version(None) == ("", None)


@pytest.mark.parametrize("text,ok", [
    ("0.3.0", True), ("1.0.0-rc.1+b5", True), ("0.2.0", True),
    ("v0.3.0", False), ("0.3", False), ("01.2.3", False), ("0.3.0-", False), ("latest", False), ("", False),
])
def test_semver(text, ok):
    assert is_semver(text) is ok


@pytest.mark.parametrize("text,ok", [
    ("v3.16.4", True), ("v3.22.0", True), ("3.16.4", False), ("v3.16", False), ("v3.16.4-rc.1", False),
])
def test_helm_version(text, ok):
    assert is_helm_version(text) is ok


def test_version_str_and_hash():
    v = Version(1, 36, 3, "alpha.1", "abc")
    assert str(v) == "1.36.3-alpha.1+abc"
    assert len({parse_version("1.36.0"), parse_version("v1.36.0+x")}) == 1
