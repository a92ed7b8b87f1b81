"""The upstream e2e exclusions (tests/integration/upstream_e2e_exclusions.py) and the rules that check
them (upstream_e2e_facts.py): the lists are well formed (each exclusion has reasons, each reason facts of a
known kind; RUN and EXCLUDED apart; the --ginkgo.skip regex matches each excluded name literally); a spec's
source facts are read from its own body or its containers' setup only (a regex true elsewhere in the file
does not hold); an exclusion stands while one reason holds in full (a reason with one stale fact does not
hold, another full reason keeps the exclusion; with none it falls) and every fact is reported; the facts
about the install read the installed release (groupBy, the driver's CPU request); the exact number of
passes and the contextual-logging check's operation count. Against a small Go suite written here and,
when the Go module cache holds it, upstream's v0.2.0 source itself. Also upstream's images' layout
(cluster_images.files_layer): the files at the root, 0755."""
import glob
import os
import re
import sys
import tarfile

import pytest

HERE = os.path.dirname(__file__)
for d in (os.path.join(HERE, "..", "..", "integration"), os.path.join(HERE, "..", "..", "cluster")):
    if os.path.abspath(d) not in sys.path:
        sys.path.insert(0, os.path.abspath(d))

import cluster_images  # noqa: E402  pylint: disable=wrong-import-position
import upstream_e2e_facts as F  # noqa: E402  pylint: disable=wrong-import-position
from upstream_e2e_exclusions import EXCLUDED, PCIE, PORT_BUGS, RUN  # noqa: E402  pylint: disable=wrong-import-position

KINDS = {"spec": 2, "setup": 2, "const": 3, "tester": 2, "available_cpus_below": 2,
         "allocatable_after_driver_below": 2, "group_by_is_not": 2, "cgroup_v1": 1}
HERE_MACHINE = F.Machine(available_cpus=1, cgroup2=False, allocatable_milli=2000)
HERE_INSTALL = F.Installed(cpu_request_milli=100, values_cpu_request_milli=100, group_by="numanode",
                           values_group_by="numanode", expose_pcie_roots=True, values_expose_pcie_roots=True)

SUITE = '''package e2e

const (
    minCPUs = 3
)

// ginkgo.It("a spec in a comment", func() { {{{ })
var _ = ginkgo.Describe("Sharing", func() {
    ginkgo.BeforeAll(func() {
        log("setup of the describe {")
    })
    ginkgo.When("two pods", func() {
        ginkgo.JustBeforeEach(func() {
            if available < minCPUs {
                ginkgo.Skip("need minCPUs")
            }
        })
        ginkgo.It("shares with two containers", func() {
            c1 := Container{Name: "one", CPU: 1}
            c2 := Container{Name: "two", CPU: 1}
        })
        ginkgo.It("shares with one \\"container\\"", func() {
            c1 := Container{Name: "one", CPU: 1, Note: "}"}
            ginkgo.Skip("inner skip")
        })
    })
    ginkgo.Context("elsewhere", func() {
        ginkgo.BeforeEach(func() { ginkgo.Skip("other context") })
        ginkgo.It("stands alone", func() {})
    })
})
'''
TWO = "Sharing when two pods shares with two containers"
ONE = 'Sharing when two pods shares with one "container"'
TWO_CONTAINERS = r'(?s)Name: "one", CPU: 1.*Name: "two", CPU: 1'


@pytest.fixture
def src(tmp_path):
    (tmp_path / "test" / "e2e").mkdir(parents=True)
    (tmp_path / "test" / "e2e" / "suite_test.go").write_text(SUITE)
    (tmp_path / "test" / "image" / "dracputester").mkdir(parents=True)
    (tmp_path / "test" / "image" / "dracputester" / "app.go").write_text('cpusetFile = "cpuset.cpus.effective"\n')
    return str(tmp_path)


def test_every_exclusion_has_reasons_of_known_facts():
    assert len(EXCLUDED) == 6 and len(RUN) == 6
    assert not set(EXCLUDED) & set(RUN)
    for spec, reasons in EXCLUDED.items():
        assert reasons, spec
        for why, facts in reasons:
            assert why.strip() and facts, (spec, why)
            for fact in facts:
                assert KINDS.get(fact[0]) == len(fact), (spec, fact)
                if fact[0] in ("spec", "setup", "tester"):
                    re.compile(fact[1])
    # the docstring names every kind checked, and check_fact knows each
    import upstream_e2e_exclusions as X   # pylint: disable=import-outside-toplevel
    for kind in KINDS:
        assert '("%s"' % kind in X.__doc__, kind
        args = {"const": ("x", 1), "available_cpus_below": (1,), "allocatable_after_driver_below": (1,)}.get(
            kind, ("x",) * (KINDS[kind] - 1))
        assert not F.check_fact((kind,) + args, None, "/nonexistent", HERE_MACHINE,
                                HERE_INSTALL)[1].startswith("unknown kind"), kind
    assert F.check_fact(("no such kind",), None, "/nonexistent", HERE_MACHINE, HERE_INSTALL) == (
        False, "unknown kind of fact ('no such kind',)")


