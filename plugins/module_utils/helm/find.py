# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Which helm the role runs, the helm stage (``helm_tool``): ``dra_cpu_helm_binary``, else helm v3 >=
3.13 on PATH, else ``dra_cpu_helm_version`` cached or downloaded (check mode: ``missing``). Given the
chart's ``schema_requirements`` it also fits that helm to the chart (kept, replaced by the download,
or refused: helm/schema.py ``fit_choice``), so no other stage finds or downloads helm. helm runs
through the ``run``/``which`` it is given.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm import download as dl
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.checksum import (
    choose_checksum,
    merge_checksums,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.schema import fit_choice
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import ArgumentSpec
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams

# ``run(argv) -> (rc, stdout)``: how a helm command is run
Runner = Callable[[list[str]], tuple[int, str]]

USABLE_FROM = (3, 13, 0)
USABLE_BELOW = (4, 0, 0)
_VERSION = re.compile(r"v?([0-9]+)\.([0-9]+)\.([0-9]+)")


def argument_spec() -> ArgumentSpec:
    """The options of kubevirtci.dra_cpu.helm_tool (the module's DOCUMENTATION describes them)."""
    return dict(
        binary=dict(type="str", default=""),
        version=dict(type="str", default=""),
        mirror=dict(type="str", default="https://get.helm.sh"),
        cache_dir=dict(type="path", default="~/.cache/kubevirtci.dra_cpu/helm"),
        # raw: a malformed map is reported by checksum.check_checksums, naming the role variable
        checksums=dict(type="raw", default={}),
        pinned_checksums=dict(type="raw", default={}),
        force_download=dict(type="bool", default=False),
        timeout=dict(type="int", default=60),
        # the chart stage's schema_requirements: fit the helm to the chart's values.schema.json
        schema_requirements=dict(type="dict"),
        # an earlier result of this module (the role's first call) to fit instead of finding helm again
        found=dict(type="dict"),
    )


def parse_helm_version(text: str | None) -> str:
    """``X.Y.Z`` (no ``v``) from ``helm version --short`` output such as ``v3.18.4+g...``; '' if none."""
    found = _VERSION.search(str(text or ""))
    return "%s.%s.%s" % found.groups() if found else ""


def _release(version: str) -> tuple[int, ...] | None:
    return tuple(int(x) for x in version.split(".")) if version else None


def usable(version: str) -> bool:
    """Whether helm ``version`` (``X.Y.Z``) can be the role's helm from PATH: v3, >= 3.13."""
    release = _release(parse_helm_version(version))
    return release is not None and USABLE_FROM <= release < USABLE_BELOW


def choose(binary: str, path_found: str | None, path_rc: int | None, path_version: str, force_download: bool) -> str:
    """'binary', 'path' or 'download' (pure: what was found is passed in)."""
    if force_download:
        return "download"
    if binary:
        return "binary"
    if path_found and path_rc == 0 and usable(path_version):
        return "path"
    return "download"


def _v(version: str) -> str:
    return "v" + version if version else "unknown version"


def report_binary(binary: str, version: str) -> str:
    if version:
        return "helm: %s, dra_cpu_helm_binary %s" % (_v(version), binary)
    return "helm: dra_cpu_helm_binary %s (its version is unknown)" % binary


def report_path(version: str) -> str:
    return "helm: %s from PATH" % _v(version)


def report_path_unusable(path_found: str | None, path_rc: int | None, path_version: str) -> str:
    """Why helm on PATH is not used ('' when there is none)."""
    if not path_found:
        return ""
    if path_rc != 0 or not path_version:
        return "helm on PATH is not used: helm version --short failed or gave no version"
    return ("helm %s on PATH is not used: the role needs helm v3 >= %d.%d"
            % (_v(path_version), USABLE_FROM[0], USABLE_FROM[1]))


def report_not_pinned(version: str, platform: str, url: str) -> str:
    return ("helm %s for %s is not pinned (dra_cpu_helm_checksums): its tarball is checked against the "
            "mirror's own %s.sha256sum, which catches corruption but not a mirror serving another file"
            % (dl.release_name(version), platform, url))


def report_download(version: str, dest: str, sha256: str | None) -> str:
    how = ("sha256 verified against the pinned %s" % sha256 if sha256
           else "sha256 verified against the mirror's .sha256sum; not pinned")
    return "helm: downloaded %s to %s (%s)" % (dl.release_name(version), dest, how)


def report_would_download(url: str, sha256: str | None, dest: str) -> str:
    against = ("the pinned sha256 %s" % sha256) if sha256 else url + ".sha256sum"
    return ("helm: none yet (check mode: it would be downloaded from %s, verified against %s and "
            "unpacked to %s)" % (url, against, dest))


def report_cached(version: str, dest: str) -> str:
    return "helm: %s, cached %s" % (dl.release_name(version), dest)


def subprocess_runner(timeout: int = 60) -> Runner:
    """``run(argv) -> (rc, stdout)`` with subprocess (the action plugin's, in the controller)."""
    def run(argv: list[str]) -> tuple[int, str]:
        try:
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=timeout, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return 127, str(exc)
        return proc.returncode, proc.stdout.decode("utf-8", "replace")
    return run


def _result(source: str, path: str, cmd: str, version: str, report: list[str], missing: bool = False,
            changed: bool = False) -> dict[str, Any]:
    return {"changed": changed, "source": source, "path": path, "cmd": cmd, "version": version,
            "missing": missing, "report": report}


# what a result says about the helm itself (``found`` is read through these)
HELM_KEYS = ("source", "path", "cmd", "version", "missing", "report")


def helm_tool(params: ModuleParams, check_mode: bool, run: Runner, which: Callable[[str], str | None] = shutil.which,
              uname: Callable[[], Sequence[str]] = os.uname,
              opener: Callable[..., Any] | None = None) -> dict[str, Any]:
    """The module's result for validated ``params``: the helm found (or ``found``, given), fitted to
    ``schema_requirements`` when they are given (``_fit``).

    ``run(argv) -> (rc, stdout)`` runs a helm command, ``which(name)`` finds one on PATH,
    ``uname()`` gives the platform, ``opener`` replaces the download's HTTP opener (tests).
    """
    found = params.get("found")
    if found:
        result = dict((key, found.get(key)) for key in HELM_KEYS)
        result.update(changed=False, report=[str(line) for line in found.get("report") or []])
    else:
        result = _find(params, check_mode, run, which, uname, opener)
    if result.get("failed") or params.get("schema_requirements") is None:
        return result
    return _fit(result, params, check_mode, uname, opener)


def _fit(found: dict[str, Any], params: ModuleParams, check_mode: bool, uname: Callable[[], Sequence[str]],
         opener: Callable[..., Any] | None) -> dict[str, Any]:
    """``found`` kept, replaced by the download of ``version`` (helm from PATH only) or refused, as the
    chart's values.schema.json needs; ``helm_choice`` says which, the report goes on from ``found``'s."""
    choice = fit_choice(params["schema_requirements"], found, str(params.get("version") or ""))
    report = list(found["report"])
    if choice["action"] == "fail":
        return {"failed": True, "msg": choice["message"], "helm_choice": choice, "report": report}
    if choice["action"] == "use":
        result = dict(found, helm_choice=choice)
        if choice["warning"]:
            result.update(report=report + ["warning: " + choice["warning"]], warnings=[choice["warning"]])
        return result
    result = _download(params, check_mode, report + ["helm: " + choice["message"]], uname, opener)
    result["helm_choice"] = choice
    return result


def _find(params: ModuleParams, check_mode: bool, run: Runner, which: Callable[[str], str | None],
          uname: Callable[[], Sequence[str]], opener: Callable[..., Any] | None) -> dict[str, Any]:
    binary = str(params.get("binary") or "").strip()
    force = bool(params.get("force_download"))
    report: list[str] = []

    path_found: str | None = None
    path_rc: int | None = None
    path_version = ""
    if binary and not force:
        rc, out = run([binary, "version", "--short"])
        version = parse_helm_version(out) if rc == 0 else ""
        return _result("binary", binary, binary, version, [report_binary(binary, version)])
    if not force:
        path_found = which("helm")
        if path_found:
            path_rc, out = run(["helm", "version", "--short"])
            path_version = parse_helm_version(out)
    if choose(binary, path_found, path_rc, path_version, force) == "path":
        return _result("path", "", "helm", path_version, [report_path(path_version)])
    why = report_path_unusable(path_found, path_rc, path_version)
    if why:
        report.append(why)
    return _download(params, check_mode, report, uname, opener)


def _download(params: ModuleParams, check_mode: bool, report: list[str], uname: Callable[[], Sequence[str]],
              opener: Callable[..., Any] | None) -> dict[str, Any]:
    version = str(params.get("version") or "").strip()
    if not version:
        return {"failed": True, "msg": "No usable helm was found and no helm version to download was "
                                       "given: set dra_cpu_helm_version, or put helm v3 >= 3.13 on PATH / "
                                       "in dra_cpu_helm_binary."}
    system = uname()
    platform = dl.platform_of(system[0], system[4])
    if not platform:
        return {"failed": True, "msg": dl.no_build_message(system[0], system[4])}
    try:
        chosen = choose_checksum(merge_checksums(params.get("pinned_checksums"), params.get("checksums")),
                                 version, platform)
    except ValueError as exc:
        return {"failed": True, "msg": str(exc)}
    sha256 = chosen["sha256"] if chosen["pinned"] else None
    url = dl.tarball_url(params.get("mirror") or "https://get.helm.sh", version, platform)
    dest = dl.cached_binary(params.get("cache_dir") or "~/.cache/kubevirtci.dra_cpu/helm", version, platform)
    bare = dl.release_name(version)[1:]
    if dl.is_executable(dest):
        return _result("download", dest, dest, bare, report + [report_cached(version, dest)])
    note = [] if sha256 else [report_not_pinned(version, platform, url)]
    if check_mode:
        return _result("download", dest, dest, bare, report + [report_would_download(url, sha256, dest)] + note,
                       missing=True)
    kwargs: dict[str, Any] = {"opener": opener} if opener else {}
    try:
        dl.download(url, dest, platform, sha256=sha256, timeout=params.get("timeout") or 60, **kwargs)
    except dl.DownloadError as exc:
        if sha256 and exc.kind == "mismatch":
            msg = dl.refusal_message(version, platform, url, sha256, exc.got)
        else:
            msg = dl.failure_message(version, url, sha256, exc)
        return {"failed": True, "msg": msg, "report": report + note}
    return _result("download", dest, dest, bare, report + [report_download(version, dest, sha256)] + note,
                   changed=True)
