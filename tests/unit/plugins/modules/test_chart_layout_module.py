# SPDX-License-Identifier: Apache-2.0
"""kubevirtci.dra_cpu.chart_layout over the real fixture charts (a directory as helm pull --untar
leaves it, a packaged .tgz) and the version-number fallback without a chart."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import tarfile

from ansible_collections.kubevirtci.dra_cpu.plugins.modules import chart_layout

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import run_module

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
CHARTS = os.path.join(REPO, "tests", "fixtures", "charts", "dra-driver-cpu")


def test_fixture_020_directory_maps_onto_args(tmp_path):
    # as helm pull --untar leaves it: <dir>/dra-driver-cpu/Chart.yaml
    shutil.copytree(os.path.join(CHARTS, "0.2.0"), str(tmp_path / "dra-driver-cpu"))
    result, failed = run_module(chart_layout, {"path": str(tmp_path), "chart": "oci://r/dra-driver-cpu",
                                               "chart_version": "0.2.0", "reserved_cpus": "0-1",
                                               "chart_values": {"nodeSelector": {"a": "b"}}})
    assert failed is False, result
    assert result["layout"]["values_key"] == "args"
    assert result["release_values"]["args"] == {"reservedCPUs": "0-1", "cpuDeviceMode": "grouped"}
    assert result["node_selector"] == {}
    assert result["image"].endswith("/dra-driver-cpu:v0.2.0")


def test_fixture_030_tgz_maps_onto_driver_config(tmp_path):
    tgz = str(tmp_path / "dra-driver-cpu-0.3.0.tgz")
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(os.path.join(CHARTS, "0.3.0"), arcname="dra-driver-cpu")
    result, failed = run_module(chart_layout, {"path": tgz, "reserved_cpus": "0-1", "image": "reg:5000/d:v1",
                                               "chart_values": {"nodeSelector": {"a": "b"}}})
    assert failed is False, result
    assert result["layout"]["values_key"] == "driverConfig"
    assert result["release_values"]["driverConfig"]["reservedCPUs"] == "0-1"
    assert result["node_selector"] == {"a": "b"}
    assert result["image"] == "reg:5000/d:v1"
    assert result["app_version"] == "v0.3.0"


def test_no_chart_falls_back_to_the_version_rule():
    result, failed = run_module(chart_layout, {"chart_version": "0.2.0"})
    assert failed is False
    assert result["layout"]["values_key"] == "args" and "version rule" in result["report"]
    assert result["image"] == ""


def test_unreadable_chart_fails(tmp_path):
    result, failed = run_module(chart_layout, {"path": str(tmp_path), "chart": "c", "chart_version": "1.0.0"})
    assert failed is True and "cannot read chart c 1.0.0" in result["msg"]


def test_schema_requirements_for_helm_choice(tmp_path):
    shutil.copytree(os.path.join(CHARTS, "0.3.0"), str(tmp_path / "dra-driver-cpu"))
    result, failed = run_module(chart_layout, {"path": str(tmp_path)})
    assert failed is False
    assert set(result["schema_requirements"]) >= {"min_helm", "draft", "reasons", "misread"}
    result, failed = run_module(chart_layout, {"chart_version": "0.3.0"})
    assert "schema_requirements" not in result
