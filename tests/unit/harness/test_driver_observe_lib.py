"""tests/integration/driver_observe_lib.py, the readers the real-driver test applies to the driver's
/metrics and log: they accept what upstream's e2e checks accept and refuse what they refuse."""
import os
import sys

import pytest

INTEGRATION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "integration"))
if INTEGRATION not in sys.path:
    sys.path.insert(0, INTEGRATION)

import driver_observe_lib as lib  # noqa: E402  pylint: disable=wrong-import-position

GOOD = """# HELP dra_cpu_allocated_cpus x
# TYPE dra_cpu_allocated_cpus gauge
dra_cpu_allocated_cpus 2
# TYPE dra_cpu_available_cpus gauge
dra_cpu_available_cpus 8
# TYPE dra_cpu_reserved_cpus gauge
dra_cpu_reserved_cpus 2
# TYPE dra_cpu_resource_claims_active gauge
dra_cpu_resource_claims_active 1
"""


def test_gauges_reads_the_allocation_gauges():
    assert lib.gauges(GOOD) == {"dra_cpu_allocated_cpus": 2, "dra_cpu_available_cpus": 8,
                                "dra_cpu_reserved_cpus": 2, "dra_cpu_resource_claims_active": 1}


@pytest.mark.parametrize("bad, why", [
    (GOOD.replace("dra_cpu_reserved_cpus 2\n", ""), "one unlabelled sample"),
    (GOOD.replace("# TYPE dra_cpu_available_cpus gauge", "# TYPE dra_cpu_available_cpus counter"), "no gauge family"),
    (GOOD.replace("dra_cpu_allocated_cpus 2", 'dra_cpu_allocated_cpus{node="a"} 2'), "one unlabelled sample"),
    (GOOD.replace("dra_cpu_allocated_cpus 2", "dra_cpu_allocated_cpus 1.5"), "whole non-negative"),
    ("go_goroutines 7\n", "no gauge family"),
])
def test_gauges_refuses_what_upstreams_metrics_spec_refuses(bad, why):
    with pytest.raises(ValueError, match=why):
        lib.gauges(bad)


LOG = '''I1207 10:00:00.000001       1 observe.go:1] "begin: preparing resource claims" driver="dra.cpu" opID="0a1b2c3d" numClaims=1
I1207 10:00:00.000002       1 prepare.go:2] "prepared claim" driver="dra.cpu" opID="0a1b2c3d" claim="ns/c" cpuset="2-3"
I1207 10:00:00.000003       1 observe.go:3] "driver started" node="real01"
I1207 10:00:00.000004       1 observe.go:4] "end: preparing resource claims" driver="dra.cpu" opID="0a1b2c3d" numClaims=1
'''


def test_operations_groups_the_log_by_opid():
    ops, problems = lib.operations(LOG)
    assert problems == [] and ops == {"0a1b2c3d": ["begin: preparing resource claims", "prepared claim",
                                                   "end: preparing resource claims"]}


@pytest.mark.parametrize("edit, why", [
    (lambda s: s.replace('"begin: preparing resource claims"', '"preparing"'), "imbalance"),
    (lambda s: s.replace('claim="ns/c"', 'claim="ns/c" claim="x"'), "repeated key claim"),
    (lambda s: s.replace('"0a1b2c3d"', '"0A1B2C3D"'), "invalid opID"),
    (lambda s: "\n".join(s.splitlines()[1:2] + s.splitlines()[0:1] + s.splitlines()[2:]), "does not run from begin"),
])
def test_operations_reports_what_upstreams_logcheck_reports(edit, why):
    problems = lib.operations(edit(LOG))[1]
    assert any(why in p for p in problems), problems
