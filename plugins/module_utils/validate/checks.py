# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The building blocks of input validation (pure): which role variable each option is, the wording of
every input error (``<role variable>: <value> <reason>; expected <what>``) and the one-value checks
no argument spec can express (Go durations, positive counts, chart references).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from typing import Any

# module option -> role variable
VARIABLES = {
    "reserved_cpus": "dra_cpu_reserved_cpus",
    "group_by": "dra_cpu_group_by",
    "cpu_device_mode": "dra_cpu_cpu_device_mode",
    "chart": "dra_cpu_chart",
    "chart_version": "dra_cpu_chart_version",
    "namespace": "dra_cpu_namespace",
    "release_name": "dra_cpu_release_name",
    "helm_timeout": "dra_cpu_helm_timeout",
    "topology_timeout": "dra_cpu_topology_timeout",
    "uninstall_timeout": "dra_cpu_uninstall_timeout",
    "helm_version": "dra_cpu_helm_version",
    "helm_mirror": "dra_cpu_helm_mirror",
    "helm_binary": "dra_cpu_helm_binary",
    "helm_mirror_allow_http": "dra_cpu_helm_mirror_allow_http",
    "report_dir": "dra_cpu_report_dir",
    "num_vcpu": "dra_cpu_num_vcpu",
    "num_numa_nodes": "dra_cpu_num_numa_nodes",
    "chart_values": "dra_cpu_chart_values",
    "preflight_ignore": "dra_cpu_preflight_ignore",
    "state": "dra_cpu_state",
    "min_cell_cpus": "dra_cpu_min_cell_cpus",
    "kubeconfig": "dra_cpu_kubeconfig",
    "context": "dra_cpu_context",
    "node_allocatable_mapping": "dra_cpu_node_allocatable_mapping",
    "expose_pcie_roots": "dra_cpu_expose_pcie_roots",
}

STATES = ("present", "absent")

# why a grouping in chart_values.UNCLAIMABLE_GROUP_BY is refused (after "<variable>: <value> ")
UNCLAIMABLE_GROUP_BY_REASON = (
    "cannot serve a KubeVirt claim: upstream dra-driver-cpu (v0.2.0 and main) prepares a claim on the "
    "machine-wide device only with an opaque cpuset configuration per request, which an external scheduler "
    "adds (upstream docs/user/configuration.md), so the kubelet fails a KubeVirt VM's claim at "
    "NodePrepareResources ('opaque config: request \"<request>\" is targeted by 0 configurations, must "
    "be targeted by exactly 1') and the pod never starts")

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
RELEASE_MAX = 53
NAMESPACE_MAX = 63

_HOST = r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?"
OCI_REF = re.compile(r"^oci://(%s)(/[A-Za-z0-9._/-]*[A-Za-z0-9_-])$" % _HOST)
HTTP_URL = re.compile(r"^https?://(%s)(/\S*)?$" % _HOST)
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(h|ms|m|s)")
_DURATION = re.compile(r"^(?:[0-9]+(?:\.[0-9]+)?(?:h|ms|m|s))+$")
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}


def show(value: object) -> str:
    if isinstance(value, str):
        return "'%s'" % value
    return repr(value)


def err(option: str, value: object, reason: str, accepted: str) -> str:
    text = "%s: %s %s" % (VARIABLES.get(option, option), show(value), reason)
    if accepted:
        text += "; expected %s" % accepted
    return text


def blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def choice(params: dict[str, Any], name: str, default: str, choices: tuple[str, ...], what: str,
           errors: list[str]) -> str:
    """A case-insensitive choice; blank means ``default``. Returns the value (an error recorded)."""
    raw = params.get(name)
    value = default if blank(raw) else str(raw).strip().lower()
    if value not in choices:
        errors.append(err(name, raw, "is not %s" % what, " or ".join(choices)))
    return value


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0", "")


def boolean(params: dict[str, Any], name: str, errors: list[str]) -> bool:
    """A boolean (a bool, or a string of one as an environment variable brings it; blank: false).
    Returns the value (an error recorded)."""
    raw = params.get(name)
    if isinstance(raw, bool) or raw is None:
        return bool(raw)
    text = str(raw).strip().lower()
    if text not in _TRUE + _FALSE:
        errors.append(err(name, raw, "is not a boolean", "true or false"))
    return text in _TRUE


def format_duration(seconds: int) -> str:
    """Seconds -> a Go duration string as Go prints it (``300`` -> ``5m0s``)."""
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%dm%ds" % (hours, minutes, secs)
    if minutes:
        return "%dm%ds" % (minutes, secs)
    return "%ds" % secs


def parse_duration(value: int | str) -> int:
    """Seconds (int) from an int/str of seconds or a Go duration (``5m``,
    ``1h30m``, ``90s``). Raises ValueError; the result may be 0."""
    if isinstance(value, bool):
        raise ValueError("is a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("is not a whole number of seconds")
        return int(value)
    text = str(value).strip()
    if re.match(r"^-?[0-9]+$", text):
        return int(text)
    if not _DURATION.match(text):
        raise ValueError("is not a number of seconds or a duration")
    total = 0.0
    for number, unit in _DURATION_PART.findall(text):
        total += float(number) * _UNIT_SECONDS[unit]
    if not float(total).is_integer():
        raise ValueError("is not a whole number of seconds")
    return int(total)


def positive_int(value: object) -> int:
    """int > 0 from an int or a string of digits; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("is a boolean")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and re.match(r"^\s*-?[0-9]+\s*$", value):
        number = int(value)
    else:
        raise ValueError("is not a whole number")
    if number <= 0:
        raise ValueError("is not positive")
    return number


def optional_positive_int(option: str, value: object, errors: list[str]) -> int | None:
    if blank(value):
        return None
    try:
        return positive_int(value)
    except ValueError as exc:
        errors.append(err(option, value, str(exc), "a positive integer, or empty for unset"))
        return None


def validate_chart(value: str) -> str:
    """'' when ``value`` is a usable chart reference, else the reason."""
    if blank(value):
        return "is empty"
    if not isinstance(value, str):
        return "is not a string"
    text = value.strip()
    if text.startswith("oci://"):
        return "" if OCI_REF.match(text) else "is not a valid OCI reference"
    if "://" in text:
        if text.startswith(("http://", "https://")):
            return "" if HTTP_URL.match(text) else "is not a valid URL"
        return "uses an unsupported scheme"
    if re.search(r"\s", text):
        return "contains whitespace"
    return ""
