# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Downloading a helm release: the build for this platform, its URL on the mirror and its place in the
cache, the tarball fetched and checked (``checksum.py`` says against what) before ``<os>-<arch>/helm``
alone is unpacked into place; a failure leaves nothing behind.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import hashlib
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from typing import Any

from ansible.module_utils.urls import open_url

# os.uname().machine -> helm's architecture name (the names helm publishes builds for)
ARCH = {
    "x86_64": "amd64",
    "amd64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "armv7l": "arm",
    "i386": "386",
    "i686": "386",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
    "riscv64": "riscv64",
}
_PLATFORM = re.compile(r"^(linux|darwin)-[a-z0-9]+$")
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
_CHUNK = 1024 * 1024


class DownloadError(Exception):
    """A download that was refused (``kind`` 'mismatch', with ``got``) or that failed ('fetch')."""

    def __init__(self, message: str, kind: str = "fetch", got: str | None = None, expected: str | None = None) -> None:
        super(DownloadError, self).__init__(message)
        self.kind = kind
        self.got = got
        self.expected = expected


def platform_of(system: str, machine: str) -> str:
    """helm's ``<os>-<arch>`` for ``os.uname()``'s sysname and machine, '' without a helm build."""
    name = "%s-%s" % (str(system or "").lower(), ARCH.get(str(machine or ""), ""))
    return name if _PLATFORM.match(name) else ""


def no_build_message(system: str, machine: str) -> str:
    return ("No helm build for %s/%s: install helm v3 >= 3.13 yourself and set dra_cpu_helm_binary "
            "to its path." % (system, machine))


def release_name(version: str) -> str:
    """``vX.Y.Z`` for a helm version given with or without its leading ``v``."""
    version = str(version or "").strip()
    return version if version.startswith("v") else "v" + version


def tarball_url(mirror: str, version: str, platform: str) -> str:
    return "%s/helm-%s-%s.tar.gz" % (str(mirror).rstrip("/"), release_name(version), platform)


def version_dir(cache_dir: str, version: str) -> str:
    return os.path.join(os.path.expanduser(cache_dir), release_name(version))


def cached_binary(cache_dir: str, version: str, platform: str) -> str:
    return os.path.join(version_dir(cache_dir, version), platform, "helm")


def is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def parse_sha256sum(text: str, name: str) -> str | None:
    """The digest a ``.sha256sum`` file gives for file ``name`` (None when it gives none).

    Accepts ``<sha256>`` alone, ``<sha256>  <name>`` (also ``*<name>``, ``./<name>``) and a list
    of such lines, where the line naming ``name`` counts; a single line naming another file does not.
    """
    lines = [line.split() for line in (text or "").splitlines() if line.strip()]
    for fields in lines:
        if not _SHA256.match(fields[0]):
            continue
        if len(fields) == 1 and len(lines) == 1:
            return fields[0].lower()
        if len(fields) > 1 and os.path.basename(fields[1].lstrip("*")) == name:
            return fields[0].lower()
    return None


def refusal_message(version: str, platform: str, url: str, pinned: str, got: str | None) -> str:
    return ("Refusing helm %s for %s from %s: dra_cpu_helm_checksums pins sha256 %s, the mirror served "
            "a file with sha256 %s. Nothing was unpacked and nothing was installed. Point "
            "dra_cpu_helm_mirror at a mirror that serves helm's own release files, or put helm v3 >= "
            "3.13 on PATH / in dra_cpu_helm_binary." % (release_name(version), platform, url, pinned, got))


def failure_message(version: str, url: str, sha256: str | None, error: DownloadError) -> str:
    """A download that failed (or whose tarball differs from the mirror's own .sha256sum)."""
    check = "pinned %s" % sha256 if sha256 else url + ".sha256sum"
    mismatch = ("The tarball does not match its published sha256: the mirror serves a different file. "
                if getattr(error, "kind", "") == "mismatch" else "")
    return ("Could not fetch a verified helm %s from %s (checksum %s); nothing was installed. %s"
            "Cause: %s. Set dra_cpu_helm_mirror to a mirror of https://get.helm.sh, or put helm v3 >= "
            "3.13 on PATH / in dra_cpu_helm_binary."
            % (release_name(version), url, check, mismatch, str(error).rstrip(".")))


