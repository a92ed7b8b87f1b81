# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Which helm validates a chart's values.schema.json (pure): ``schema_requirements`` (the constructs
only a draft 2019-09/2020-12 validator reads right, and so ``SCHEMA_2020_HELM``) and ``helm_choice``
(use the helm found, download ``dra_cpu_helm_version`` instead, or fail) and ``fit_choice`` (that
choice for the helm stage's result, a download checked upfront). The evidence for
``SCHEMA_2020_HELM``: docs/internals.md ("Why the settings and the chart values are as they are").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
from collections.abc import Iterator
from typing import Any

from ansible.module_utils.six import binary_type, string_types

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import (
    VersionError,
    parse_version,
)

# the first helm v3 release that validates JSON Schema draft 2020-12 (see the module docstring)
SCHEMA_2020_HELM = "3.18.5"

_NEW_DRAFTS = ("/draft/2019-09/", "/draft/2020-12/")

# keywords of draft 2019-09/2020-12 that a draft-7 validator silently ignores (or cannot resolve)
_MISREAD_KEYWORDS = (
    "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveAnchor", "$recursiveRef",
    "unevaluatedProperties", "unevaluatedItems", "dependentRequired", "dependentSchemas",
    "prefixItems", "minContains", "maxContains",
)

# keywords beside a $ref that change nothing when a validator ignores them
_ANNOTATIONS = frozenset((
    "$ref", "$id", "$schema", "$comment", "$defs", "definitions", "title", "description",
    "default", "examples", "deprecated", "readOnly", "writeOnly",
))

# keywords whose value is a map of name -> schema (names are data, not keywords)
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# keywords whose value is a schema or a list of schemas
_SCHEMA_VALUES = (
    "items", "prefixItems", "additionalItems", "additionalProperties", "unevaluatedProperties",
    "unevaluatedItems", "contains", "propertyNames", "not", "if", "then", "else", "allOf",
    "anyOf", "oneOf",
)


def _pointer_escape(name: str) -> str:
    return str(name).replace("~", "~0").replace("/", "~1")


def _walk(node: dict[str, Any] | bool | None, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """(JSON pointer, schema object) for ``node`` and every subschema below it."""
    if not isinstance(node, dict):
        return
    yield path, node
    for key in _SCHEMA_MAPS:
        children = node.get(key)
        if isinstance(children, dict):
            for name, child in children.items():
                yield from _walk(child, "%s/%s/%s" % (path, key, _pointer_escape(name)))
    for key in _SCHEMA_VALUES:
        child = node.get(key)
        if isinstance(child, list):
            for i, sub in enumerate(child):
                yield from _walk(sub, "%s/%s/%d" % (path, key, i))
        else:
            yield from _walk(child, "%s/%s" % (path, key))


def _local_target(root: dict[str, Any], ref: object) -> dict[str, Any] | None:
    """The schema a ``$ref`` names inside ``root`` (``#/...`` pointer or a ``$defs`` ``$id``)."""
    if not isinstance(ref, string_types):
        return None
    if ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else None
    for _path, node in _walk(root):
        if node.get("$id") == ref or node.get("$id") == ref.rstrip("#"):
            return node
    return None


def load_schema(schema: Any) -> dict[str, Any] | None:
    """A schema given as JSON text, bytes or an already parsed object -> dict (or None)."""
    if schema is None or schema == "":
        return None
    if isinstance(schema, binary_type):
        schema = schema.decode("utf-8")
    if isinstance(schema, string_types):
        schema = json.loads(schema)
    return schema if isinstance(schema, dict) else None


def schema_requirements(schema: dict[str, Any] | str | None) -> dict[str, Any]:
    """What validating ``schema`` (a chart's values.schema.json) needs from helm.

    Returns ``{min_helm, draft, reasons, misread}``: ``misread`` lists the constructs an older helm
    validates wrongly, each with its JSON pointer; ``min_helm`` is ``SCHEMA_2020_HELM`` when there
    are any, else ''. ``reasons`` adds what is only declared newer than draft 7.
    """
    root = load_schema(schema)
    result: dict[str, Any] = {"min_helm": "", "draft": "", "reasons": [], "misread": []}
    if root is None:
        return result
    result["draft"] = root.get("$schema") if isinstance(root.get("$schema"), string_types) else ""
    reasons, misread = [], []
    for path, node in _walk(root):
        declared = node.get("$schema")
        if isinstance(declared, string_types) and any(d in declared for d in _NEW_DRAFTS):
            reasons.append("%s declares %s" % (path, declared))
        if isinstance(node.get("$defs"), dict):
            reasons.append("%s has $defs" % path)
        for key in _MISREAD_KEYWORDS:
            if key in node:
                misread.append("%s uses %s (draft 2019-09+)" % (path, key))
        if "$ref" in node:
            target = _local_target(root, node["$ref"]) or {}
            ignored = sorted(
                k for k in node
                if k not in _ANNOTATIONS and k not in _MISREAD_KEYWORDS
                and not (k in target and target[k] == node[k])
            )
            if ignored:
                misread.append("%s has %s beside $ref %s (ignored by a draft-7 validator)"
                               % (path, ", ".join(ignored), node["$ref"]))
    result["misread"] = misread
    result["reasons"] = reasons + misread
    if misread:
        result["min_helm"] = SCHEMA_2020_HELM
    return result


def _older(helm_version: str, minimum: str) -> bool | None:
    """True when ``helm_version`` is known and below ``minimum``; None when it is unknown."""
    try:
        found = parse_version(str(helm_version or "").strip())
    except (VersionError, ValueError):
        return None
    if found.release == (0, 0, 0):
        return None
    return found.release < parse_version(minimum).release


def _summary(requirements: dict[str, Any], limit: int = 3) -> str:
    items = requirements.get("misread") or []
    text = "; ".join(items[:limit])
    return text + ("; ..." if len(items) > limit else "")


def helm_choice(requirements: dict[str, Any] | None, helm_version: str, source: str, binary: str = "",
                wanted_version: str = "") -> dict[str, Any]:
    """Use the helm found, download ``dra_cpu_helm_version`` instead, or fail.

    ``source``: 'path' (helm on PATH), 'binary' (``dra_cpu_helm_binary``, given as ``binary``) or
    'download' (the fetched ``dra_cpu_helm_version``, given as ``wanted_version``).
    Returns ``{action: use|download|fail, message, warning}``.
    """
    requirements = requirements or {}
    minimum = requirements.get("min_helm") or ""
    result = {"action": "use", "message": "", "warning": ""}
    if not minimum:
        return result
    older = _older(helm_version, minimum)
    if older is False:
        return result
    version = "v%s" % str(helm_version).lstrip("v") if helm_version else "unknown"
    why = ("the chart's values.schema.json needs a JSON Schema draft 2020-12 validator, which helm "
           "has from v%s (%s)" % (minimum, _summary(requirements)))
    if older is None:
        result["warning"] = "the version of helm %s is unknown; %s" % (binary or "on PATH", why)
        return result
    if source == "path":
        result["action"] = "download"
        result["message"] = ("helm %s on PATH is not used: %s. Downloading dra_cpu_helm_version %s."
                             % (version, why, wanted_version or "instead"))
    elif source == "download":
        result["action"] = "fail"
        result["message"] = ("dra_cpu_helm_version '%s' is too old for this chart: %s. Set "
                             "dra_cpu_helm_version to v%s or newer." % (wanted_version or version, why, minimum))
    else:
        result["action"] = "fail"
        result["message"] = ("dra_cpu_helm_binary '%s' is helm %s: %s; it would let values the "
                             "schema refuses pass. Point dra_cpu_helm_binary at helm v%s or newer, "
                             "or leave it empty so that the role downloads dra_cpu_helm_version."
                             % (binary, version, why, minimum))
    return result


def fit_choice(requirements: dict[str, Any] | None, found: dict[str, Any], wanted_version: str) -> dict[str, Any]:
    """``helm_choice`` for the helm stage's result ``found`` (source, version, path) and the download
    of ``wanted_version``; a download that would itself be too old is refused before it is fetched."""
    source = str(found.get("source") or "path")
    choice = helm_choice(requirements, str(found.get("version") or ""), source,
                         binary=str(found.get("path") or "") if source == "binary" else "",
                         wanted_version=wanted_version)
    if choice["action"] == "download":
        after = helm_choice(requirements, wanted_version, "download", wanted_version=wanted_version)
        if after["action"] == "fail":
            return after
    return choice
