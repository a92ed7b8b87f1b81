# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Versions (pure): what a Kubernetes server, CRI runtime (``containerd://2.0.3``), chart (strict
semver) or helm (``vX.Y.Z``) version may look like and how two compare. validate accepts the role's
versions with it; helm, chart and preflight compare the ones they find.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from typing import Any

_LOOSE = re.compile(
    r"^\s*v?(?P<major>0|[1-9][0-9]*)"
    r"(?:\.(?P<minor>0|[1-9][0-9]*))?"
    r"(?:\.(?P<patch>0|[1-9][0-9]*))?"
    r"(?:-(?P<pre>[0-9A-Za-z.-]+))?"
    r"(?:\+(?P<build>[0-9A-Za-z.+-]+))?\s*$"
)

_SEMVER = re.compile(
    r"^(?P<major>0|[1-9][0-9]*)\.(?P<minor>0|[1-9][0-9]*)\.(?P<patch>0|[1-9][0-9]*)"
    r"(?:-(?P<pre>(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
    r"(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)

_HELM = re.compile(r"^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")


class VersionError(ValueError):
    """A version string could not be parsed."""


class Version(object):
    """A parsed version: major.minor.patch, an optional pre-release and build.

    Ordering follows semver: pre-releases sort before the release
    (``1.36.0-alpha.1 < 1.36.0``); the build metadata is ignored.
    """

    __slots__ = ("major", "minor", "patch", "pre", "build", "text")

    def __init__(self, major: int | str, minor: str | int = 0, patch: str | int = 0, pre: str | None = None,
                 build: str | None = None, text: str | None = None) -> None:
        self.major = int(major)
        self.minor = int(minor)
        self.patch = int(patch)
        self.pre = pre or None
        self.build = build or None
        self.text = text if text is not None else self.__str__()

    def __str__(self) -> str:
        out = "%d.%d.%d" % (self.major, self.minor, self.patch)
        if self.pre:
            out += "-" + self.pre
        if self.build:
            out += "+" + self.build
        return out

    def __repr__(self) -> str:
        return "Version(%r)" % str(self)

    @property
    def release(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    def _key(self) -> tuple[tuple[int, int, int], int, tuple[tuple[int, int, str], ...]]:
        if self.pre is None:
            return (self.release, 1, ())
        parts: list[tuple[int, int, str]] = []
        for ident in self.pre.split("."):
            if ident.isdigit():
                parts.append((0, int(ident), ""))
            else:
                parts.append((1, 0, ident))
        return (self.release, 0, tuple(parts))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key() == other._key()

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __lt__(self, other: "Version | str") -> bool:
        return self._key() < _coerce(other)._key()

    def __le__(self, other: "Version | str") -> bool:
        return self._key() <= _coerce(other)._key()

    def __gt__(self, other: "Version | str") -> bool:
        return self._key() > _coerce(other)._key()

    def __ge__(self, other: "Version | str") -> bool:
        return self._key() >= _coerce(other)._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _coerce(value: Version | str) -> Version:
    if isinstance(value, Version):
        return value
    return parse_version(value)


def parse_version(text: str) -> Version:
    """Parse a loose version: optional ``v``, minor and patch optional.

    ``'v1.36.3'``, ``'1.36'``, ``'v1.36.0-alpha.1+abc'``, ``'2.0.3'``.
    Raises VersionError.
    """
    if isinstance(text, Version):
        return text
    if text is None:
        raise VersionError("no version given")
    text = str(text)
    match = _LOOSE.match(text)
    if not match:
        raise VersionError("'%s' is not a version like 1.36.3" % text)
    return Version(
        match.group("major"),
        match.group("minor") or 0,
        match.group("patch") or 0,
        match.group("pre"),
        match.group("build"),
        text=text.strip(),
    )


def parse_kube_version(value: dict[str, Any] | str) -> Version:
    """Parse a Kubernetes server version.

    ``value`` is a gitVersion string (``v1.36.3``) or the ``/version`` dict
    (``{"major": "1", "minor": "36", "gitVersion": "v1.36.3"}``); the
    gitVersion wins, ``major``/``minor`` (with a possible ``+`` suffix, as
    some distributions report) are the fallback.
    """
    if isinstance(value, dict):
        git = value.get("gitVersion") or value.get("git_version")
        if git:
            try:
                return parse_version(git)
            except VersionError:
                pass
        major = str(value.get("major", "")).rstrip("+")
        minor = str(value.get("minor", "")).rstrip("+")
        if major.isdigit() and minor.isdigit():
            return Version(major, minor, 0, text="%s.%s" % (major, minor))
        raise VersionError("cannot read a version from %r" % (value,))
    return parse_version(value)


def parse_runtime_version(text: str | None) -> tuple[str, Version | None]:
    """Split a CRI runtime version ``<name>://<version>``.

    Returns ``(name, Version or None)``; ``name`` is lower-cased (``cri-o``,
    ``containerd``, ``docker``...). A version that cannot be parsed gives
    ``None``. An empty value gives ``('', None)``.
    """
    if not text:
        return "", None
    text = str(text).strip()
    if "://" in text:
        name, _sep, version = text.partition("://")
    else:
        name, version = text, ""
    name = name.strip().lower()
    try:
        parsed = parse_version(version) if version else None
    except VersionError:
        parsed = None
    return name, parsed


def version_at_least(version: Version | str, minimum: Version | str, ignore_prerelease: bool = True) -> bool:
    """True when ``version >= minimum``.

    With ``ignore_prerelease`` (the default) only major.minor.patch are
    compared, so ``v1.36.0-alpha.1`` counts as 1.36 (a release candidate of
    1.36 has the 1.36 features).
    """
    v = _coerce(version)
    m = _coerce(minimum)
    if ignore_prerelease:
        return v.release >= m.release
    return v >= m


def is_semver(text: str) -> bool:
    """True for a strict semver 2.0 string (``0.3.0``, ``1.0.0-rc.1+b5``)."""
    return bool(text) and isinstance(text, str) and bool(_SEMVER.match(text))


def is_helm_version(text: str) -> bool:
    """True for a helm release tag ``vX.Y.Z``."""
    return bool(text) and isinstance(text, str) and bool(_HELM.match(text))


# the first Kubernetes whose kube-scheduler gives its allocator ListTypeAttributes, so that matchAttribute
# on a list attribute is a set intersection (pkg/scheduler/framework/plugins/dynamicresources/
# dynamicresources.go AllocatorFeatures: absent in v1.36.3, present in v1.37.2)
SCHEDULER_LIST_ATTRIBUTES_MIN = "1.37.0"


def scheduler_matches_lists(version: dict[str, Any] | str) -> bool | None:
    """Whether the kube-scheduler of this server version matches list attributes (None: unreadable)."""
    try:
        parsed = parse_kube_version(version)
    except VersionError:
        return None
    return parsed.release >= parse_version(SCHEDULER_LIST_ATTRIBUTES_MIN).release
