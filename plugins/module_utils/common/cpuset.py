# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Parse and format Linux cpuset strings such as ``0-1,4,6-7``.

Pure functions, no cluster access. The syntax is the one of the kernel's
``cpuset`` files and of the driver's ``--reserved-cpus`` flag: a comma
separated list of CPU ids or inclusive ranges ``a-b`` with ``a <= b``.

Owns that syntax for every stage: validate (``dra_cpu_reserved_cpus``), preflight (reserved CPUs
against a node) and topology (a cell's CPUs, the sizing rule) read a cpuset the same way.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from collections.abc import Iterable

# Linux supports at most 8192 CPUs (CONFIG_NR_CPUS upper bound), so ids are 0..8191.
MAX_CPU_ID = 8191

EXAMPLE = "0-1,4,6-7"

_NUMBER = re.compile(r"^[0-9]+$")


class CpusetError(ValueError):
    """A cpuset string could not be parsed; ``str(exc)`` is the reason."""


def _parse_id(token: str, item: str, max_cpu: int) -> int:
    if token.startswith("-") or token.startswith("+"):
        raise CpusetError("'%s' is not a CPU id (CPU ids are non-negative integers)" % item)
    if not _NUMBER.match(token):
        raise CpusetError("'%s' is not a CPU id or a range a-b" % item)
    value = int(token)
    if value > max_cpu:
        raise CpusetError("CPU id %d is out of range (CPU ids go from 0 to %d)" % (value, max_cpu))
    return value


def parse_cpuset_detailed(text: object, max_cpu: int = MAX_CPU_ID) -> tuple[list[int], list[int]]:
    """Parse ``text`` and return ``(cpus, duplicates)``.

    ``cpus`` is the sorted list of distinct CPU ids; ``duplicates`` the sorted
    list of ids that were named more than once. An empty (or blank) string is
    the empty set. Raises CpusetError on a syntax error.
    """
    if text is None:
        return [], []
    if isinstance(text, bool):
        raise CpusetError("a boolean is not a cpuset")
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        raise CpusetError("expected a string, got %s" % type(text).__name__)
    text = text.strip()
    if not text:
        return [], []
    seen = set()
    duplicates = set()
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise CpusetError("empty element (two commas in a row, or a leading or trailing comma)")
        if item.startswith("-"):
            raise CpusetError("'%s' is negative (CPU ids are non-negative integers)" % item)
        if "-" in item:
            parts = item.split("-")
            if len(parts) != 2:
                raise CpusetError("'%s' is not a range a-b" % item)
            low_text, high_text = parts[0].strip(), parts[1].strip()
            if not high_text:
                raise CpusetError("range '%s' has no end" % item)
            low = _parse_id(low_text, item, max_cpu)
            high = _parse_id(high_text, item, max_cpu)
            if low > high:
                raise CpusetError("range %d-%d is descending" % (low, high))
            ids: range | list[int] = range(low, high + 1)
        else:
            ids = [_parse_id(item, item, max_cpu)]
        for cpu in ids:
            if cpu in seen:
                duplicates.add(cpu)
            seen.add(cpu)
    return sorted(seen), sorted(duplicates)


def parse_cpuset(text: object, max_cpu: int = MAX_CPU_ID, allow_duplicates: bool = False) -> list[int]:
    """Parse ``text`` into a sorted list of distinct CPU ids.

    Duplicated ids (``0-3,2``) are an error unless ``allow_duplicates``.
    """
    cpus, duplicates = parse_cpuset_detailed(text, max_cpu=max_cpu)
    if duplicates and not allow_duplicates:
        raise CpusetError("CPU %s listed more than once" % format_cpuset(duplicates))
    return cpus


def format_cpuset(cpus: Iterable[int | str]) -> str:
    """Format an iterable of CPU ids in canonical form: sorted, ranges merged.

    ``[0, 1, 4, 6, 7]`` -> ``'0-1,4,6-7'``; an empty iterable -> ``''``.
    """
    ids = sorted(set(int(c) for c in cpus))
    parts: list[str] = []
    start: int | None = None
    prev = 0  # set with start
    for cpu in ids:
        if start is None:
            start = prev = cpu
        elif cpu == prev + 1:
            prev = cpu
        else:
            parts.append(_span(start, prev))
            start = prev = cpu
    if start is not None:
        parts.append(_span(start, prev))
    return ",".join(parts)


def _span(start: int, end: int) -> str:
    if start == end:
        return str(start)
    return "%d-%d" % (start, end)
