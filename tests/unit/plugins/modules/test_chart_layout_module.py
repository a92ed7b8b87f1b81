# SPDX-License-Identifier: Apache-2.0
"""kubevirtci.dra_cpu.chart_layout over the real charts, upstream's 0.2.0 and the 0.3.0 fixture (a directory as helm pull --untar
leaves it, a packaged .tgz) and the version-number fallback without a chart."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tarfile

from unittest import mock

import pytest

from ansible.module_utils import basic

from ansible_collections.kubevirtci.dra_cpu.plugins.modules import chart_layout

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import run_module
from ansible_collections.kubevirtci.dra_cpu.tests.cluster.chart_sources import chart_dir, copy_chart


def test_upstreams_020_directory_directory_maps_onto_args(tmp_path):
    # as helm pull --untar leaves it: <dir>/dra-driver-cpu/Chart.yaml
    copy_chart("0.2.0", str(tmp_path / "dra-driver-cpu"))
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
        tar.add(chart_dir("0.3.0"), arcname="dra-driver-cpu")
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
    assert result["layout"]["values_key"] == "args" and "version rule" in result["mapping"]
    # where the mapping comes from, when it is not the chart itself
    assert result["report"] == ["chart 0.2.0 (values onto args.*, version rule (the chart could not be read))"]
    assert result["image"] == "" and result["version"] == "0.2.0" and result["source"] == "fallback"


def test_unreadable_chart_fails(tmp_path):
    result, failed = run_module(chart_layout, {"path": str(tmp_path), "chart": "c", "chart_version": "1.0.0"})
    assert failed is True and "cannot read chart c 1.0.0" in result["msg"]


def test_schema_requirements_for_the_helm_stage(tmp_path):
    copy_chart("0.3.0", str(tmp_path / "dra-driver-cpu"))
    result, failed = run_module(chart_layout, {"path": str(tmp_path)})
    assert failed is False
    assert set(result["schema_requirements"]) >= {"min_helm", "draft", "reasons", "misread"}
    result, failed = run_module(chart_layout, {"chart_version": "0.3.0"})
    assert "schema_requirements" not in result


# --------------------------------------------------------------------------- fetching the chart itself

OCI = "oci://127.0.0.1:5000/dra-driver-cpu/charts/dra-driver-cpu"
DIGEST = "sha256:" + "cd" * 32


def _package(dest, version):
    tgz = os.path.join(dest, "dra-driver-cpu-%s.tgz" % version)
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(chart_dir(version), arcname="dra-driver-cpu")


class Helm(object):
    """AnsibleModule.run_command as helm pull answers: the fixture chart of --version, or an error."""

    def __init__(self, rc=0, stderr=""):
        self.rc, self.stderr, self.calls = rc, stderr, []

    def __call__(self, argv, **kwargs):
        self.calls.append((argv, kwargs.get("environ_update")))
        self.dest = argv[argv.index("--destination") + 1]
        if self.rc:
            return self.rc, "", self.stderr
        _package(self.dest, argv[argv.index("--version") + 1] if "--version" in argv else "0.3.0")
        return 0, "", "Pulled: x\nDigest: %s\n" % DIGEST


def pull(args, helm=None):
    helm = helm or Helm()
    base = {"chart": OCI, "helm": "/h/helm", "reserved_cpus": "0-1"}
    with mock.patch.object(basic.AnsibleModule, "run_command", helm):
        result, failed = run_module(chart_layout, dict(base, **args))
    return result, failed, helm


def test_pulls_the_chart_maps_it_and_removes_the_temporary_directory(tmp_path):
    result, failed, helm = pull({"chart_version": "0.3.0", "plain_http": True, "ca_file": "/ca.crt",
                                 "cache_dir": str(tmp_path)})
    assert failed is False, result
    argv, env = helm.calls[0]
    assert argv == ["/h/helm", "pull", OCI, "--destination", helm.dest, "--version", "0.3.0", "--plain-http"]
    assert env == {"SSL_CERT_FILE": "/ca.crt"}
    assert not os.path.exists(helm.dest)
    assert result["source"] == "pulled" and result["digest"] == DIGEST and result["cache"] == "written"
    assert result["version"] == "0.3.0" and result["app_version"] == "v0.3.0"
    assert result["layout"]["values_key"] == "driverConfig" and result["layout"]["chart"] == OCI + " 0.3.0"
    assert result["release_values"]["driverConfig"]["reservedCPUs"] == "0-1"
    assert result["image"].endswith("/dra-driver-cpu:v0.3.0")
    # short (the release stage joins the image onto it; the reference is in the chart task's name)
    assert result["report"] == ["chart 0.3.0 (values onto driverConfig.*)"]
    assert "helm_choice" not in result and "helm" not in result  # the helm stage fits helm (helm/find.py)
    assert set(result["schema_requirements"]) >= {"min_helm", "misread"}
    assert (tmp_path / "charts" / ("sha256-" + "cd" * 32 + ".json")).is_file()


def test_a_rerun_reads_the_layout_cached_by_digest(tmp_path):
    first, _failed, _helm = pull({"chart_version": "0.3.0", "cache_dir": str(tmp_path)})
    with mock.patch("ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart.stage.parse_chart",
                    side_effect=AssertionError("parsed again")):
        again, failed, helm = pull({"chart_version": "0.3.0", "cache_dir": str(tmp_path),
                                    "image": "reg:5000/d:v9"})
    assert failed is False, again
    assert len(helm.calls) == 1  # the reference is still resolved: helm pulls, the parse is saved
    assert again["cache"] == "hit"
    for key in ("layout", "version", "app_version", "schema_requirements", "node_selector"):
        assert again[key] == first[key], key
    assert again["image"] == "reg:5000/d:v9"  # the settings are mapped anew


def test_check_mode_pulls_but_writes_no_cache(tmp_path):
    result, failed, _helm = pull({"chart_version": "0.2.0", "cache_dir": str(tmp_path), "_ansible_check_mode": True})
    assert failed is False and result["version"] == "0.2.0" and result["cache"] == ""
    assert not (tmp_path / "charts").exists()


def test_without_helm_the_version_rule_stands_in():
    result, failed, helm = pull({"helm": "", "chart_version": "0.3.0"})
    assert failed is False and not helm.calls
    assert result["source"] == "fallback" and "version rule" in result["report"][0]
    assert "schema_requirements" not in result


def test_a_local_chart_is_read_where_it_is(tmp_path):
    copy_chart("0.2.0", str(tmp_path / "dra-driver-cpu"))
    result, failed, helm = pull({"chart": str(tmp_path / "dra-driver-cpu"), "chart_version": "", "helm": ""})
    assert failed is False and not helm.calls
    assert result["source"] == "local" and result["version"] == "0.2.0" and result["layout"]["values_key"] == "args"


@pytest.mark.parametrize("stderr, hint", [
    ("Error: r/dra-driver-cpu:9.9.9: not found", "The chart exists but not in this version"),
    ("Error: dial tcp 127.0.0.1:9: connect: connection refused", "Check the reference"),
])
def test_a_chart_that_cannot_be_fetched_fails_naming_it(stderr, hint):
    result, failed, helm = pull({"chart_version": "9.9.9"}, Helm(rc=1, stderr=stderr))
    assert failed is True
    assert result["msg"].startswith("dra_cpu_chart '%s' with dra_cpu_chart_version '9.9.9' cannot be fetched, "
                                    "so nothing was installed: %s." % (OCI, stderr))
    assert hint in result["msg"] and not os.path.exists(helm.dest)
