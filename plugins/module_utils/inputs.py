# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Validation and normalisation of the role's inputs (pure functions).

Every error names the role variable (``dra_cpu_...``), the bad value and what
is accepted; all errors are collected, not just the first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.cpuset import (
    EXAMPLE as CPUSET_EXAMPLE,
    CpusetError,
    format_cpuset,
    parse_cpuset,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.versions import is_semver, is_helm_version
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight_rules import CHECKS
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils import chart_values as cv

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
    "num_vcpu": "dra_cpu_num_vcpu",
    "num_numa_nodes": "dra_cpu_num_numa_nodes",
    "chart_values": "dra_cpu_chart_values",
    "preflight_ignore": "dra_cpu_preflight_ignore",
    "state": "dra_cpu_state",
    "min_cell_cpus": "dra_cpu_min_cell_cpus",
    "kubeconfig": "dra_cpu_kubeconfig",
    "context": "dra_cpu_context",
}

GROUP_BY = ("numanode", "socket", "machine")
MODES = ("grouped", "individual")
STATES = ("present", "absent")

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
RELEASE_MAX = 53
NAMESPACE_MAX = 63

_HOST = r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?"
OCI_REF = re.compile(r"^oci://(%s)(/[A-Za-z0-9._/-]*[A-Za-z0-9_-])$" % _HOST)
HTTP_URL = re.compile(r"^https?://(%s)(/\S*)?$" % _HOST)
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(h|ms|m|s)")
_DURATION = re.compile(r"^(?:[0-9]+(?:\.[0-9]+)?(?:h|ms|m|s))+$")
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}


class InputErrors(ValueError):
    """Raised by callers that want an exception; ``errors`` holds the messages."""

    def __init__(self, errors):
        super(InputErrors, self).__init__("; ".join(errors))
        self.errors = list(errors)


def _show(value):
    if isinstance(value, str):
        return "'%s'" % value
    return repr(value)


def _err(option, value, reason, accepted):
    text = "%s: %s %s" % (VARIABLES.get(option, option), _show(value), reason)
    if accepted:
        text += "; expected %s" % accepted
    return text


def _blank(value):
    return value is None or (isinstance(value, str) and value.strip() == "")


def _choice(params, name, default, choices, what, settings, errors):
    """A case-insensitive choice; blank means ``default``. Records the value or an error."""
    raw = params.get(name)
    value = default if _blank(raw) else str(raw).strip().lower()
    if value not in choices:
        errors.append(_err(name, raw, "is not %s" % what, " or ".join(choices)))
    settings[name] = value


def format_duration(seconds):
    """Seconds -> a Go duration string as Go prints it (``300`` -> ``5m0s``)."""
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%dm%ds" % (hours, minutes, secs)
    if minutes:
        return "%dm%ds" % (minutes, secs)
    return "%ds" % secs


def parse_duration(value):
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


def _positive_int(value):
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


def _optional_positive_int(option, value, errors):
    if _blank(value):
        return None
    try:
        return _positive_int(value)
    except ValueError as exc:
        errors.append(_err(option, value, str(exc), "a positive integer, or empty for unset"))
        return None


def validate_chart(value):
    """'' when ``value`` is a usable chart reference, else the reason."""
    if _blank(value):
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


