"""tests/integration/conftest.py's --real-nodes option, which `make test` uses to split the
integration suite over its two lanes (integration-real-nodes before molecule in the first,
integration-others in the second): `only` and `skip` partition the suite, `only` holds exactly the
tests marked late_build("real-node"), "cri-o" (the CRI-O real nodes) or "upstream" (upstream's e2e
suite, on real nodes too); and the deselected ones are
counted, not dropped silently. With every binary cached `make test` runs a third lane
(--third-lane): the three lanes' selections partition the suite as well."""
import os
import re
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def collect(option, *more):
    r = subprocess.run([sys.executable, "-m", "pytest", "tests/integration", f"--real-nodes={option}", *more,
                        "--collect-only", "-q", "-p", "no:cacheprovider"],
                       cwd=REPO, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    ids = {line for line in r.stdout.splitlines() if "::" in line}
    return ids, r.stdout.strip().splitlines()[-1]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def real_node_modules():
    """The integration modules that mark tests late_build("real-node") (directly or via
    real_nodes_lib.skip_marks())."""
    out = set()
    d = os.path.join(REPO, "tests", "integration")
    for name in os.listdir(d):
        if name.startswith("test_") and name.endswith(".py"):
            text = read(os.path.join(d, name))
            if re.search(r'late_build\("(?:real-node|cri-o|upstream)"\)|skip_marks\(\)', text):
                out.add(f"tests/integration/{name}")
    return out


def test_only_and_skip_partition_the_suite_and_only_is_the_real_node_tests():
    every, summary_all = collect("all")
    only, summary_only = collect("only")
    skip, summary_skip = collect("skip")
    assert only and skip
    assert only | skip == every and not only & skip
    assert {i.split("::")[0] for i in only} <= real_node_modules()
    # the modules whose every test is on a real node (module-level pytestmark) stay whole
    whole = {m for m in real_node_modules() if "pytestmark = skip_marks()" in read(os.path.join(REPO, m))}
    assert whole and not [i for i in skip if i.split("::")[0] in whole]
    assert f"{len(only)}/{len(every)} tests collected ({len(skip)} deselected)" in summary_only
    assert f"{len(skip)}/{len(every)} tests collected ({len(only)} deselected)" in summary_skip
    assert f"{len(every)} tests collected" in summary_all
    e2e = {i for i in every if i.startswith("tests/integration/test_upstream_e2e.py::test_upstream_e2e_suite")}
    assert e2e and e2e <= only


def test_the_three_lanes_of_a_cached_run_partition_the_suite():
    """integration-real-nodes and integration-others with --third-lane=skip, integration-third with
    --third-lane=only (the Makefile's stages when MAKE_TEST_LANES=3): every test once."""
    every = collect("all")[0]
    real = collect("only", "--third-lane=skip")[0]
    others = collect("skip", "--third-lane=skip")[0]
    third, summary = collect("all", "--third-lane=only")
    assert real and others and third
    assert real | others | third == every
    assert not real & others and not real & third and not others & third
    files = re.search(r"THIRD_LANE_FILES = \(([^)]*)\)", read(os.path.join(REPO, "tests", "integration", "conftest.py")))
    names = re.findall(r'"([^"]+)"', files.group(1))
    assert {i.split("::")[0] for i in third} == {f"tests/integration/{f}" for f in names}
    assert f"{len(third)}/{len(every)} tests collected ({len(every) - len(third)} deselected)" in summary
    makefile = read(os.path.join(REPO, "Makefile"))
    assert "THIRD_LANE := $(if $(filter 3,$(MAKE_TEST_LANES)),--third-lane=skip,)" in makefile
    assert "--real-nodes=only $(THIRD_LANE)" in makefile and "--real-nodes=skip $(THIRD_LANE)" in makefile
    assert "$(INTEGRATION_PYTEST) --third-lane=only" in makefile
