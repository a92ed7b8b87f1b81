# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The validate stage (pure): the gate (``enabled`` false: ``run`` is ``skip``, nothing else is
checked), then every input checked and normalised into the ``Settings`` the later stages read, each
error naming the role variable, the bad value and what is accepted (wording: ``checks.py``). Which
layer checks what: docs/internals.md ("Why the settings and the chart values are as they are").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import os
import re
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import (
    EXAMPLE as CPUSET_EXAMPLE,
    CpusetError,
    format_cpuset,
    parse_cpuset,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import is_semver, is_helm_version
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.preflight_checks import CHECKS
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common import chart_values as cv
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common import node_sizing
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.chart_values import (
    MAPPING_KEY,
    CLAIMABLE_GROUP_BY,
    GROUP_BY,
    MODES,
    UNCLAIMABLE_GROUP_BY,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate.checks import (
    DNS1123_LABEL,
    HTTP_URL,
    NAMESPACE_MAX,
    RELEASE_MAX,
    STATES,
    UNCLAIMABLE_GROUP_BY_REASON,
    VARIABLES,
    blank,
    boolean,
    choice,
    err,
    format_duration,
    optional_positive_int,
    parse_duration,
    positive_int,
    show,
    validate_chart,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate.kubeconfig import check_kubeconfig
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate.types import Settings
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import ArgumentSpec

# the role's gate (dra_cpu_enabled, KUBEVIRT_USE_DRA_CPU): validate's ``run`` when it is off, and what it says
SKIP = "skip"
SKIP_MESSAGE = "KUBEVIRT_USE_DRA_CPU is not 'true': skipping dra-driver-cpu"
# what dra_cpu_group_by accepts (an error's "expected ...")
GROUP_BY_ACCEPTED = ("one of %s (dra_cpu_group_by or DRA_CPU_GROUP_BY), or empty for the chart default"
                     % ", ".join(CLAIMABLE_GROUP_BY))


def _check_driver(p: ModuleParams, settings: Settings, errors: list[str]) -> list[int]:
    """reserved_cpus, group_by, cpu_device_mode. Returns the reserved CPU ids."""
    raw = p.get("reserved_cpus")
    reserved = []
    try:
        reserved = parse_cpuset("" if raw is None else raw)
    except CpusetError as exc:
        errors.append(err("reserved_cpus", raw, "is not a valid cpuset (%s)" % exc,
                          "a list like %s" % CPUSET_EXAMPLE))
    settings["reserved_cpus"] = format_cpuset(reserved)
    settings["reserved_cpu_list"] = reserved

    raw = p.get("group_by")
    group_by = "" if blank(raw) else str(raw).strip().lower()
    if group_by and group_by not in GROUP_BY:
        errors.append(err("group_by", raw, "is not a grouping", GROUP_BY_ACCEPTED))
    settings["group_by"] = group_by

    settings["cpu_device_mode"] = choice(p, "cpu_device_mode", "grouped", MODES, "a device mode", errors)
    # KEP-5517: driverConfig.publishNodeAllocatableResourceMapping (chart stage); the gate: preflight
    settings["node_allocatable_mapping"] = boolean(p, "node_allocatable_mapping", errors)
    # args.exposePCIeRoots (chart stage); the DRAListTypeAttributes gate: preflight
    settings["expose_pcie_roots"] = boolean(p, "expose_pcie_roots", errors)
    return reserved


def _check_claimable(p: ModuleParams, settings: Settings, errors: list[str]) -> None:
    """An install (state present) whose grouping serves no KubeVirt claim is refused, through
    ``group_by`` (dra_cpu_group_by, DRA_CPU_GROUP_BY) or a ``groupBy`` in ``chart_values`` (which
    the values merge last). Uninstalling is not refused: it removes such a release."""
    if settings.get("state") != "present":
        return
    if settings.get("group_by") in UNCLAIMABLE_GROUP_BY:
        errors.append(err("group_by", p.get("group_by"), UNCLAIMABLE_GROUP_BY_REASON, GROUP_BY_ACCEPTED))
    values = settings.get("chart_values") or {}
    if cv.driver_shape(values)["group_by"] in UNCLAIMABLE_GROUP_BY:
        keys = ["%s.groupBy: %s" % (section, show(values[section]["groupBy"]))
                for section in (cv.ARGS, cv.DRIVER_CONFIG)
                if isinstance(values.get(section), dict) and "groupBy" in values[section]]
        errors.append("%s: %s %s; expected a groupBy of %s, or none" % (
            VARIABLES["chart_values"], ", ".join(keys), UNCLAIMABLE_GROUP_BY_REASON, " or ".join(CLAIMABLE_GROUP_BY)))


def _check_mapping_values(p: ModuleParams, settings: Settings, errors: list[str]) -> None:
    """A ``driverConfig.publishNodeAllocatableResourceMapping`` or ``args.exposePCIeRoots`` in
    ``chart_values`` (merged last) must say what ``node_allocatable_mapping`` / ``expose_pcie_roots``
    says: preflight and topology act on the setting."""
    # the boolean settings a key of chart_values must not contradict: (setting, its value, section, key)
    gated = (("node_allocatable_mapping", settings.get("node_allocatable_mapping"), cv.DRIVER_CONFIG, MAPPING_KEY),
             ("expose_pcie_roots", settings.get("expose_pcie_roots"), cv.ARGS, cv.PCIE_ROOTS_KEY))
    for setting, value, name, key in gated:
        section = (settings.get("chart_values") or {}).get(name)
        if not isinstance(section, dict) or key not in section:
            continue
        if section[key] is not value:
            errors.append("%s: %s.%s: %s disagrees with %s: %s; expected it set through %s only" % (
                VARIABLES["chart_values"], name, key, show(section[key]),
                VARIABLES[setting], show(p.get(setting)), VARIABLES[setting]))


def _check_chart_and_release(p: ModuleParams, settings: Settings, errors: list[str]) -> None:
    """chart, chart_version, namespace, release_name."""
    raw = p.get("chart")
    if raw is not None:
        reason = validate_chart(raw)
        if reason:
            errors.append(err("chart", raw, reason,
                              "oci://<registry>/<path>, an http(s) chart repository URL, or a local path"))
        settings["chart"] = raw.strip() if isinstance(raw, str) else raw

    raw = p.get("chart_version")
    version = "" if blank(raw) else str(raw).strip()
    if version and not is_semver(version):
        errors.append(err("chart_version", raw, "is not a semantic version",
                          "a chart version like 0.3.0, or empty for the newest"))
    settings["chart_version"] = version

    namespace = _dns_label(p, "namespace", NAMESPACE_MAX, errors)
    if namespace is not None:
        settings["namespace"] = namespace
    release_name = _dns_label(p, "release_name", RELEASE_MAX, errors)
    if release_name is not None:
        settings["release_name"] = release_name


def _dns_label(p: ModuleParams, option: str, limit: int, errors: list[str]) -> str | None:
    """Option ``option`` as a DNS-1123 label of at most ``limit`` characters (None: not given)."""
    raw = p.get(option)
    if raw is None:
        return None
    text = raw if isinstance(raw, str) else str(raw)
    if not DNS1123_LABEL.match(text) or len(text) > limit:
        reason = ("is longer than %d characters" % limit if DNS1123_LABEL.match(text)
                  else "is not a DNS-1123 label")
        errors.append(err(option, raw, reason,
                          "lower-case letters, digits and '-', starting and ending with a letter "
                          "or digit, at most %d characters" % limit))
    return text


def _check_timeouts(p: ModuleParams, settings: Settings, errors: list[str]) -> None:
    """helm_timeout (seconds or a Go duration), topology/uninstall timeouts (positive)."""
    raw = p.get("helm_timeout")
    if raw is not None:
        try:
            seconds = parse_duration(raw)
            if seconds <= 0:
                raise ValueError("is not positive")
            settings["helm_timeout"] = format_duration(seconds)
            settings["helm_timeout_seconds"] = seconds
        except ValueError as exc:
            errors.append(err("helm_timeout", raw, str(exc),
                              "a positive number of seconds or a Go duration like 5m or 1h30m"))

    for option in ("topology_timeout", "uninstall_timeout"):
        raw = p.get(option)
        if raw is None:
            continue
        try:
            settings[option] = positive_int(raw)
        except ValueError as exc:
            errors.append(err(option, raw, str(exc), "a positive number of seconds"))


def _check_helm(p: ModuleParams, settings: Settings, errors: list[str]) -> None:
    """helm_version, helm_mirror (+ allow_http), helm_binary."""
    raw = p.get("helm_version")
    if not blank(raw):
        text = str(raw).strip()
        if re.match(r"^[0-9]", text):
            text = "v" + text
        if not is_helm_version(text):
            errors.append(err("helm_version", raw, "is not a helm release", "a version like v3.16.4"))
        settings["helm_version"] = text

    allow_http = bool(p.get("helm_mirror_allow_http"))
    settings["helm_mirror_allow_http"] = allow_http
    raw = p.get("helm_mirror")
    if raw is not None:
        text = str(raw).strip().rstrip("/")
        if not HTTP_URL.match(text):
            errors.append(err("helm_mirror", raw, "is not an http(s) URL",
                              "a URL like https://get.helm.sh"))
        elif text.startswith("http://") and not allow_http:
            errors.append(err("helm_mirror", raw, "uses plain http",
                              "an https URL, or set dra_cpu_helm_mirror_allow_http: true"))
        settings["helm_mirror"] = text

    # '' = helm from PATH or a download; otherwise it must be there and executable
    raw = p.get("helm_binary")
    settings["helm_binary"] = ""
    if not blank(raw):
        path = os.path.expanduser(str(raw).strip())
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            errors.append(err("helm_binary", raw, "is not an executable file",
                              "the path of a helm v3 >= 3.13 binary, or empty to use helm from PATH or "
                              "download %s" % (settings.get("helm_version") or "helm")))
        settings["helm_binary"] = path

    # '' = no report files; else a directory (made when missing) for the run's JSON reports
    raw = p.get("report_dir")
    settings["report_dir"] = ""
    if not blank(raw):
        path = os.path.abspath(os.path.expanduser(str(raw).strip()))
        if os.path.exists(path) and not os.path.isdir(path):
            errors.append(err("report_dir", raw, "exists and is not a directory",
                              "a directory for the run's reports (made when missing), or empty for none"))
        settings["report_dir"] = path


def _check_sizing(p: ModuleParams, reserved: list[int], settings: Settings, errors: list[str]) -> None:
    """num_vcpu / num_numa_nodes (environment fallbacks, '' = unknown) against each other and
    against the reserved CPUs; min_cell_cpus."""
    num_vcpu = optional_positive_int("num_vcpu", p.get("num_vcpu"), errors)
    num_numa = optional_positive_int("num_numa_nodes", p.get("num_numa_nodes"), errors)
    if num_vcpu is not None and num_numa is not None and not node_sizing.splits_evenly(num_vcpu, num_numa):
        errors.append(err("num_vcpu", p.get("num_vcpu"),
                          "cannot be split evenly over %d NUMA nodes (dra_cpu_num_numa_nodes)" % num_numa,
                          "a multiple of %d" % num_numa))
    if num_vcpu is not None and reserved:
        outside = node_sizing.reserved_outside(reserved, num_vcpu)
        if outside:
            errors.append(err("reserved_cpus", p.get("reserved_cpus"),
                              "names CPUs %s that a %d-vCPU node does not have (dra_cpu_num_vcpu)"
                              % (format_cpuset(outside), num_vcpu),
                              "CPU ids between 0 and %d" % (num_vcpu - 1)))
        elif len(reserved) >= num_vcpu:
            errors.append(err("reserved_cpus", p.get("reserved_cpus"),
                              "reserves all %d vCPUs, the driver would publish nothing" % num_vcpu,
                              "fewer reserved CPUs than dra_cpu_num_vcpu"))
    settings["num_vcpu"] = num_vcpu
    settings["num_numa_nodes"] = num_numa
    # the topology stage checks the cells per node only where the cells are NUMA nodes
    settings["cells_are_numa_nodes"] = node_sizing.cells_are_numa_nodes(
        settings.get("cpu_device_mode"), settings.get("group_by") or node_sizing.DEFAULT_GROUP_BY)

    # 0 disables the check
    raw: Any = p.get("min_cell_cpus")
    if not blank(raw):
        try:
            if isinstance(raw, bool) or not (isinstance(raw, int) or re.match(r"^\s*-?[0-9]+\s*$", str(raw))):
                raise ValueError("is not a whole number")
            if int(raw) < 0:
                raise ValueError("is negative")
            settings["min_cell_cpus"] = int(raw)
        except ValueError as exc:
            errors.append(err("min_cell_cpus", raw, str(exc), "a number of CPUs, 0 to disable the check"))


def _check_values_and_preflight(p: ModuleParams, settings: Settings, errors: list[str]) -> None:
    """chart_values (a mapping), preflight_ignore (known check names), state."""
    raw = p.get("chart_values")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        errors.append(err("chart_values", raw, "is not a mapping", "a dict of helm values"))
        raw = {}
    settings["chart_values"] = raw

    raw = p.get("preflight_ignore")
    if blank(raw):
        ignore = []
    elif isinstance(raw, str):
        ignore = [x.strip() for x in raw.split(",") if x.strip()]
    elif isinstance(raw, (list, tuple)):
        ignore = [str(x).strip() for x in raw]
    else:
        ignore = None
        errors.append(err("preflight_ignore", raw, "is not a list", "a list of check names"))
    if ignore is not None:
        unknown = [x for x in ignore if x not in CHECKS]
        if unknown:
            errors.append(err("preflight_ignore", raw, "names unknown checks %s" % ", ".join(unknown),
                              "check names among %s" % ", ".join(CHECKS)))
        settings["preflight_ignore"] = [x for x in ignore if x in CHECKS]

    settings["state"] = choice(p, "state", "present", STATES, "a state", errors)


def validate_inputs(params: ModuleParams | None) -> tuple[Settings, list[str]]:
    """``(settings, errors)`` for the ``validate`` options: the normalised values (meaningful only
    when ``errors`` is empty) and one message per bad variable, in the order of the checks."""
    errors: list[str] = []
    settings: Settings = {}
    p = dict(params or {})
    reserved = _check_driver(p, settings, errors)
    _check_chart_and_release(p, settings, errors)
    _check_timeouts(p, settings, errors)
    _check_helm(p, settings, errors)
    _check_sizing(p, reserved, settings, errors)
    _check_values_and_preflight(p, settings, errors)
    _check_claimable(p, settings, errors)
    _check_mapping_values(p, settings, errors)
    # kubeconfig / context: checked locally so that a typo fails here, naming the variable
    errors.extend(check_kubeconfig(p.get("kubeconfig"), p.get("context")))
    return settings, errors


def argument_spec() -> ArgumentSpec:
    """The typed options of kubevirtci.dra_cpu.validate (module and action plugin).

    ``raw`` only where a value has more than one accepted form: ``helm_timeout`` (seconds or a Go
    duration), ``num_vcpu``/``num_numa_nodes`` (an integer, or '' from an unset environment
    variable), ``min_cell_cpus`` ('' = unset), ``chart_values`` (a mapping: a ``k=v`` string would
    otherwise be turned into one silently).
    """
    return dict(
        enabled=dict(type="bool", default=True),
        reserved_cpus=dict(type="str", default=""),
        group_by=dict(type="str", default=""),
        cpu_device_mode=dict(type="str", default="grouped"),
        node_allocatable_mapping=dict(type="raw", default=False),
        expose_pcie_roots=dict(type="raw", default=False),
        chart=dict(type="str"),
        chart_version=dict(type="str"),
        namespace=dict(type="str"),
        release_name=dict(type="str"),
        helm_timeout=dict(type="raw"),
        topology_timeout=dict(type="int"),
        uninstall_timeout=dict(type="int"),
        helm_version=dict(type="str"),
        helm_mirror=dict(type="str"),
        helm_mirror_allow_http=dict(type="bool", default=False),
        helm_binary=dict(type="str", default=""),
        report_dir=dict(type="str", default=""),
        num_vcpu=dict(type="raw"),
        num_numa_nodes=dict(type="raw"),
        chart_values=dict(type="raw", default={}),
        preflight_ignore=dict(type="list", elements="str", default=[]),
        state=dict(type="str", default="present"),
        min_cell_cpus=dict(type="raw"),
        kubeconfig=dict(type="str", default=""),
        context=dict(type="str", default=""),
    )


def validation_result(params: ModuleParams) -> dict[str, Any]:
    """The validate result for checked ``params``: the gate's skip (``enabled`` false: nothing else is
    looked at, ``run`` is ``skip``), ``failed`` with ``msg`` and ``errors``, or ``settings`` and ``run``
    (the state: what the later stages do)."""
    if not params.get("enabled", True):
        return {"changed": False, "skipped": True, "run": SKIP, "msg": SKIP_MESSAGE}
    settings, errors = validate_inputs(params)
    if errors:
        return {"failed": True, "msg": "%d invalid input(s): %s" % (len(errors), "; ".join(errors)),
                "errors": errors}
    return {"changed": False, "run": settings["state"], "settings": settings}