def validate_inputs(params):
    """Validate and normalise the ``validate`` module's options.

    Returns ``(settings, errors)``: ``settings`` the normalised values (only
    meaningful when ``errors`` is empty), ``errors`` one message per bad
    variable.
    """
    errors = []
    settings = {}
    p = dict(params or {})

    # reserved_cpus
    raw = p.get("reserved_cpus")
    reserved = []
    try:
        reserved = parse_cpuset("" if raw is None else raw)
    except CpusetError as exc:
        errors.append(_err("reserved_cpus", raw, "is not a valid cpuset (%s)" % exc,
                           "a list like %s" % CPUSET_EXAMPLE))
    settings["reserved_cpus"] = format_cpuset(reserved)
    settings["reserved_cpu_list"] = reserved

    # group_by
    raw = p.get("group_by")
    group_by = "" if _blank(raw) else str(raw).strip().lower()
    if group_by and group_by not in GROUP_BY:
        errors.append(_err("group_by", raw, "is not a grouping",
                           "one of %s, or empty for the chart default" % ", ".join(GROUP_BY)))
    settings["group_by"] = group_by

    _choice(p, "cpu_device_mode", "grouped", MODES, "a device mode", settings, errors)

    # chart
    raw = p.get("chart")
    if raw is not None:
        reason = validate_chart(raw)
        if reason:
            errors.append(_err("chart", raw, reason,
                               "oci://<registry>/<path>, an http(s) chart repository URL, or a local path"))
        settings["chart"] = raw.strip() if isinstance(raw, str) else raw

    # chart_version
    raw = p.get("chart_version")
    version = "" if _blank(raw) else str(raw).strip()
    version_ok = True
    if version and not is_semver(version):
        version_ok = False
        errors.append(_err("chart_version", raw, "is not a semantic version",
                           "a chart version like 0.3.0, or empty for the newest"))
    settings["chart_version"] = version

    # namespace / release_name
    for option, limit in (("namespace", NAMESPACE_MAX), ("release_name", RELEASE_MAX)):
        raw = p.get(option)
        if raw is None:
            continue
        text = raw if isinstance(raw, str) else str(raw)
        if not DNS1123_LABEL.match(text) or len(text) > limit:
            reason = ("is longer than %d characters" % limit if DNS1123_LABEL.match(text)
                      else "is not a DNS-1123 label")
            errors.append(_err(option, raw, reason,
                               "lower-case letters, digits and '-', starting and ending with a letter "
                               "or digit, at most %d characters" % limit))
        settings[option] = text

    # helm_timeout
    raw = p.get("helm_timeout")
    if raw is not None:
        try:
            seconds = parse_duration(raw)
            if seconds <= 0:
                raise ValueError("is not positive")
            settings["helm_timeout"] = format_duration(seconds)
            settings["helm_timeout_seconds"] = seconds
        except ValueError as exc:
            errors.append(_err("helm_timeout", raw, str(exc),
                               "a positive number of seconds or a Go duration like 5m or 1h30m"))

    # topology / uninstall timeouts
    for option in ("topology_timeout", "uninstall_timeout"):
        raw = p.get(option)
        if raw is None:
            continue
        try:
            settings[option] = _positive_int(raw)
        except ValueError as exc:
            errors.append(_err(option, raw, str(exc), "a positive number of seconds"))

    # helm_version
    raw = p.get("helm_version")
    if not _blank(raw):
        text = str(raw).strip()
        if re.match(r"^[0-9]", text):
            text = "v" + text
        if not is_helm_version(text):
            errors.append(_err("helm_version", raw, "is not a helm release", "a version like v3.16.4"))
        settings["helm_version"] = text

    # helm_mirror
    allow_http = bool(p.get("helm_mirror_allow_http"))
    settings["helm_mirror_allow_http"] = allow_http
    raw = p.get("helm_mirror")
    if raw is not None:
        text = str(raw).strip().rstrip("/")
        if not HTTP_URL.match(text):
            errors.append(_err("helm_mirror", raw, "is not an http(s) URL",
                               "a URL like https://get.helm.sh"))
        elif text.startswith("http://") and not allow_http:
            errors.append(_err("helm_mirror", raw, "uses plain http",
                               "an https URL, or set dra_cpu_helm_mirror_allow_http: true"))
        settings["helm_mirror"] = text

    # helm_binary: '' = helm from PATH or a download; otherwise it must be there and executable
    raw = p.get("helm_binary")
    settings["helm_binary"] = ""
    if not _blank(raw):
        path = os.path.expanduser(str(raw).strip())
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            errors.append(_err("helm_binary", raw, "is not an executable file",
                               "the path of a helm v3 >= 3.13 binary, or empty to use helm from PATH or "
                               "download %s" % (settings.get("helm_version") or "helm")))
        settings["helm_binary"] = path

    # sizing
    num_vcpu = _optional_positive_int("num_vcpu", p.get("num_vcpu"), errors)
    num_numa = _optional_positive_int("num_numa_nodes", p.get("num_numa_nodes"), errors)
    if num_vcpu is not None and num_numa is not None and num_vcpu % num_numa:
        errors.append(_err("num_vcpu", p.get("num_vcpu"),
                           "cannot be split evenly over %d NUMA nodes (dra_cpu_num_numa_nodes)" % num_numa,
                           "a multiple of %d" % num_numa))
    if num_vcpu is not None and reserved:
        outside = [c for c in reserved if c >= num_vcpu]
        if outside:
            errors.append(_err("reserved_cpus", p.get("reserved_cpus"),
                               "names CPUs %s that a %d-vCPU node does not have (dra_cpu_num_vcpu)"
                               % (format_cpuset(outside), num_vcpu),
                               "CPU ids between 0 and %d" % (num_vcpu - 1)))
        elif len(reserved) >= num_vcpu:
            errors.append(_err("reserved_cpus", p.get("reserved_cpus"),
                               "reserves all %d vCPUs, the driver would publish nothing" % num_vcpu,
                               "fewer reserved CPUs than dra_cpu_num_vcpu"))
    settings["num_vcpu"] = num_vcpu
    settings["num_numa_nodes"] = num_numa

    # chart_values
    raw = p.get("chart_values")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        errors.append(_err("chart_values", raw, "is not a mapping", "a dict of helm values"))
        raw = {}
    settings["chart_values"] = raw

    # preflight_ignore
    raw = p.get("preflight_ignore")
    if _blank(raw):
        ignore = []
    elif isinstance(raw, str):
        ignore = [x.strip() for x in raw.split(",") if x.strip()]
    elif isinstance(raw, (list, tuple)):
        ignore = [str(x).strip() for x in raw]
    else:
        ignore = None
        errors.append(_err("preflight_ignore", raw, "is not a list", "a list of check names"))
    if ignore is not None:
        unknown = [x for x in ignore if x not in CHECKS]
        if unknown:
            errors.append(_err("preflight_ignore", raw, "names unknown checks %s" % ", ".join(unknown),
                               "check names among %s" % ", ".join(CHECKS)))
        settings["preflight_ignore"] = [x for x in ignore if x in CHECKS]

    _choice(p, "state", "present", STATES, "a state", settings, errors)

    # min_cell_cpus: 0 disables the check
    raw = p.get("min_cell_cpus")
    if not _blank(raw):
        try:
            if isinstance(raw, bool) or not (isinstance(raw, int) or re.match(r"^\s*-?[0-9]+\s*$", str(raw))):
                raise ValueError("is not a whole number")
            if int(raw) < 0:
                raise ValueError("is negative")
            settings["min_cell_cpus"] = int(raw)
        except ValueError as exc:
            errors.append(_err("min_cell_cpus", raw, str(exc), "a number of CPUs, 0 to disable the check"))

    # kubeconfig / context: checked locally so that a typo fails here, naming the variable
    errors.extend(check_kubeconfig(p.get("kubeconfig"), p.get("context")))

    # derived: values for the chart version
    if version_ok:
        settings["values_key"] = cv.values_key(version)
        settings["supports_node_affinity"] = cv.supports_node_affinity(version)
    return settings, errors