def _read(url: str, timeout: int, opener: Callable[..., Any]) -> Any:
    try:
        response = opener(url, timeout=timeout)
    except Exception as exc:  # urllib's URLError/HTTPError, socket errors, ValueError for a bad URL
        raise DownloadError("cannot fetch %s: %s" % (url, exc))
    return response


def mirror_sha256(url: str, timeout: int = 60, opener: Callable[..., Any] = open_url) -> str:
    """The sha256 the mirror publishes for ``url`` in ``<url>.sha256sum``."""
    response = _read(url + ".sha256sum", timeout, opener)
    try:
        text = response.read(64 * 1024).decode("utf-8", "replace")
    except Exception as exc:
        raise DownloadError("cannot fetch %s.sha256sum: %s" % (url, exc))
    finally:
        response.close()
    digest = parse_sha256sum(text, url.rsplit("/", 1)[-1])
    if not digest:
        raise DownloadError("%s.sha256sum gives no sha256 for %s" % (url, url.rsplit("/", 1)[-1]))
    return digest


def _fetch(url: str, directory: str, timeout: int, opener: Callable[..., Any]) -> tuple[str, str]:
    """The tarball in a temporary file in ``directory``: (path, sha256)."""
    response = _read(url, timeout, opener)
    fd, path = tempfile.mkstemp(prefix=".helm-", suffix=".tar.gz.part", dir=directory)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            while True:
                chunk = response.read(_CHUNK)
                if not chunk:
                    break
                digest.update(chunk)
                out.write(chunk)
    except Exception as exc:
        _remove(path)
        raise DownloadError("cannot fetch %s: %s" % (url, exc))
    finally:
        response.close()
    return path, digest.hexdigest()


def _unpack(tarball: str, member_name: str, dest: str) -> None:
    """Only ``member_name`` of ``tarball``, as the executable ``dest`` (moved into place whole)."""
    try:
        with tarfile.open(tarball, "r:gz") as tar:
            try:
                member = tar.getmember(member_name)
            except KeyError:
                raise DownloadError("the tarball has no %s" % member_name)
            if not member.isfile():
                raise DownloadError("%s in the tarball is not a regular file" % member_name)
            source = tar.extractfile(member)
            if source is None:  # a regular file always has one
                raise DownloadError("%s in the tarball is not a regular file" % member_name)
            fd, part = tempfile.mkstemp(prefix=".helm-", suffix=".part", dir=os.path.dirname(dest))
            try:
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(source, out, _CHUNK)
                os.chmod(part, 0o755)
                os.rename(part, dest)
            except Exception:
                _remove(part)
                raise
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise DownloadError("cannot unpack %s from the tarball: %s" % (member_name, exc))


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _makedirs(path: str, made: list[str]) -> None:
    """``os.makedirs`` recording the directories it creates in ``made`` (outermost first)."""
    if path and not os.path.isdir(path):
        _makedirs(os.path.dirname(path), made)
        os.mkdir(path, 0o755)
        made.append(path)


def download(url: str, dest: str, platform: str, sha256: str | None = None, timeout: int = 60,
             opener: Callable[..., Any] = open_url) -> str:
    """Fetch ``url``, verify it, unpack ``<platform>/helm`` as ``dest``.

    ``sha256``: the pinned digest, or None to check against the mirror's ``<url>.sha256sum``.
    Returns the sha256 verified. Raises DownloadError (``kind`` 'mismatch' with ``got`` when the
    tarball differs) after removing everything it wrote.
    """
    made: list[str] = []
    try:
        try:
            _makedirs(os.path.dirname(dest), made)
        except OSError as exc:
            raise DownloadError("cannot create %s: %s" % (os.path.dirname(dest), exc))
        expected = sha256.strip().lower() if sha256 else mirror_sha256(url, timeout, opener)
        tarball, got = _fetch(url, os.path.dirname(os.path.dirname(dest)), timeout, opener)
        try:
            if got != expected:
                raise DownloadError("The checksum for %s did not match %s; it was %s"
                                    % (url, expected, got), kind="mismatch", got=got, expected=expected)
            _unpack(tarball, platform + "/helm", dest)
        finally:
            _remove(tarball)
        return expected
    except BaseException:
        for directory in reversed(made):
            try:
                os.rmdir(directory)
            except OSError:
                pass
        raise
