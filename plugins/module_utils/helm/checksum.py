# SPDX-License-Identifier: Apache-2.0
"""Which sha256 a downloaded helm tarball is checked against: the collection's pins with
``dra_cpu_helm_checksums`` laid over them, else the mirror's ``.sha256sum`` (and the role says so).
Why pins: docs/internals.md.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from typing import Any

VARIABLE = "dra_cpu_helm_checksums"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_PLATFORM = re.compile(r"^[a-z0-9]+-[a-z0-9]+$")


def check_checksums(checksums: Any, variable: str = VARIABLE) -> list[str]:
    """Errors (strings naming ``variable`` and the bad value) for a malformed checksum map."""
    if checksums is None:
        return []
    if not isinstance(checksums, dict):
        return ["%s: %r is not a mapping; expected {version: {platform: sha256}}, for example "
                "{'v3.22.0': {'linux-amd64': '<64 hex digits>'}}" % (variable, checksums)]
    errors = []
    for version, platforms in checksums.items():
        where = "%s[%r]" % (variable, version)
        if not isinstance(platforms, dict):
            errors.append("%s: %r is not a mapping of platform (such as linux-amd64) to sha256"
                          % (where, platforms))
            continue
        for platform, digest in platforms.items():
            if not _PLATFORM.match(str(platform)):
                errors.append("%s: platform %r is not <os>-<arch> (such as linux-amd64)" % (where, platform))
            if not isinstance(digest, str) or not _SHA256.match(digest.strip().lower()):
                errors.append("%s[%r]: %r is not a sha256 (64 hex digits)" % (where, platform, digest))
    return errors


def _version_keys(version: str) -> list[str]:
    version = str(version).strip()
    bare = version[1:] if version.startswith("v") else version
    return [version, "v" + bare, bare]


def choose_checksum(checksums: Any, version: str, platform: str) -> dict[str, Any]:
    """The check for helm ``version`` on ``platform``.

    Returns ``{"pinned": True, "sha256": <hex>}`` when the map pins it (a version is looked up with
    and without its leading ``v``), else ``{"pinned": False, "sha256": None}`` (use the mirror's
    ``.sha256sum``). Raises ValueError listing the problems of a malformed map.
    """
    errors = check_checksums(checksums)
    if errors:
        raise ValueError("; ".join(errors))
    for key in _version_keys(version):
        platforms = (checksums or {}).get(key)
        if platforms and platform in platforms:
            return {"pinned": True, "sha256": platforms[platform].strip().lower()}
    return {"pinned": False, "sha256": None}


def merge_checksums(pinned: dict[str, Any] | None, overrides: dict[str, Any] | str | None) -> dict[str, Any] | str:
    """The collection's pins with ``overrides`` (the role variable) laid over them, per platform."""
    merged: dict[str, Any] = {}
    for source in (pinned or {}, overrides or {}):
        if not isinstance(source, dict):
            return source  # reported by check_checksums
        for version, platforms in source.items():
            if isinstance(platforms, dict) and isinstance(merged.get(version), dict):
                merged[version] = dict(merged[version], **platforms)
            else:
                merged[version] = platforms
    return merged
