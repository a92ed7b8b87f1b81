# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""topology/run.py's sizing grace. Upstream behaviour mirrored: after new reservedCPUs the driver's
ResourceSlice controller (k8s.io/dynamic-resource-allocation resourceslice, syncPool) updates the
pool in place and keeps its generation when at most one slice changed, so a complete pool of the old
sizes is seen until the new driver publishes (test_real_driver's in-place upgrade on a real kubelet)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as topology_run
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import Clock

COMPLETE = {"ansible_facts": {"dra_cpu_topology": {}}, "sizing_problems": []}
OLD, NEW = {"nodes": {"old": {}}}, {"nodes": {"new": {}}}   # the detailed topology of each wait
STALE = "the published CPU topology does not match: node real01 cell 0 has 4 allocatable CPUs, expected 2"


def settle(answers, grace, wait=True):
    clock, calls = Clock(), []

    def fake_wait(*args):
        calls.append(clock.now)
        return answers.pop(0) if answers else (dict(COMPLETE), STALE, OLD)

    original = topology_run._wait
    topology_run._wait = fake_wait
    try:
        got = topology_run._settle(None, {"sizing_grace": grace, "wait": wait}, [], [], None, clock, clock.sleep,
                                   dict(COMPLETE), STALE, OLD)
    finally:
        topology_run._wait = original
    return got, calls


def test_a_pool_updated_in_place_within_the_grace_passes():
    (result, failure, detail), calls = settle([(dict(COMPLETE), STALE, OLD), (dict(COMPLETE), None, NEW)], 30)
    # the detail (table, sizing, report files) is the last wait's, as the result is
    assert failure is None and calls == [1.0, 2.0] and detail is NEW


def test_sizes_that_never_match_fail_at_the_end_of_the_grace():
    (result, failure, detail), calls = settle([], 5)
    assert failure == STALE and len(calls) == 5


def test_no_grace_or_no_wait_fails_at_once():
    for grace, wait in ((0, True), (30, False)):
        (result, failure, detail), calls = settle([], grace, wait)
        assert failure == STALE and calls == []


def test_a_timeout_is_not_retried():
    clock = Clock()
    got = topology_run._settle(None, {"sizing_grace": 30, "wait": True}, [], [], None, clock, clock.sleep,
                               {"pending_nodes": [{"node": "real01"}]}, "timed out", None)
    assert got == ({"pending_nodes": [{"node": "real01"}]}, "timed out", None) and clock.now == 0.0
