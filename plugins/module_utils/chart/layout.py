# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Which values a dra-driver-cpu chart really has, read from its ``Chart.yaml``, ``values.yaml`` and
``values.schema.json`` (pure), and the release values for it: the settings (``chart_values.DRIVER_VALUES``)
under ``driverConfig.*`` or ``args.*``, the image, the user's values merged last; a setting without a
key in the chart is an error naming chart, version and key. Reads no file and runs no helm (stage.py
does). Why: docs/internals.md ("Why the settings and the chart values are as they are").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy
from collections.abc import Mapping
from typing import Any, List, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart.types import ChartValues
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common import chart_values as cv

# keys of the driver's config file (upstream main's driverConfig); used only when a chart has an
# empty driverConfig map and no schema that lists its keys
DRIVER_CONFIG_KEYS = ("apiVersion", "cpuDeviceMode", "groupBy", "reservedCPUs", "hostnameOverride",
                      "kubeconfig", "publishNodeAllocatableResourceMapping", "sysfsOverlay")


class ChartLayout(TypedDict):
    """What a chart has: the key its driver settings go under (None: neither) and that key's
    settings, the keys of its ``args`` value (the settings ``chart_values.ARGS_ONLY`` go there on
    every chart), whether it has a nodeSelector and an affinity value, its image keys, where this
    was read (``chart``, or the version rule)."""

    chart: str
    values_key: Optional[str]
    keys: List[str]
    args_keys: List[str]
    node_selector: bool
    affinity: bool
    image_keys: List[str]
    source: str


class ChartLayoutError(ValueError):
    """A setting the role must pass has no key in the chart."""