def _kubeconfig_contexts(path):
    """Context names of a kubeconfig file; ValueError with the reason (never its contents)."""
    try:
        with open(path) as fh:
            text = fh.read()
    except (IOError, OSError) as exc:
        raise ValueError("cannot be read (%s)" % (exc.strerror or type(exc).__name__))
    try:
        import yaml
        data = yaml.safe_load(text)
    except ImportError:  # pragma: no cover - PyYAML comes with ansible-core
        return None
    except Exception:  # yaml errors quote the offending text: keep it (it may hold credentials) out
        raise ValueError("is not a YAML kubeconfig file")
    if not isinstance(data, dict):
        raise ValueError("is not a kubeconfig file")
    return [((c or {}).get("name") or "") for c in (data.get("contexts") or []) if isinstance(c, dict)]


def check_kubeconfig(kubeconfig, context):
    """Errors for a kubeconfig path that does not exist / is not a kubeconfig, or a context it
    does not define. Without an explicit path the context is looked up in the file kubernetes.core
    would use (K8S_AUTH_KUBECONFIG, KUBECONFIG, ~/.kube/config) when that file exists."""
    errors = []
    explicit = not _blank(kubeconfig)
    if explicit:
        path = os.path.expanduser(str(kubeconfig).strip())
        if not os.path.isfile(path):
            return [_err("kubeconfig", kubeconfig, "does not exist or is not a file",
                         "the path of a kubeconfig file, or empty for K8S_AUTH_KUBECONFIG/KUBECONFIG/~/.kube/config")]
    else:
        path = os.environ.get("K8S_AUTH_KUBECONFIG") or os.environ.get("KUBECONFIG") or "~/.kube/config"
        path = os.path.expanduser(path.split(os.pathsep)[0])
        if _blank(context) or not os.path.isfile(path):
            return errors
    try:
        contexts = _kubeconfig_contexts(path)
    except ValueError as exc:
        if explicit:
            errors.append(_err("kubeconfig", kubeconfig, str(exc), "a kubeconfig file"))
        return errors
    if contexts is not None and not _blank(context) and str(context).strip() not in contexts:
        errors.append(_err("context", context, "is not a context of %s" % path,
                           "one of %s, or empty for its current context" % (", ".join(contexts) or "(none)")))
    return errors


