# SPDX-License-Identifier: Apache-2.0
"""helm/schema.py: which helm can validate a chart's values.schema.json, and the role's choice."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.schema import (
    SCHEMA_2020_HELM,
    helm_choice,
    load_schema,
    schema_requirements,
)
from ansible_collections.kubevirtci.dra_cpu.tests.cluster.chart_sources import chart_dir

D2020 = "https://json-schema.org/draft/2020-12/schema"
D7 = "http://json-schema.org/draft-07/schema#"


def fixture_schema(version):
    with open(os.path.join(chart_dir(version), "values.schema.json")) as fh:
        return fh.read()


def bundled(extra_prop=None, closed=True):
    """A schema shaped like upstream main's: driverConfig -> $ref to a $defs resource by its $id."""
    resource = {"$schema": D2020, "$id": "cfg.schema.json", "type": "object",
                "properties": {"groupBy": {"enum": ["numanode", "socket"]}}}
    if closed:
        resource["additionalProperties"] = False
    prop = {"description": "d", "$ref": "cfg.schema.json", "type": "object"}
    prop.update(extra_prop or {})
    return {"$schema": D2020, "type": "object", "properties": {"driverConfig": prop},
            "$defs": {"cfg.schema.json": resource}}


def test_first_helm_is_v3_18_5():
    # helm's go.mod: gojsonschema up to v3.18.4, santhosh-tekuri/jsonschema/v6 from v3.18.5
    assert SCHEMA_2020_HELM == "3.18.5"


@pytest.mark.parametrize("schema", [None, "", {}, {"$schema": D7, "type": "object"}])
def test_no_requirement_for_draft7_or_no_schema(schema):
    assert schema_requirements(schema) == {"min_helm": "", "draft": schema and schema.get("$schema", "")
                                           or "", "reasons": [], "misread": []}


def test_fixture_020_declares_2020_12_but_needs_nothing_newer():
    # as upstream's v0.2.0 chart: draft 2020-12 declared, draft-7 keywords only
    req = schema_requirements(fixture_schema("0.2.0"))
    assert req["draft"] == D2020
    assert req["reasons"] == ["# declares %s" % D2020]
    assert req["misread"] == [] and req["min_helm"] == ""


def test_fixture_030_needs_a_2020_validator():
    req = schema_requirements(fixture_schema("0.3.0"))
    assert req["min_helm"] == SCHEMA_2020_HELM
    assert req["draft"] == D2020
    assert req["misread"] == ["#/properties/driverConfig uses unevaluatedProperties (draft 2019-09+)"]
    assert req["reasons"] == [
        "# declares %s" % D2020, "# has $defs",
        "#/$defs/driverconfig.schema.json declares %s" % D2020,
    ] + req["misread"]


def test_upstream_shape_is_declared_not_misread():
    # gojsonschema (helm <= 3.18.4) resolves a bundled $id and ignores only a `type` beside $ref
    # that the target repeats: nothing is validated differently, only the declared draft is new
    req = schema_requirements(bundled())
    assert req["min_helm"] == ""
    assert req["misread"] == []
    assert req["reasons"] == ["# declares %s" % D2020, "# has $defs",
                              "#/$defs/cfg.schema.json declares %s" % D2020]


def test_validation_keyword_beside_ref_is_misread():
    req = schema_requirements(bundled({"maxProperties": 3}))
    assert req["misread"] == ["#/properties/driverConfig has maxProperties beside $ref "
                              "cfg.schema.json (ignored by a draft-7 validator)"]


def test_type_beside_ref_differing_from_target_is_misread():
    schema = bundled()
    schema["$defs"]["cfg.schema.json"]["type"] = ["object", "null"]
    assert len(schema_requirements(schema)["misread"]) == 1


@pytest.mark.parametrize("keyword,value", [
    ("unevaluatedProperties", False), ("dependentRequired", {"a": ["b"]}),
    ("prefixItems", [{"type": "string"}]), ("$anchor", "cfg"), ("minContains", 1),
])
def test_new_keywords_are_misread_even_in_a_draft7_schema(keyword, value):
    schema = {"$schema": D7, "properties": {"x": {keyword: value}}}
    req = schema_requirements(schema)
    assert req["min_helm"] == SCHEMA_2020_HELM
    assert req["misread"] == ["#/properties/x uses %s (draft 2019-09+)" % keyword]


