# SPDX-License-Identifier: Apache-2.0
"""helm/find.py with ``schema_requirements``: the helm stage fits the helm it found to the chart's
values schema (kept, replaced by the download of ``version``, refused); the chart stage finds none."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm import find
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.schema import fit_choice, schema_requirements
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.helm.test_helm_find import (
    Helm,
    cached,
    params,
    uname,
)
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.helm.test_helm_schema import (
    NEEDS,
    fixture_schema,
)

KEEPS = schema_requirements(fixture_schema("0.2.0"))  # declares 2020-12, nothing helm v3.18.4 misreads


def found(source="path", version="3.18.4", path="", report=("helm: v3.18.4 from PATH",), **kw):
    r = {"changed": False, "failed": False, "source": source, "path": path, "cmd": path or "helm",
         "version": version, "missing": False, "report": list(report)}
    r.update(kw)
    return r


def fit(tmp_path, check=False, **kw):
    helm = Helm({}, on_path=False)
    r = find.helm_tool(params(tmp_path, **kw), check, helm.run, helm.which, uname)
    assert helm.calls == [], "the helm found was looked for again"
    return r


def test_old_helm_on_path_is_replaced_by_the_download_of_version(tmp_path):
    dest = cached(tmp_path)
    r = fit(tmp_path, schema_requirements=NEEDS, found=found())
    choice = r["helm_choice"]
    assert choice["action"] == "download"
    assert choice["message"].startswith("helm v3.18.4 on PATH is not used: the chart's values.schema.json needs")
    assert choice["message"].endswith("Downloading dra_cpu_helm_version v3.22.0.")
    assert r["source"] == "download" and r["path"] == r["cmd"] == dest and r["version"] == "3.22.0"
    assert r["report"] == ["helm: v3.18.4 from PATH", "helm: " + choice["message"], "helm: v3.22.0, cached %s" % dest]


def test_check_mode_says_it_would_download_and_downloads_nothing(tmp_path):
    r = fit(tmp_path, check=True, schema_requirements=NEEDS, found=found())
    assert r["helm_choice"]["action"] == "download" and r["missing"] is True
    assert r["report"][2].startswith("helm: none yet (check mode: it would be downloaded from ")
    assert not (tmp_path / "c").exists()


def test_old_helm_is_kept_for_a_chart_it_validates(tmp_path):
    r = fit(tmp_path, schema_requirements=KEEPS, found=found())
    assert r["helm_choice"]["action"] == "use" and r["source"] == "path" and r["cmd"] == "helm"
    assert r["report"] == ["helm: v3.18.4 from PATH"] and r["changed"] is False
    assert not (tmp_path / "c").exists()


def test_new_enough_helm_is_kept(tmp_path):
    r = fit(tmp_path, schema_requirements=NEEDS, found=found(version="3.22.0"))
    assert r["helm_choice"]["action"] == "use" and r["source"] == "path"


def test_old_configured_binary_is_refused(tmp_path):
    r = fit(tmp_path, schema_requirements=NEEDS, found=found("binary", path="/opt/helm"))
    assert r["failed"] is True and r["helm_choice"]["action"] == "fail"
    assert r["msg"].startswith("dra_cpu_helm_binary '/opt/helm' is helm v3.18.4: ")


def test_a_download_that_would_be_too_old_is_refused_before_it_is_fetched(tmp_path):
    r = fit(tmp_path, schema_requirements=NEEDS, found=found(), version="v3.17.3")
    assert r["failed"] is True
    assert r["msg"].startswith("dra_cpu_helm_version 'v3.17.3' is too old for this chart")
    assert not (tmp_path / "c").exists()


def test_a_too_old_downloaded_helm_is_refused(tmp_path):
    r = fit(tmp_path, schema_requirements=NEEDS, version="v3.17.3",
            found=found("download", version="3.17.3", path="/c/helm", report=["helm: v3.17.3, cached /c/helm"]))
    assert r["failed"] is True and r["msg"].startswith("dra_cpu_helm_version 'v3.17.3' is too old")


def test_a_helm_of_unknown_version_is_kept_with_a_warning(tmp_path):
    r = fit(tmp_path, schema_requirements=NEEDS, found=found(version=""))
    warning = r["helm_choice"]["warning"]
    assert r["helm_choice"]["action"] == "use" and warning.startswith("the version of helm on PATH is unknown")
    assert r["report"][-1] == "warning: " + warning and r["warnings"] == [warning]


def test_without_requirements_the_found_helm_is_returned_as_it_is(tmp_path):
    r = fit(tmp_path, found=found(report=["helm: x"]))
    assert "helm_choice" not in r and r["report"] == ["helm: x"] and r["source"] == "path"
    assert "failed" not in r  # only the helm's own keys are taken over


def test_without_found_it_finds_then_fits(tmp_path):
    dest = cached(tmp_path)
    helm = Helm({"helm": (0, "v3.18.4+gd80839c\n")})
    r = find.helm_tool(params(tmp_path, schema_requirements=NEEDS), False, helm.run, helm.which, uname)
    assert helm.calls == [["helm", "version", "--short"]]
    assert r["report"][0] == "helm: v3.18.4 from PATH" and r["path"] == dest


@pytest.mark.parametrize("source,version,want", [
    ("path", "3.18.4", "download"), ("path", "3.22.0", "use"), ("binary", "3.18.4", "fail"),
    ("download", "3.18.4", "fail"), ("download", "3.22.0", "use")])
def test_fit_choice(source, version, want):
    assert fit_choice(NEEDS, {"source": source, "version": version, "path": "/p"}, "v3.22.0")["action"] == want
    assert fit_choice(None, {"source": source, "version": version}, "v3.22.0")["action"] == "use"
