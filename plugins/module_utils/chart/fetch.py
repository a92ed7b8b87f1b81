# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Fetching the chart the role installs (``helm pull`` into a temporary directory, the ``.tgz`` kept),
helm's errors classified into the role's message, the chart's digest and the parsed layout cached by
it (``<cache_dir>/charts/<digest>.json``). helm runs through the ``run(argv, env)`` it is given.
Why the cache saves the parsing, not the pull: docs/internals.md.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

# 2: the layout holds args_keys (chart/layout.py)
CACHE_FORMAT = 2

# helm's words for "the reference is fine, this version is not there" (OCI registries, chart repos)
NOT_IN_VERSION = re.compile(r"not found|manifest unknown|no chart version|unknown tag", re.IGNORECASE)
_DIGEST = re.compile(r"^Digest:\s*(sha256:[0-9a-f]{64})\s*$", re.MULTILINE)


class FetchError(Exception):
    """The chart cannot be fetched; ``str()`` is the role's failure message."""


def is_local(chart: str) -> bool:
    """A chart directory or .tgz on this machine (read where it is, never pulled)."""
    return bool(chart) and os.path.exists(os.path.expanduser(chart))


def pull_argv(helm: str, chart: str, destination: str, version: str = "", plain_http: bool = False) -> list[str]:
    argv = [helm, "pull", chart, "--destination", destination]
    if version:
        argv += ["--version", version]
    if plain_http:
        argv.append("--plain-http")
    return argv


def pull_env(ca_file: str = "") -> dict[str, Any]:
    return {"SSL_CERT_FILE": os.path.expanduser(ca_file)} if ca_file else {}


def error_line(stderr: str, rc: int) -> str:
    """helm's last line of error output, or its exit code."""
    lines = (stderr or "").strip().split("\n")
    return lines[-1].strip() or "helm exited with %s" % rc


def fetch_failure(chart: str, chart_version: str, stderr: str, rc: int) -> str:
    """The role's message for a ``helm pull`` that failed with ``stderr`` / ``rc``."""
    error = error_line(stderr, rc)
    if NOT_IN_VERSION.search(error):
        hint = "The chart exists but not in this version: pick one the registry has."
    else:
        hint = ("Check the reference, that the registry or repository answers, and "
                "dra_cpu_chart_plain_http / dra_cpu_chart_ca_file.")
    return ("dra_cpu_chart '%s' with dra_cpu_chart_version '%s' cannot be fetched, so nothing was "
            "installed: %s. %s" % (chart, chart_version, error, hint))


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def digest_of(output: str, tgz: str) -> str:
    """helm's ``Digest:`` line (OCI) in ``output``, else the sha256 of ``tgz``."""
    found = _DIGEST.search(output or "")
    return found.group(1) if found else sha256_file(tgz)


def cache_path(cache_dir: str, digest: str) -> str:
    if not cache_dir or not digest:
        return ""
    algo, _sep, hexpart = digest.partition(":")
    if not re.match(r"^[0-9a-f]{64}$", hexpart) or algo != "sha256":
        return ""
    return os.path.join(os.path.expanduser(cache_dir), "charts", "%s-%s.json" % (algo, hexpart))


def cache_read(cache_dir: str, digest: str) -> dict[str, Any] | None:
    """The cached entry for ``digest`` ({metadata, image_defaults, layout, schema_requirements}) or None."""
    path = cache_path(cache_dir, digest)
    if not path:
        return None
    try:
        with open(path) as fh:
            entry = json.load(fh)
    except (OSError, IOError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT or entry.get("digest") != digest:
        return None
    return entry


def cache_write(cache_dir: str, digest: str, entry: dict[str, Any]) -> str:
    """Write ``entry`` for ``digest`` atomically; returns the path, or '' when it could not."""
    path = cache_path(cache_dir, digest)
    if not path:
        return ""
    entry = dict(entry, format=CACHE_FORMAT, digest=digest)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".chart-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump(entry, fh, sort_keys=True)
        os.replace(tmp, path)
    except (OSError, IOError, TypeError, ValueError):
        return ""
    return path


def run_subprocess(argv: list[str], env: dict[str, Any]) -> tuple[int, str, str]:
    """(rc, stdout, stderr) of ``argv`` with ``env`` laid over this process's environment."""
    full = dict(os.environ)
    full.update(env or {})
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full)
    except OSError as exc:
        return 127, "", "%s: %s" % (argv[0], exc)
    out, err = proc.communicate()
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


class PulledChart(object):
    """A chart pulled into a temporary directory; ``cleanup()`` removes it."""

    def __init__(self, tmpdir: str, tgz: str, digest: str) -> None:
        self.tmpdir = tmpdir
        self.tgz = tgz
        self.digest = digest

    def cleanup(self) -> None:
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = ""


def fetch_chart(run: Callable[..., tuple[int, str, str]], helm: str, chart: str, chart_version: str = "",
                plain_http: bool = False, ca_file: str = "", message_version: str | None = None) -> PulledChart:
    """``helm pull`` ``chart`` into a new temporary directory. Returns a PulledChart (the caller
    calls ``cleanup()``); raises FetchError with the role's message (the directory already removed)."""
    tmpdir = tempfile.mkdtemp(prefix="dra-cpu-chart-")
    try:
        rc, out, err = run(pull_argv(helm, chart, tmpdir, chart_version, plain_http), pull_env(ca_file))
        if rc != 0:
            raise FetchError(fetch_failure(chart, chart_version if message_version is None else message_version,
                                           err, rc))
        tgzs = sorted(f for f in os.listdir(tmpdir) if f.endswith(".tgz"))
        if len(tgzs) != 1:
            raise FetchError(fetch_failure(chart, chart_version if message_version is None else message_version,
                                           "helm pull left %d chart archives" % len(tgzs), rc))
        tgz = os.path.join(tmpdir, tgzs[0])
        return PulledChart(tmpdir, tgz, digest_of("%s\n%s" % (out, err), tgz))
    except BaseException:
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise
