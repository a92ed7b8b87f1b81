# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.report_files import TOPOLOGY, write_report


def test_no_directory_writes_nothing(tmp_path):
    assert write_report("", TOPOLOGY, {"a": 1}) is None
    assert os.listdir(str(tmp_path)) == []


def test_writes_json_making_the_directory(tmp_path):
    target = tmp_path / "artifacts" / "lane"
    path = write_report(str(target), TOPOLOGY, {"b": [1, 2], "a": {"x": None}})
    assert path == str(target / "dra-cpu-topology.json")
    assert json.loads((target / "dra-cpu-topology.json").read_text()) == {"a": {"x": None}, "b": [1, 2]}
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"


def test_replaces_the_old_report_leaving_no_temporary_file(tmp_path):
    write_report(str(tmp_path), TOPOLOGY, {"run": 1})
    write_report(str(tmp_path), TOPOLOGY, {"run": 2})
    assert os.listdir(str(tmp_path)) == ["dra-cpu-topology.json"]
    assert json.loads((tmp_path / "dra-cpu-topology.json").read_text()) == {"run": 2}


def test_unserialisable_data_leaves_the_old_report_and_no_temporary_file(tmp_path):
    write_report(str(tmp_path), TOPOLOGY, {"run": 1})
    try:
        write_report(str(tmp_path), TOPOLOGY, {"bad": {1, 2}.__iter__})   # default=str renders it
    finally:
        assert sorted(os.listdir(str(tmp_path))) == ["dra-cpu-topology.json"]