def test_the_skip_regex_matches_each_excluded_spec_and_no_run_spec():
    skip = re.compile("|".join(re.escape(s) for s in EXCLUDED))
    assert all(skip.search(s) for s in EXCLUDED)
    assert not any(skip.search(s) for s in RUN)


def test_a_spec_is_found_by_its_full_name_with_its_own_body_and_setup(src):
    nodes = F.ginkgo_nodes(SUITE)
    assert [node[:2] for node in nodes] == [
        ("Describe", "Sharing"), ("When", "when two pods"), ("It", "shares with two containers"),
        ("It", 'shares with one "container"'), ("Context", "elsewhere"), ("It", "stands alone")]
    spec = F.find_spec(src, ONE)
    assert spec.path == "test/e2e/suite_test.go"
    assert 'Note: "}"' in spec.body and "inner skip" in spec.body and 'Name: "two"' not in spec.body
    # its containers' setup: the Describe's BeforeAll and the When's JustBeforeEach, not the other
    # specs' bodies nor the other context's BeforeEach
    assert "setup of the describe" in spec.setup and "need minCPUs" in spec.setup
    assert "inner skip" not in spec.setup and 'Name: "two"' not in spec.setup and "other context" not in spec.setup
    assert F.find_spec(src, "Sharing shares with two containers") is None   # not its full name
    assert F.find_spec(src, "a spec in a comment") is None


def test_a_source_fact_holds_only_in_its_own_spec(src):
    """The anchoring: two 1-CPU containers appear in the file (in TWO), not in ONE."""
    holds = F.check_fact(("spec", TWO_CONTAINERS), F.find_spec(src, TWO), src, HERE_MACHINE, HERE_INSTALL)
    assert holds[0] and "its body (test/e2e/suite_test.go) says" in holds[1]
    assert re.search(TWO_CONTAINERS, SUITE)
    stale = F.check_fact(("spec", TWO_CONTAINERS), F.find_spec(src, ONE), src, HERE_MACHINE, HERE_INSTALL)
    assert not stale[0] and "no longer says" in stale[1]
    assert F.check_fact(("setup", r"available < minCPUs"), F.find_spec(src, ONE), src, HERE_MACHINE, HERE_INSTALL)[0]
    assert not F.check_fact(("setup", r"available < minCPUs"), F.find_spec(src, "Sharing elsewhere stands alone"),
                            src, HERE_MACHINE, HERE_INSTALL)[0]
    assert not F.check_fact(("spec", "x"), None, src, HERE_MACHINE, HERE_INSTALL)[0]
    assert F.check_fact(("const", "minCPUs", 3), None, src, HERE_MACHINE, HERE_INSTALL)[0]
    assert not F.check_fact(("const", "minCPUs", 4), None, src, HERE_MACHINE, HERE_INSTALL)[0]


NEEDS_3 = ("needs 3 CPUs", [("const", "minCPUs", 3), ("setup", r"ginkgo\.Skip\(\"need minCPUs\"\)"),
                            ("available_cpus_below", 3)])
CGROUP = ("cgroup v2 only", [("spec", r"CPU: 1"), ("tester", r"cpuset\.cpus\.effective"), ("cgroup_v1",)])


def test_an_exclusion_stands_while_one_reason_holds_in_full_and_reports_every_fact(src):
    stands, lines = F.verdict(ONE, [NEEDS_3, CGROUP], src, HERE_MACHINE, HERE_INSTALL)
    assert stands and lines[-1] == "  => excluded"
    assert sum(1 for line in lines if line.startswith("    [x] ")) == 6
    # a 4-CPU cgroup-v1 machine: the CPU reason has one stale fact and does not hold, the cgroup one does
    four = F.Machine(available_cpus=4, cgroup2=False, allocatable_milli=4000)
    stands, lines = F.verdict(ONE, [NEEDS_3, CGROUP], src, four, HERE_INSTALL)
    assert stands, lines
    assert "  reason does not hold: needs 3 CPUs" in lines and "  reason HOLDS: cgroup v2 only" in lines
    assert "    [ ] 4 CPUs available (below 3?)" in lines
    assert sum(1 for line in lines if line.startswith("    [")) == 6   # every fact, the stale one too
    # and cgroup v2 as well: no reason holds, the spec must run
    stands, lines = F.verdict(ONE, [NEEDS_3, CGROUP], src, F.Machine(4, True, 4000), HERE_INSTALL)
    assert not stands and lines[-1] == "  => NO REASON HOLDS: the spec must run"
    # one stale source fact is enough to drop a reason
    stale = ("needs 3 CPUs", [("const", "minCPUs", 5)] + NEEDS_3[1][1:])
    assert not F.verdict(ONE, [stale], src, HERE_MACHINE, HERE_INSTALL)[0]
    assert not F.verdict(ONE, [], src, HERE_MACHINE, HERE_INSTALL)[0]


