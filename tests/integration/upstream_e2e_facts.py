"""How the facts of upstream_e2e_exclusions.py are checked, and what the suite's result must be.

Owns: finding a spec in the suite's Go source by its full name (ginkgo's Describe/Context/When/It tree,
`When` prefixing "when "), the two source scopes of a spec (its own `It` body; the setup code of the
containers that enclose it, without their other specs and containers), a package constant; checking each
kind of fact against that source, the machine (`Machine`) and the installed release (`Installed`); the
verdict of an exclusion (it stands while one of its reasons holds in full; every fact is reported); the
number of specs that must pass (`expected_passes`) and the operations the after-suite contextual-logging
check examined (`operations_examined`). Pure functions: test_upstream_e2e.py gathers the inputs,
tests/unit/harness/test_upstream_e2e_exclusions.py tests these rules with changed inputs.
"""
import dataclasses
import glob
import os
import re
from typing import Optional

E2E = "test/e2e"
TESTER = "test/image/dracputester/app.go"
_CALL = re.compile(r'\bginkgo\.(Describe|Context|When|It)\(\s*"((?:[^"\\]|\\.)*)"')
_OPERATIONS = re.compile(r'"msg"="detected operations" "count"=(\d+)')


@dataclasses.dataclass
class Machine:
    """What this machine and its node give: online CPUs minus the reserved ones, /sys/fs/cgroup's type,
    the node's allocatable millicpus."""
    available_cpus: int
    cgroup2: bool
    allocatable_milli: int


@dataclasses.dataclass
class Installed:
    """What the installed release says: the driver container's CPU request (the DaemonSet's, what the
    scheduler counts) and the release's values' (`helm get values --all`); `--group-by` in the
    DaemonSet's args and the values' `args.groupBy`; whether the args carry `--expose-pcie-roots` and the
    values' `args.exposePCIeRoots`."""
    cpu_request_milli: Optional[int]
    values_cpu_request_milli: Optional[int]
    group_by: Optional[str]
    values_group_by: Optional[str]
    expose_pcie_roots: bool = False
    values_expose_pcie_roots: Optional[bool] = None


@dataclasses.dataclass
class Spec:
    """A spec found in the source: its file, its own body, its enclosing containers' setup code."""
    path: str
    body: str
    setup: str


def milli(quantity) -> Optional[int]:
    """A CPU quantity ("100m", "2", 0.5) in millicpus; None when absent."""
    if quantity is None or quantity == "":
        return None
    text = str(quantity)
    return int(text[:-1]) if text.endswith("m") else int(round(float(text) * 1000))


def _mask(text: str) -> str:
    """`text` with Go comments and the insides of strings and runes blanked (braces there do not count)."""
    out, i, n = list(text), 0, len(text)

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        if text.startswith("//", i) or text.startswith("/*", i):
            j = text.find("\n" if text[i + 1] == "/" else "*/", i + 2)
            j = n if j < 0 else (j if text[i + 1] == "/" else j + 2)
            blank(i, j)
            i = j
        elif text[i] in "\"'`":
            quote, j = text[i], i + 1
            while j < n and text[j] != quote:
                j += 2 if quote != "`" and text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _block_end(masked: str, open_at: int) -> int:
    depth = 0
    for k in range(open_at, len(masked)):
        if masked[k] == "{":
            depth += 1
        elif masked[k] == "}":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(masked)


def ginkgo_nodes(text: str) -> list:
    """(kind, text as ginkgo names it, start, body start, body end) of every Describe/Context/When/It."""
    masked, nodes = _mask(text), []
    for m in _CALL.finditer(text):
        if masked[m.start()] != "g":
            continue   # inside a string or comment
        func = masked.find("func(", m.end())
        brace = masked.find("{", masked.find(")", func)) if func >= 0 else -1
        if brace < 0:
            continue
        name = ("when " if m.group(1) == "When" else "") + bytes(m.group(2), "utf-8").decode("unicode_escape")
        nodes.append((m.group(1), name, m.start(), brace, _block_end(masked, brace)))
    return nodes


def _ancestors(nodes: list, node) -> list:
    return [a for a in nodes if a is not node and a[1] != "It" and a[3] < node[2] and node[4] <= a[4]]


def find_spec(src: str, full_name: str) -> Optional[Spec]:
    """The spec of `full_name` (its containers' texts and its own, space-joined) in the suite's source."""
    for path in sorted(glob.glob(os.path.join(src, E2E, "*.go"))):
        with open(path) as f:
            text = f.read()
        nodes = ginkgo_nodes(text)
        for node in (n for n in nodes if n[0] == "It"):
            ancestors = sorted(_ancestors(nodes, node), key=lambda a: a[2])
            if " ".join([a[1] for a in ancestors] + [node[1]]) != full_name:
                continue
            setup = []
            for a in ancestors:
                own = list(text[a[3]:a[4]])
                for child in nodes:   # blank what is nested in it: other specs and containers
                    if child is not a and a[3] < child[2] and child[4] <= a[4]:
                        own[child[2] - a[3]:child[4] - a[3]] = " " * (child[4] - child[2])
                setup.append("".join(own))
            return Spec(os.path.relpath(path, src), text[node[3]:node[4]], "\n".join(setup))
    return None


