# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kubevirtci.dra_cpu.plugins.filter.helm_checksum import FilterModule

F = FilterModule().filters()


def test_user_map_over_the_collection_pins():
    pins = {"v3.22.0": {"linux-amd64": "a" * 64}}
    assert F["helm_checksum"]({}, "v3.22.0", "linux-amd64", pinned=pins) == {"pinned": True, "sha256": "a" * 64}
    got = F["helm_checksum"]({"v3.22.0": {"linux-amd64": "b" * 64}}, "v3.22.0", "linux-amd64", pinned=pins)
    assert got["sha256"] == "b" * 64
    assert F["helm_checksum"]({}, "v3.22.0", "linux-amd64") == {"pinned": False, "sha256": None}


def test_malformed_map_is_a_filter_error_naming_the_variable():
    with pytest.raises(AnsibleFilterError, match="dra_cpu_helm_checksums"):
        F["helm_checksum"]({"v3.22.0": {"linux-amd64": "nope"}}, "v3.22.0", "linux-amd64")


def test_got():
    assert F["helm_checksum_got"]("x did not match y; it was %s." % ("c" * 64)) == "c" * 64
    assert F["helm_checksum_got"]("timeout") == ""
