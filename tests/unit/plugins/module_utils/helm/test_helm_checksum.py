# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.checksum import (
    check_checksums, choose_checksum, merge_checksums)

A = "a" * 64
B = "b" * 64
PINS = {"v3.22.0": {"linux-amd64": A, "linux-arm64": B}}


def test_pinned_version_and_platform():
    assert choose_checksum(PINS, "v3.22.0", "linux-amd64") == {"pinned": True, "sha256": A}
    assert choose_checksum(PINS, "v3.22.0", "linux-arm64") == {"pinned": True, "sha256": B}


@pytest.mark.parametrize("version", ["3.22.0", " v3.22.0 "])
def test_version_with_or_without_v(version):
    assert choose_checksum(PINS, version, "linux-amd64")["pinned"]
    assert choose_checksum({"3.22.0": {"linux-amd64": A}}, "v3.22.0", "linux-amd64")["sha256"] == A


@pytest.mark.parametrize("version,platform", [("v3.21.0", "linux-amd64"), ("v3.22.0", "darwin-arm64"),
                                              ("v3.22.0", "linux-s390x")])
def test_unpinned_falls_back_to_the_mirror(version, platform):
    assert choose_checksum(PINS, version, platform) == {"pinned": False, "sha256": None}
    assert choose_checksum({}, version, platform) == {"pinned": False, "sha256": None}
    assert choose_checksum(None, version, platform) == {"pinned": False, "sha256": None}


def test_digest_normalised():
    assert choose_checksum({"v1.0.0": {"linux-amd64": " " + A.upper() + "\n"}}, "v1.0.0", "linux-amd64")["sha256"] == A


def test_overrides_laid_over_the_pins_per_platform():
    merged = merge_checksums(PINS, {"v3.22.0": {"linux-amd64": "c" * 64}, "v3.17.0": {"linux-amd64": B}})
    assert merged == {"v3.22.0": {"linux-amd64": "c" * 64, "linux-arm64": B}, "v3.17.0": {"linux-amd64": B}}
    assert PINS["v3.22.0"]["linux-amd64"] == A, "the pins are not modified"
    assert merge_checksums(PINS, {}) == PINS
    assert merge_checksums(None, None) == {}


@pytest.mark.parametrize("bad,needle", [
    ("abc", "dra_cpu_helm_checksums: 'abc' is not a mapping"),
    ([A], "is not a mapping"),
    ({"v3.22.0": A}, "dra_cpu_helm_checksums['v3.22.0']: '%s' is not a mapping of platform" % A),
    ({"v3.22.0": {"linux-amd64": "abc"}}, "dra_cpu_helm_checksums['v3.22.0']['linux-amd64']: 'abc' is not a sha256"),
    ({"v3.22.0": {"linux-amd64": 12}}, "12 is not a sha256"),
    ({"v3.22.0": {"linux_amd64": A}}, "platform 'linux_amd64' is not <os>-<arch>"),
])
def test_malformed_maps_are_refused_naming_the_variable_and_value(bad, needle):
    errors = check_checksums(bad)
    assert any(needle in e for e in errors), errors
    with pytest.raises(ValueError) as exc:
        choose_checksum(bad, "v3.22.0", "linux-amd64")
    assert needle in str(exc.value)


def test_good_maps_have_no_errors():
    assert check_checksums(PINS) == []
    assert check_checksums({}) == []
    assert check_checksums(None) == []
