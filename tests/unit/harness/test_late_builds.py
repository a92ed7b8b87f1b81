"""The integration suite's late builds (tests/integration/late_builds.py): the build order is read
from the Makefile's build-binaries recipe, the one place it is written, and every `late_build` and
`needs_build` mark of the suite names a line of it."""
import os
import re
import sys

import pytest

INTEGRATION_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "integration"))
if INTEGRATION_DIR not in sys.path:
    sys.path.insert(0, INTEGRATION_DIR)

import late_builds  # noqa: E402  pylint: disable=wrong-import-position


def test_the_recipe_is_the_makefiles_build_binaries_in_its_order():
    assert late_builds.recipe() == [
        ("all", {}), ("real-node", {}),   # real nodes: every molecule scenario
        ("cri-o", {}),   # the CRI-O real nodes (test_real_crio.py, test_kubevirtci_shape.py, molecule crio)
        ("upstream", {}),   # upstream's v0.2.0 driver and e2e suite (test_upstream_e2e.py)
        ("helm-old", {}),
        ("kubernetes v1.37.2", {"CLUSTER_K8S_VERSION": "v1.37.2"}),   # molecule's, in the other lane
        ("real-node v1.37.2", {"CLUSTER_K8S_VERSION": "v1.37.2"}),    # its real node's kubelet, kube-proxy
        ("kubernetes v1.35.4", {"CLUSTER_K8S_VERSION": "v1.35.4"}),
        ("real-node v1.35.4", {"CLUSTER_K8S_VERSION": "v1.35.4"}),    # the 1.35 tests' real kubelet
    ]


def test_a_recipe_stops_at_the_blank_line_and_reads_only_build_sh_lines(tmp_path):
    mk = tmp_path / "Makefile"
    mk.write_text("build-binaries:\n\t@tests/cluster/build.sh real-node >/dev/null\n\t@echo hi\n"
                  "\tCLUSTER_K8S_VERSION=v9.9.9 tests/cluster/build.sh kubernetes\n\nother:\n"
                  "\t@tests/cluster/build.sh helm-old\n")
    assert late_builds.recipe(str(mk)) == [
        ("real-node", {}), ("kubernetes v9.9.9", {"CLUSTER_K8S_VERSION": "v9.9.9"})]


def test_order_follows_the_recipe_and_refuses_a_name_that_is_not_in_it():
    steps = late_builds.recipe()
    assert late_builds.order("real-node", steps) < late_builds.order("cri-o", steps) \
        < late_builds.order("helm-old", steps) \
        < late_builds.order("kubernetes v1.35.4", steps)
    with pytest.raises(ValueError, match=re.escape("late_build('kubernetes v1.34.0'): not a line")):
        late_builds.order("kubernetes v1.34.0", steps)


def test_ensure_says_which_name_is_unknown_without_building():
    took, err = late_builds.ensure("nothing", steps=[("all", {})])
    assert took == 0.0 and "late_build('nothing') is not in" in err


def test_every_late_build_and_needs_build_mark_of_the_suite_names_a_recipe_line():
    names = {step[0] for step in late_builds.recipe()}
    marks, needs = set(), set()
    for f in sorted(os.listdir(INTEGRATION_DIR)):
        if f.endswith(".py") and f not in ("late_builds.py", "conftest.py"):
            text = open(os.path.join(INTEGRATION_DIR, f)).read()
            marks |= set(re.findall(r'late_build\(f?"([^"]+)"\)', text))
            needs |= set(re.findall(r'needs_build\("([^"]+)"\)', text))
    marks = {m.replace("{K8S_135}", "v1.35.4") for m in marks}
    assert marks == {"helm-old", "real-node", "cri-o", "upstream", "real-node v1.35.4", "real-node v1.37.2"}
    assert needs == {"real-node"}       # reliability_lib.NEEDS_REAL_NODES: the 'driver' cluster
    assert marks | needs <= names