def package_constant(src: str, name: str) -> Optional[str]:
    """The value of constant `name` in the e2e package (`name = value` on its own line)."""
    for path in sorted(glob.glob(os.path.join(src, E2E, "*.go"))):
        with open(path) as f:
            m = re.search(r"(?m)^\s*%s\s*=\s*(\S+)\s*$" % re.escape(name), f.read())
        if m:
            return m.group(1)
    return None


def check_fact(fact: tuple, spec: Optional[Spec], src: str, machine: Machine, installed: Installed):
    """(holds, what was found) for one fact of the spec (upstream_e2e_exclusions.py lists the kinds)."""
    kind = fact[0]
    if kind in ("spec", "setup"):
        if spec is None:
            return False, "the spec is not in the suite's source"
        scope = spec.body if kind == "spec" else spec.setup
        found = re.search(fact[1], scope)
        where = "its body" if kind == "spec" else "its containers' setup"
        return bool(found), "%s (%s) %s %r" % (where, spec.path, "says" if found else "no longer says", fact[1])
    if kind == "const":
        value = package_constant(src, fact[1])
        return value == str(fact[2]), "package constant %s = %s (pinned %s)" % (fact[1], value, fact[2])
    if kind == "tester":
        try:
            with open(os.path.join(src, TESTER)) as f:
                found = re.search(fact[1], f.read())
        except OSError as exc:
            return False, "%s not read: %s" % (TESTER, exc)
        return bool(found), "%s %s %r" % (TESTER, "says" if found else "no longer says", fact[1])
    if kind == "available_cpus_below":
        return machine.available_cpus < fact[1], "%d CPUs available (below %d?)" % (machine.available_cpus, fact[1])
    if kind == "allocatable_after_driver_below":
        request = installed.cpu_request_milli
        left = None if request is None else machine.allocatable_milli - request
        return left is not None and left < fact[1], (
            "node allocatable %dm - the installed driver's CPU request %sm (the release's values: %sm) = %sm "
            "(below %dm?)" % (machine.allocatable_milli, request, installed.values_cpu_request_milli, left, fact[1]))
    if kind == "group_by_is_not":
        holds = installed.group_by is not None and installed.group_by != fact[1] \
            and installed.values_group_by in (None, installed.group_by)
        return holds, "installed --group-by=%s (the release's values: args.groupBy=%s; not %s?)" % (
            installed.group_by, installed.values_group_by, fact[1])
    if kind == "cgroup_v1":
        return not machine.cgroup2, "/sys/fs/cgroup is %s" % ("cgroup2" if machine.cgroup2 else "not cgroup2")
    return False, "unknown kind of fact %r" % (fact,)


def verdict(spec_name: str, reasons: list, src: str, machine: Machine, installed: Installed):
    """(stands, report lines): the exclusion stands while one reason holds in full; every fact reported."""
    spec = find_spec(src, spec_name)
    lines, stands = ["%s:" % spec_name], False
    for why, facts in reasons:
        results = [check_fact(f, spec, src, machine, installed) for f in facts]
        holds = bool(results) and all(h for h, _ in results)
        stands = stands or holds
        lines.append("  reason %s: %s" % ("HOLDS" if holds else "does not hold", why))
        lines += ["    [%s] %s" % ("x" if h else " ", said) for h, said in results]
    lines.append("  => %s" % ("excluded" if stands else "NO REASON HOLDS: the spec must run"))
    return stands, lines


def expected_passes(run: dict, own_skips_expected: dict):
    """(the number of RUN specs that must pass, why): every RUN spec, but one that may skip itself when
    its skip is expected here (`own_skips_expected`: spec -> (expected, why))."""
    passing, why = 0, []
    for spec, own_skip in run.items():
        skips, because = own_skips_expected.get(spec, (False, ""))
        if own_skip and skips:
            why.append("%s: skips itself (%r): %s" % (spec, own_skip, because))
        else:
            passing += 1
            why.append("%s: must pass%s" % (spec, " (%s)" % because if because else ""))
    return passing, why


def operations_examined(after_suite_output: str) -> Optional[int]:
    """How many operations upstream's contextual-logging check examined ("detected operations"), or None
    when it did not say."""
    counts = _OPERATIONS.findall(after_suite_output or "")
    return int(counts[-1]) if counts else None
