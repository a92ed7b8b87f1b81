# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Helm values for the dra-driver-cpu chart, per chart version (pure functions).

* 0.2.x: the driver settings live under ``args`` (``reservedCPUs``,
  ``groupBy``, ``cpuDeviceMode``); the chart has no ``affinity`` value.
* >= 0.3.0: under ``driverConfig`` (the deprecated ``args`` keys still exist
  but win when set, so they are left alone); ``affinity`` and
  ``nodeSelector`` exist.

An empty ``group_by`` means the chart default and is not set. The user's
``chart_values`` are deep-merged last.

Owns the version-number rule (the fallback when the chart itself cannot be read: validate's
provisional values, the chart stage's fallback layout, whether preflight can keep the driver off a
node by affinity) and the driver settings the values carry.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import (
    VersionError,
    parse_version,
)

# the driver settings the values carry: cpuDeviceMode and groupBy (validate checks the role's
# variables against them, topology the shape a driver publishes)
GROUP_BY = ("numanode", "socket", "machine")
MODES = ("grouped", "individual")
# groupings the driver knows but that serve no KubeVirt claim, so the role refuses to install them
# (validate): upstream dra-driver-cpu (v0.2.0 and main) prepares a claim on the machine device only
# with an opaque cpuset configuration per request, which an external scheduler adds (upstream
# docs/user/configuration.md, pkg/driver/dra_hooks.go getOpaqueCPUSet); without one
# NodePrepareResources fails, and no KubeVirt claim carries one
UNCLAIMABLE_GROUP_BY = ("machine",)
CLAIMABLE_GROUP_BY = tuple(g for g in GROUP_BY if g not in UNCLAIMABLE_GROUP_BY)

ARGS = "args"
DRIVER_CONFIG = "driverConfig"
# KEP-5517: the driverConfig key dra_cpu_node_allocatable_mapping sets (upstream main)
MAPPING_KEY = "publishNodeAllocatableResourceMapping"
FIRST_DRIVER_CONFIG = (0, 3, 0)


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


def build_values(chart_version: str, reserved_cpus: str = "", group_by: str = "", cpu_device_mode: str = "grouped",
                 user_values: dict[str, Any] | None = None, affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``release_values`` for ``kubernetes.core.helm``.

    ``reserved_cpus`` is a cpuset string (set even when empty, so an upgrade
    clears a previous value); ``group_by`` '' leaves the chart default;
    ``affinity`` (a chart affinity dict) is only set on charts that support
    it (raises ValueError otherwise).
    """
    key = values_key(chart_version)
    settings = {"reservedCPUs": reserved_cpus or ""}
    if cpu_device_mode:
        settings["cpuDeviceMode"] = cpu_device_mode
    if group_by:
        settings["groupBy"] = group_by
    values = {key: settings}
    if affinity:
        if not supports_node_affinity(chart_version):
            raise ValueError("chart %s has no affinity value (needs >= 0.3.0)" % chart_version)
        values["affinity"] = copy.deepcopy(affinity)
    return deep_merge(values, user_values or {})


def driver_shape(release_values: dict[str, Any] | None) -> dict[str, Any]:
    """The devices the driver is asked to publish, as the release's values say:
    ``{mode, group_by}`` (``cpuDeviceMode``, ``groupBy``), each '' when the values leave it to the chart
    or driver default. The deprecated ``args`` keys win over ``driverConfig`` when set (0.3.0); on
    0.2.x ``args`` is the only place. The topology stage waits until every node publishes this shape
    (after an upgrade the old driver's pool is complete until the new pod publishes)."""
    shape = {}
    for option, key, known in (("mode", "cpuDeviceMode", MODES), ("group_by", "groupBy", GROUP_BY)):
        found = ""
        for section in (ARGS, DRIVER_CONFIG):
            value = ((release_values or {}).get(section) or {}).get(key)
            if isinstance(value, str) and value.strip():
                found = value.strip().lower()
                break
        # a value the driver does not know: it refuses its config, and the topology step reports that
        shape[option] = found if found in known else ""
    return shape