def test_walks_nested_schemas_and_escapes_names():
    any_of = [{"type": "string"}, {"unevaluatedItems": False}]
    schema = {"properties": {"a/b": {"items": {"anyOf": any_of}}}}
    assert schema_requirements(schema)["misread"] == [
        "#/properties/a~1b/items/anyOf/1 uses unevaluatedItems (draft 2019-09+)"]


def test_property_named_like_a_keyword_is_data():
    schema = {"properties": {"prefixItems": {"type": "string"}, "$ref": {"type": "string"}}}
    assert schema_requirements(schema)["reasons"] == []


def test_pointer_ref_with_repeated_sibling():
    schema = {"$defs": {"o": {"type": "object"}},
              "properties": {"x": {"$ref": "#/$defs/o", "type": "object"}}}
    req = schema_requirements(schema)
    assert req["misread"] == [] and req["reasons"] == ["# has $defs"]


def test_load_schema_accepts_text_bytes_and_objects():
    assert load_schema('{"a": 1}') == {"a": 1}
    assert load_schema(b'{"a": 1}') == {"a": 1}
    assert load_schema([1]) is None
    with pytest.raises(ValueError):
        load_schema("{not json")


# --------------------------------------------------------------------------- helm_choice

NEEDS = schema_requirements(fixture_schema("0.3.0"))
DECLARED = schema_requirements(bundled())


@pytest.mark.parametrize("version", ["v3.18.5", "3.18.5", "v3.22.0", "v3.20.1+gabc"])
@pytest.mark.parametrize("source", ["path", "binary", "download"])
def test_new_enough_helm_is_used(version, source):
    assert helm_choice(NEEDS, version, source) == {"action": "use", "message": "", "warning": ""}


@pytest.mark.parametrize("source", ["path", "binary", "download"])
def test_no_requirement_uses_any_helm(source):
    assert helm_choice(schema_requirements(fixture_schema("0.2.0")), "v3.13.0", source)["action"] == "use"
    assert helm_choice(None, "v3.13.0", source)["action"] == "use"


def test_old_helm_on_path_is_replaced_by_a_download():
    res = helm_choice(NEEDS, "v3.18.4", "path", wanted_version="v3.22.0")
    assert res["action"] == "download"
    assert res["message"] == (
        "helm v3.18.4 on PATH is not used: the chart's values.schema.json needs a JSON Schema draft "
        "2020-12 validator, which helm has from v3.18.5 (#/properties/driverConfig uses "
        "unevaluatedProperties (draft 2019-09+)). Downloading dra_cpu_helm_version v3.22.0.")


@pytest.mark.parametrize("source", ["path", "binary", "download"])
def test_declared_draft_alone_keeps_an_older_helm(source):
    assert helm_choice(DECLARED, "v3.13.0", source)["action"] == "use"


def test_old_configured_binary_fails_when_it_would_misread():
    res = helm_choice(NEEDS, "v3.18.4", "binary", binary="/opt/helm")
    assert res["action"] == "fail"
    assert res["message"].startswith("dra_cpu_helm_binary '/opt/helm' is helm v3.18.4: ")
    assert "leave it empty" in res["message"]


def test_downloaded_helm_too_old_fails_naming_the_variable():
    res = helm_choice(NEEDS, "v3.17.3", "download", wanted_version="v3.17.3")
    assert res["action"] == "fail"
    assert res["message"].startswith("dra_cpu_helm_version 'v3.17.3' is too old for this chart")
    assert res["message"].endswith("Set dra_cpu_helm_version to v3.18.5 or newer.")


@pytest.mark.parametrize("version", ["", "0.0.0", "garbage"])
def test_unknown_version_is_used_with_a_warning(version):
    res = helm_choice(NEEDS, version, "binary", binary="/opt/helm")
    assert res["action"] == "use"
    assert res["warning"].startswith("the version of helm /opt/helm is unknown")


def test_long_reason_lists_are_cut():
    many = {"min_helm": "3.18.5", "misread": ["r%d" % i for i in range(6)], "reasons": []}
    assert "(r0; r1; r2; ...)" in helm_choice(many, "v3.14.0", "path")["message"]


def test_fixture_schema_is_valid_json():
    json.loads(fixture_schema("0.3.0"))
