"""The one list of upstream e2e specs not run here (tests/integration/upstream_e2e_exclusions.py) is
well formed: every excluded spec has a reason and at least one checkable fact of a known kind (the
integration test checks them against the suite's source, this machine and the cluster), the run and
excluded lists do not overlap, and every excluded name survives the --ginkgo.skip regex (each is matched
literally). Also upstream's images' layout (cluster_images.files_layer): the files at the root, 0755."""
import os
import re
import sys
import tarfile

HERE = os.path.dirname(__file__)
for d in (os.path.join(HERE, "..", "..", "integration"), os.path.join(HERE, "..", "..", "cluster")):
    if os.path.abspath(d) not in sys.path:
        sys.path.insert(0, os.path.abspath(d))

import cluster_images  # noqa: E402  pylint: disable=wrong-import-position
from upstream_e2e_exclusions import EXCLUDED, RUN  # noqa: E402  pylint: disable=wrong-import-position

KINDS = {"source": 3, "available_cpus_below": 2, "allocatable_millicpu_below": 2, "cgroup_v1": 1}


def test_every_exclusion_has_a_reason_and_known_facts():
    assert len(EXCLUDED) == 6 and len(RUN) == 6
    assert not set(EXCLUDED) & set(RUN)
    for spec, (why, facts) in EXCLUDED.items():
        assert why.strip() and facts, spec
        for fact in facts:
            assert KINDS.get(fact[0]) == len(fact), (spec, fact)
            if fact[0] == "source":
                re.compile(fact[2])
                assert not os.path.isabs(fact[1]) and fact[1].endswith(".go"), fact


def test_the_skip_regex_matches_each_excluded_spec_and_no_run_spec():
    skip = re.compile("|".join(re.escape(s) for s in EXCLUDED))
    assert all(skip.search(s) for s in EXCLUDED)
    assert not any(skip.search(s) for s in RUN)


def test_upstreams_images_hold_their_programs_at_the_root(tmp_path):
    for name in ("dracpu", "dracpu-gatherinfo"):
        (tmp_path / name).write_text(name)
    layer = cluster_images.upstream_driver_layer(str(tmp_path), str(tmp_path / "l" / "layer.tar"))
    with tarfile.open(layer) as t:
        assert [(m.name, m.mode, m.uid) for m in t.getmembers()] == [("dracpu", 0o755, 0), ("dracpu-gatherinfo", 0o755, 0)]
    assert cluster_images.UPSTREAM_TEST_IMAGE.startswith("registry.k8s.io/")   # a mirrored name (CRI-O too)


def test_port_bugs_are_specs_that_run():
    from upstream_e2e_exclusions import PORT_BUGS   # pylint: disable=import-outside-toplevel
    assert set(PORT_BUGS) <= set(RUN) and all(why.strip() for why in PORT_BUGS.values())