def test_the_install_facts_read_the_installed_release(src):
    group = ("group_by_is_not", "machine")
    assert F.check_fact(group, None, src, HERE_MACHINE, HERE_INSTALL)[0]
    machine = F.Installed(100, 100, "machine", "machine")
    assert not F.check_fact(group, None, src, HERE_MACHINE, machine)[0]
    assert not F.check_fact(group, None, src, HERE_MACHINE, F.Installed(100, 100, "numanode", "machine"))[0]
    assert not F.check_fact(group, None, src, HERE_MACHINE, F.Installed(100, 100, None, None))[0]
    cpu = ("allocatable_after_driver_below", 2000)
    held = F.check_fact(cpu, None, src, HERE_MACHINE, HERE_INSTALL)
    assert held == (True, "node allocatable 2000m - the installed driver's CPU request 100m (the release's "
                          "values: 100m) = 1900m (below 2000m?)")
    # a driver that requests no CPU leaves room for two 1-CPU pods: the fact no longer holds
    assert not F.check_fact(cpu, None, src, HERE_MACHINE, F.Installed(0, 0, "numanode", "numanode"))[0]
    assert not F.check_fact(cpu, None, src, HERE_MACHINE, F.Installed(None, None, "numanode", "numanode"))[0]
    assert [F.milli(q) for q in ("100m", "2", "0.5", 1, None)] == [100, 2000, 500, 1000, None]


def test_the_number_of_passes_is_computed_and_explained():
    run = dict(RUN)
    six, why = F.expected_passes(run, {PCIE: (False, "PCIe roots asked for; the machine has pci0000:00")})
    assert six == 6 and len(why) == 6 and any("must pass (PCIe roots asked for" in w for w in why)
    five, why = F.expected_passes(run, {PCIE: (True, "PCIe roots not asked for")})
    assert five == 5 and any("skips itself ('No PCIe roots reported on this system')" in w for w in why)
    # a spec without an own skip must pass whatever is said of it
    assert F.expected_passes({"a": None}, {"a": (True, "x")})[0] == 1


# the ReportAfterSuite output of two runs here (tests/output/upstream-e2e/*/report.json)
UPSTREAMS = '"level"=0 "msg"="ingested log lines" "count"=40\n"level"=0 "msg"="detected operations" "count"=2\n'
PORTS = '"level"=0 "msg"="ingested log lines" "count"=34\n"level"=0 "msg"="detected operations" "count"=0\n'


def test_the_logging_checks_operations_are_read():
    assert F.operations_examined(UPSTREAMS) == 2
    assert F.operations_examined(PORTS) == 0   # test_upstream_e2e asserts > 0: this run fails it
    assert F.operations_examined("") is None


def _upstream_source():
    found = glob.glob(os.path.expanduser("~/go/pkg/mod/github.com/kubernetes-sigs/dra-driver-cpu@v0.2.0"))
    return found[0] if found and os.path.isdir(os.path.join(found[0], "test", "e2e")) else None


@pytest.mark.skipif(_upstream_source() is None, reason="upstream's v0.2.0 module is not in the Go module cache")
def test_the_exclusions_against_upstreams_source():
    """Every source fact holds in upstream's v0.2.0 source, in the spec it describes; on this machine
    every exclusion stands; a 4-CPU cgroup-v1 machine still excludes the specs that read CPUs through the
    tester, a 4-CPU cgroup-v2 one with 4 CPUs allocatable runs them all but the machine-grouping one."""
    src = _upstream_source()
    for spec, reasons in EXCLUDED.items():
        stands, lines = F.verdict(spec, reasons, src, HERE_MACHINE, HERE_INSTALL)
        assert stands and not [line for line in lines if line.startswith("    [ ]")], lines
    four_v1 = F.Machine(available_cpus=4, cgroup2=False, allocatable_milli=4000)
    still = {s for s, r in EXCLUDED.items() if F.verdict(s, r, src, four_v1, HERE_INSTALL)[0]}
    assert still == {s for s in EXCLUDED if s.startswith("CPU Allocation") or s.startswith("NRI")}
    four_v2 = F.Machine(available_cpus=4, cgroup2=True, allocatable_milli=4000)
    still = {s for s, r in EXCLUDED.items() if F.verdict(s, r, src, four_v2, HERE_INSTALL)[0]}
    assert still == {s for s in EXCLUDED if "machine grouping mode" in s}
    by_machine = F.Installed(100, 100, "machine", "machine")
    assert not {s for s, r in EXCLUDED.items() if F.verdict(s, r, src, four_v2, by_machine)[0]}


def test_upstreams_images_hold_their_programs_at_the_root(tmp_path):
    for name in ("dracpu", "dracpu-gatherinfo"):
        (tmp_path / name).write_text(name)
    layer = cluster_images.upstream_driver_layer(str(tmp_path), str(tmp_path / "l" / "layer.tar"))
    with tarfile.open(layer) as t:
        assert [(m.name, m.mode, m.uid) for m in t.getmembers()] == [("dracpu", 0o755, 0), ("dracpu-gatherinfo", 0o755, 0)]
    assert cluster_images.UPSTREAM_TEST_IMAGE.startswith("registry.k8s.io/")   # a mirrored name (CRI-O too)


def test_port_bugs_are_specs_that_run():
    assert set(PORT_BUGS) <= set(RUN) and all(why.strip() for why in PORT_BUGS.values())