def _resolve(root: dict[str, Any], node: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """``node`` with a ``$ref`` into ``root``'s ``$defs`` (``#/$defs/x`` or an ``$id``) followed."""
    if not isinstance(node, dict) or "$ref" not in node or depth > 8:
        return node if isinstance(node, dict) else {}
    ref = node["$ref"]
    defs = root.get("$defs") or root.get("definitions") or {}
    target = None
    if ref.startswith("#/"):
        target = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
    else:
        for key, value in defs.items():
            if isinstance(value, dict) and ref in (key, value.get("$id")):
                target = value
                break
    merged = dict(node)
    merged.pop("$ref")
    if isinstance(target, dict):
        target = _resolve(root, target, depth + 1)
        merged = dict(target, **{k: v for k, v in merged.items() if k != "properties"})
        merged["properties"] = dict(target.get("properties") or {}, **(node.get("properties") or {}))
    return merged


def _schema_properties(schema: dict[str, Any] | None, path: tuple[str, ...]) -> set[str] | None:
    """Property names of the object at ``path`` in ``schema``; None when the schema does not say."""
    if not isinstance(schema, dict):
        return None
    node: Any = schema
    for part in path:
        node = _resolve(schema, node)
        node = (node.get("properties") or {}).get(part)
        if node is None:
            return None
    node = _resolve(schema, node)
    props = node.get("properties")
    return set(props) if isinstance(props, dict) else None


def _has_top(values: dict[str, Any], schema: dict[str, Any] | None, key: str) -> bool:
    top = _schema_properties(schema, ()) or set()
    return key in (values or {}) or key in top


def section_keys(values: dict[str, Any], schema: dict[str, Any] | None, section: str) -> set[str] | None:
    """The keys the chart has under ``section`` (``args`` / ``driverConfig``); None: no such value."""
    if not _has_top(values, schema, section):
        return None
    from_schema = _schema_properties(schema, (section,))
    if from_schema:
        return from_schema
    defaults = (values or {}).get(section)
    if isinstance(defaults, dict) and defaults:
        return set(defaults)
    return set(DRIVER_CONFIG_KEYS) if section == cv.DRIVER_CONFIG else set()


def chart_label(metadata: dict[str, Any], chart_ref: str) -> str:
    """``<reference or name> <version>``, how the messages name a chart."""
    return "%s %s" % (chart_ref or (metadata or {}).get("name") or "the chart",
                      (metadata or {}).get("version") or "(version unknown)")


def _split_image(image: str) -> tuple[str, str]:
    """``repo[:tag]`` -> (repo, tag or ''); a ``:`` inside a registry host:port is not a tag."""
    text = (image or "").strip()
    if "@" in text:
        raise ChartLayoutError("dra_cpu_image: '%s' names a digest; expected repository[:tag]" % text)
    last = text.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = text.rsplit(":", 1)
        return repo, tag
    return text, ""


def chart_layout(metadata: dict[str, Any], values: ChartValues, schema: dict[str, Any] | None = None,
                 chart_ref: str = "") -> ChartLayout:
    """What the chart at hand has: ``{values_key, keys, node_selector, affinity, image_keys}``."""
    dc_keys = section_keys(values, schema, cv.DRIVER_CONFIG)
    args_keys = section_keys(values, schema, cv.ARGS)
    if dc_keys is not None:
        key, keys = cv.DRIVER_CONFIG, dc_keys
    elif args_keys is not None:
        key, keys = cv.ARGS, args_keys
    else:
        key, keys = None, set()
    image_keys = _schema_properties(schema, ("image",))
    if not image_keys:
        image_keys = set(((values or {}).get("image") or {}).keys()) if isinstance((values or {}).get("image"), dict) else set()
    return {
        "chart": chart_label(metadata, chart_ref),
        "values_key": key,
        "keys": sorted(keys),
        "args_keys": sorted(args_keys or ()),
        "node_selector": _has_top(values, schema, "nodeSelector"),
        "affinity": _has_top(values, schema, "affinity"),
        "image_keys": sorted(image_keys),
        "source": "chart",
    }


def fallback_layout(chart_version: str, chart_ref: str = "") -> ChartLayout:
    """The layout by the version-number rule, for when the chart cannot be read (check mode)."""
    key = cv.values_key(chart_version)
    newer = key == cv.DRIVER_CONFIG
    # upstream's args keys of 0.2.0, which main keeps (docs/upstream.md, "The chart")
    args = ("cpuDeviceMode", "exposePCIeRoots", "groupBy", "hostnameOverride", "logLevel", "reservedCPUs")
    return {
        "chart": "%s %s" % (chart_ref or "the chart", chart_version or "(newest)"),
        "values_key": key,
        "keys": sorted(DRIVER_CONFIG_KEYS if newer else ("cpuDeviceMode", "groupBy", "reservedCPUs")),
        "args_keys": sorted(args),
        "node_selector": newer,
        "affinity": newer,
        "image_keys": ["pullPolicy", "repository", "tag"],
        "source": "version rule (the chart could not be read)",
    }


def release_values(layout: ChartLayout, settings: Mapping[str, Any], user_values: ChartValues | None = None,
                   image: str = "") -> ChartValues:
    """The ``release_values`` for the chart ``layout``: the settings under the chart's key, the
    ``image`` override (``repo[:tag]``, '' = the chart's default) through image.repository/tag,
    then ``user_values`` deep-merged last. Raises ChartLayoutError naming the missing key."""
    chart = layout["chart"]
    key = layout["values_key"]
    if key is None:
        raise ChartLayoutError(
            "chart %s has neither a driverConfig nor an args value, so it cannot be given "
            "driverConfig.reservedCPUs: this is not a dra-driver-cpu chart the role knows; "
            "pick another dra_cpu_chart or dra_cpu_chart_version" % chart)
    wanted = cv.driver_values(settings)
    args_only = dict((k, wanted.pop(k)) for k in cv.ARGS_ONLY if k in wanted)
    _check_args_only(layout, args_only)
    if cv.MAPPING_KEY in wanted and (key != cv.DRIVER_CONFIG or cv.MAPPING_KEY not in layout["keys"]):
        raise ChartLayoutError(
            "dra_cpu_node_allocatable_mapping: true needs the chart value driverConfig.%s, which chart %s "
            "does not have (its driver settings are %s.*); nothing was installed; use a chart that has it "
            "(upstream main's) or set dra_cpu_node_allocatable_mapping: false" % (cv.MAPPING_KEY, chart, key))
    missing = ["%s.%s" % (key, k) for k in sorted(wanted) if k not in layout["keys"]]
    values = {key: wanted}
    if args_only:
        values = cv.deep_merge(values, {cv.ARGS: args_only})
    if image:
        repo, tag = _split_image(image)
        wanted_image = {"repository": repo}
        if tag:
            wanted_image["tag"] = tag
        missing += ["image.%s" % k for k in sorted(wanted_image) if k not in layout["image_keys"]]
        values["image"] = wanted_image
    if missing:
        raise ChartLayoutError("chart %s has no value %s, which the role must set; nothing was installed"
                               % (chart, " or ".join(missing)))
    return cv.deep_merge(values, user_values or {})


def _check_args_only(layout: ChartLayout, args_only: dict[str, Any]) -> None:
    """The ``chart_values.ARGS_ONLY`` settings asked for need their key under the chart's ``args``."""
    if cv.PCIE_ROOTS_KEY in args_only and cv.PCIE_ROOTS_KEY not in (layout.get("args_keys") or ()):
        raise ChartLayoutError(
            "dra_cpu_expose_pcie_roots: true needs the chart value args.%s (the driver's --expose-pcie-roots), "
            "which chart %s does not have; nothing was installed; use a chart that has it (0.2.0 or newer) "
            "or set dra_cpu_expose_pcie_roots: false" % (cv.PCIE_ROOTS_KEY, layout["chart"]))


def node_placement(layout: ChartLayout, user_values: ChartValues) -> dict[str, Any]:
    """The nodeSelector the DaemonSet will really use: the user's, only when the chart has one."""
    if not layout.get("node_selector"):
        return {}
    return copy.deepcopy((user_values or {}).get("nodeSelector") or {})


def image_of(values_defaults: ChartValues, metadata: Mapping[str, Any], release_vals: ChartValues) -> str:
    """``repository:tag`` the release will run: the chart's image values with the release values
    merged over them; an empty tag is the chart's appVersion."""
    merged = cv.deep_merge({"image": (values_defaults or {}).get("image") or {}},
                           {"image": (release_vals or {}).get("image") or {}})["image"]
    repo = str(merged.get("repository") or "")
    tag = str(merged.get("tag") or (metadata or {}).get("appVersion") or "")
    return "%s:%s" % (repo, tag) if tag else repo


def chart_line(version: str, layout: ChartLayout) -> str:
    """``chart <version> (values onto <key>.*)``, with where the mapping comes from when it is not
    the chart itself (``version rule (the chart could not be read)``)."""
    source = "" if layout["source"] == "chart" else ", %s" % layout["source"]
    return "chart %s (values onto %s.*%s)" % (version or "(newest)", layout["values_key"], source)


def report_line(layout: ChartLayout) -> str:
    """One line for the release report: which mapping was used and why."""
    extra = [k for k in ("nodeSelector", "affinity")
             if layout.get({"nodeSelector": "node_selector", "affinity": "affinity"}[k])]
    return "values mapped onto %s.* (from %s)%s" % (
        layout["values_key"], layout["source"],
        "; chart has %s" % ", ".join(extra) if extra else "; chart has no nodeSelector/affinity")