def chart_values_for(settings):
    """The helm values for validated ``settings``."""
    return cv.build_values(
        settings.get("chart_version", ""),
        reserved_cpus=settings.get("reserved_cpus", ""),
        group_by=settings.get("group_by", ""),
        cpu_device_mode=settings.get("cpu_device_mode", "grouped"),
        user_values=settings.get("chart_values") or {},
    )


def argument_spec():
    """The options of kubevirtci.dra_cpu.validate (module and action plugin)."""
    return dict(
        reserved_cpus=dict(type="str", default=""),
        group_by=dict(type="str", default=""),
        cpu_device_mode=dict(type="str", default="grouped"),
        chart=dict(type="str"),
        chart_version=dict(type="str"),
        namespace=dict(type="str"),
        release_name=dict(type="str"),
        helm_timeout=dict(type="raw"),
        topology_timeout=dict(type="raw"),
        uninstall_timeout=dict(type="raw"),
        helm_version=dict(type="str"),
        helm_mirror=dict(type="str"),
        helm_mirror_allow_http=dict(type="bool", default=False),
        helm_binary=dict(type="str", default=""),
        num_vcpu=dict(type="raw"),
        num_numa_nodes=dict(type="raw"),
        chart_values=dict(type="raw", default={}),
        preflight_ignore=dict(type="raw", default=[]),
        state=dict(type="str", default="present"),
        min_cell_cpus=dict(type="raw"),
        kubeconfig=dict(type="str", default=""),
        context=dict(type="str", default=""),
    )


def validation_result(params):
    """The validate result for checked ``params``: ``failed`` with ``msg`` and ``errors``, or the
    normalised settings and the chart values."""
    settings, errors = validate_inputs(params)
    if errors:
        return {"failed": True, "msg": "%d invalid input(s): %s" % (len(errors), "; ".join(errors)),
                "errors": errors}
    return {
        "changed": False,
        "settings": settings,
        "chart_values": chart_values_for(settings),
        "values_key": settings["values_key"],
        "supports_node_affinity": settings["supports_node_affinity"],
    }
