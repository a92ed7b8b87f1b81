# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import (
    MAX_CPU_ID,
    CpusetError,
    format_cpuset,
    parse_cpuset,
    parse_cpuset_detailed,
)


@pytest.mark.parametrize("text,expected", [
    ("", []),
    ("   ", []),
    (None, []),
    ("0", [0]),
    ("0-1", [0, 1]),
    ("0-1,4,6-7", [0, 1, 4, 6, 7]),
    (" 6-7 , 0-1,4 ", [0, 1, 4, 6, 7]),
    ("3-3", [3]),
    ("8191", [8191]),
    (5, [5]),
])
def test_parse_valid(text, expected):
    assert parse_cpuset(text) == expected


@pytest.mark.parametrize("text,reason", [
    ("0-", "range '0-' has no end"),
    ("a", "'a' is not a CPU id or a range a-b"),
    ("3-1", "range 3-1 is descending"),
    ("-1", "'-1' is negative (CPU ids are non-negative integers)"),
    ("0,-2", "'-2' is negative (CPU ids are non-negative integers)"),
    ("0,,1", "empty element (two commas in a row, or a leading or trailing comma)"),
    ("0,", "empty element (two commas in a row, or a leading or trailing comma)"),
    ("1-2-3", "'1-2-3' is not a range a-b"),
    ("0-99999", "CPU id 99999 is out of range (CPU ids go from 0 to 8191)"),
    ("8192", "CPU id 8192 is out of range (CPU ids go from 0 to 8191)"),
    ("1.5", "'1.5' is not a CPU id or a range a-b"),
    ("0-1,2-x", "'2-x' is not a CPU id or a range a-b"),
    ("0-1,2", None),
])
def test_parse_invalid(text, reason):
    if reason is None:
        assert parse_cpuset(text) == [0, 1, 2]
        return
    with pytest.raises(CpusetError) as exc:
        parse_cpuset(text)
    assert str(exc.value) == reason


def test_huge_range_is_rejected_without_expanding():
    with pytest.raises(CpusetError):
        parse_cpuset("0-%d" % (10 ** 12))


def test_duplicates_reported():
    with pytest.raises(CpusetError) as exc:
        parse_cpuset("0-3,2,3,7,7")
    assert str(exc.value) == "CPU 2-3,7 listed more than once"
    assert parse_cpuset_detailed("0-3,2,3,7,7") == ([0, 1, 2, 3, 7], [2, 3, 7])
    assert parse_cpuset("0-3,2", allow_duplicates=True) == [0, 1, 2, 3]


def test_bool_is_not_a_cpuset():
    with pytest.raises(CpusetError):
        parse_cpuset(True)


def test_custom_bound():
    with pytest.raises(CpusetError):
        parse_cpuset("12", max_cpu=11)
    assert MAX_CPU_ID == 8191


@pytest.mark.parametrize("cpus,text", [
    ([], ""),
    ([0], "0"),
    ([0, 1], "0-1"),
    ([7, 6, 4, 1, 0], "0-1,4,6-7"),
    ([1, 1, 2], "1-2"),
    ([0, 2, 4], "0,2,4"),
])
def test_format(cpus, text):
    assert format_cpuset(cpus) == text
