# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The chart values the role sets (pure): the one mapping from a validated setting to the chart's
driver-settings key (``DRIVER_VALUES``), where those keys live by chart version (``args`` below
0.3.0, ``driverConfig`` from it on: the fallback when the chart cannot be read), the deep merge of the
user's ``chart_values`` and the driver shape a release's values ask for. Why: docs/internals.md
("Why the settings and the chart values are as they are").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy
from collections.abc import Mapping
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import (
    VersionError,
    parse_version,
)

# the driver settings the values carry: cpuDeviceMode and groupBy (validate checks the role's
# variables against them, topology the shape a driver publishes)
GROUP_BY = ("numanode", "socket", "machine")
MODES = ("grouped", "individual")
# groupings the driver knows but that serve no KubeVirt claim (validate refuses them; docs/internals.md)
UNCLAIMABLE_GROUP_BY = ("machine",)
CLAIMABLE_GROUP_BY = tuple(g for g in GROUP_BY if g not in UNCLAIMABLE_GROUP_BY)

ARGS = "args"
DRIVER_CONFIG = "driverConfig"
# KEP-5517: the driverConfig key dra_cpu_node_allocatable_mapping sets (upstream main)
MAPPING_KEY = "publishNodeAllocatableResourceMapping"
# dra_cpu_expose_pcie_roots: the args key of every chart that has it (0.2.0 and main: the
# --expose-pcie-roots flag; main refuses it in driverConfig, upstream internal/driverconfig)
PCIE_ROOTS_KEY = "exposePCIeRoots"
# keys that live under args on every chart, whichever section holds the other settings
ARGS_ONLY = (PCIE_ROOTS_KEY,)
FIRST_DRIVER_CONFIG = (0, 3, 0)

# THE mapping: validate's setting (the role variable dra_cpu_<setting>) -> the chart's key under
# args / driverConfig. Adding a chart value the role sets touches this and the variable's docs only.
DRIVER_VALUES = {
    "reserved_cpus": "reservedCPUs",
    "cpu_device_mode": "cpuDeviceMode",
    "group_by": "groupBy",
    "node_allocatable_mapping": MAPPING_KEY,
    "expose_pcie_roots": PCIE_ROOTS_KEY,
}
# set even when empty: an upgrade without --reuse-values then clears an earlier value; every other
# setting is set only when it says something ('' keeps the chart default, false sets nothing, so a
# chart without the key is refused only when it is asked for)
ALWAYS_SET = ("reserved_cpus",)


def _release(chart_version: str | None) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a chart version; an empty version means the
    newest chart, i.e. at least 0.3.0."""
    if chart_version in (None, ""):
        return None
    try:
        return parse_version(str(chart_version).lstrip("v")).release
    except VersionError:
        raise ValueError("'%s' is not a chart version like 0.3.0" % chart_version)


def values_key(chart_version: str | None) -> str:
    """``'args'`` for charts < 0.3.0, ``'driverConfig'`` from 0.3.0 on."""
    release = _release(chart_version)
    if release is not None and release < FIRST_DRIVER_CONFIG:
        return ARGS
    return DRIVER_CONFIG


def supports_node_affinity(chart_version: str | None) -> bool:
    """True when the chart has an ``affinity`` value (>= 0.3.0)."""
    return values_key(chart_version) == DRIVER_CONFIG


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Recursively merge ``override`` into a copy of ``base``; dicts merge,
    everything else (lists included) is replaced."""
    out = copy.deepcopy(base) if base else {}
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def driver_values(settings: Mapping[str, Any]) -> dict[str, Any]:
    """{chart key: value} of the driver settings to pass, from validated ``settings`` (DRIVER_VALUES)."""
    values: dict[str, Any] = {}
    for setting, key in DRIVER_VALUES.items():
        value = settings.get(setting)
        if setting in ALWAYS_SET:
            values[key] = value or ""
        elif value:
            values[key] = value
    return values


def driver_shape(release_values: dict[str, Any] | None) -> dict[str, Any]:
    """The devices the driver is asked to publish, as the release's values say:
    ``{mode, group_by}`` (``cpuDeviceMode``, ``groupBy``), each '' when the values leave it to the chart
    or driver default. The deprecated ``args`` keys win over ``driverConfig`` when set (0.3.0); on
    0.2.x ``args`` is the only place. The topology stage waits until every node publishes this shape
    (after an upgrade the old driver's pool is complete until the new pod publishes)."""
    shape = {}
    for option, setting, known in (("mode", "cpu_device_mode", MODES), ("group_by", "group_by", GROUP_BY)):
        key = DRIVER_VALUES[setting]
        found = ""
        for section in (ARGS, DRIVER_CONFIG):
            value = ((release_values or {}).get(section) or {}).get(key)
            if isinstance(value, str) and value.strip():
                found = value.strip().lower()
                break
        # a value the driver does not know: it refuses its config, and the topology step reports that
        shape[option] = found if found in known else ""
    return shape
