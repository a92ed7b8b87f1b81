# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""chart/stage.py's replace_helm: the chart stage gets dra_cpu_helm_version itself when helm from
PATH cannot validate the chart's schema (one call), with the helm stage's own options."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart.stage import replace_helm

HELM = {"changed": True, "source": "download", "path": "/c/v3.22.0/linux-amd64/helm",
        "cmd": "/c/v3.22.0/linux-amd64/helm", "version": "3.22.0", "missing": False,
        "report": ["helm: downloaded v3.22.0"]}


def params(**download):
    return {"wanted_helm_version": "v3.22.0", "helm_download": dict({"mirror": "http://m", "cache_dir": "/c",
                                                                     "checksums": {}, "bogus": 1}, **download)}


def test_the_download_is_forced_with_the_helm_stages_options_and_lands_in_helm():
    seen = []
    result = {"report": ["chart 0.3.0, values mapped onto driverConfig.* (from chart): oci://r/c"]}
    replace_helm(result, params(), False, tool=lambda q, check: seen.append((q, check)) or dict(HELM))
    (q, check), = seen
    assert check is False
    assert q["version"] == "v3.22.0" and q["force_download"] is True and q["binary"] == ""
    assert q["mirror"] == "http://m" and q["cache_dir"] == "/c" and q["timeout"] == 60
    assert "bogus" not in q        # only helm_tool's own options pass
    assert result["helm"]["path"] == HELM["path"] and result["changed"] is True
    assert result["report"][-1] == "helm: downloaded v3.22.0"


def test_check_mode_is_passed_on_and_a_failed_download_fails_the_stage():
    result = {"report": []}
    replace_helm(result, params(), True,
                 tool=lambda q, check: {"failed": True, "msg": "Refusing helm v3.22.0 (check=%s)" % check})
    assert result["failed"] is True and result["msg"] == "Refusing helm v3.22.0 (check=True)"
    assert "helm" not in result
