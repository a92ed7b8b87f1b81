"""Linux cpuset strings ("0-3,8,10-11") <-> sorted lists of CPU ids.

Kept inside the simulator so the test cluster does not depend on the collection's own code
(the collection is what the cluster tests).
Owns: parse/format only. Must not: import anything of the collection (plugins/).
"""
from __future__ import annotations

import re

_PART = re.compile(r"^(\d+)(?:-(\d+))?$")


class CpusetError(ValueError):
    pass


def parse(text: str | None) -> list[int]:
    """Parse a cpuset list. '' / None -> []. Raises CpusetError on bad syntax."""
    if text is None:
        return []
    text = str(text).strip()
    if not text:
        return []
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        m = _PART.match(part)
        if not m:
            raise CpusetError(f"invalid cpuset {text!r}: bad element {part!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise CpusetError(f"invalid cpuset {text!r}: range {part} is descending")
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def format(cpus) -> str:  # noqa: A001 - mirrors the module's vocabulary
    """Format CPU ids as a canonical cpuset list ('0-3,8')."""
    ids = sorted(set(int(c) for c in cpus))
    out = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)
