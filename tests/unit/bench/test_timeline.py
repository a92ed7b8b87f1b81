"""bench/timeline.py build: each scenario kind's schedule, with the driver's chunks stood in by a
fixed rule (the Go driver is not built for unit tests). The schedule is the seed's alone, and the ready
state arrives with the special node's last required event (check_monotone runs inside build)."""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "bench"))

import driver_slices  # noqa: E402  pylint: disable=wrong-import-position
import timeline  # noqa: E402  pylint: disable=wrong-import-position


def chunks(cpus, cells, reserved, mode):
    """Grouped: one device per cell; individual: one per unreserved CPU; at most 128 per chunk."""
    devs = ([{"name": f"cpu{c}"} for c in range(cpus) if c not in reserved] if mode == "individual"
            else [{"name": f"cpus{c}"} for c in range(cells)])
    return tuple(tuple(devs[i:i + 128]) for i in range(0, len(devs), 128))


@pytest.fixture(autouse=True)
def fixture_chunks(monkeypatch):
    monkeypatch.setattr(driver_slices, "driver_chunks", chunks)


def events(sc):
    return [(e.t, e.op, e.key, e.required, e.note) for e in sc.events]


@pytest.mark.parametrize("kind", timeline.KINDS)
def test_a_seed_gives_one_schedule(kind):
    a, b = (timeline.build(kind, 10, 2, 7, span=20.0) for _rep in range(2))
    assert events(a) == events(b) and a.special_node == b.special_node
    assert events(a) != events(timeline.build(kind, 10, 2, 8, span=20.0))


def test_spread_every_node_once_within_the_span():
    sc = timeline.build("spread", 10, 2, 1, span=20.0)
    assert sorted(e.node for e in sc.events) == sc.targets and sc.special_node is None
    assert all(0 <= e.t <= 20.0 for e in sc.events)


@pytest.mark.parametrize("kind, last_t, last_note", [
    ("chunks", 20.0, "chunk 2 of 2"),
    ("generation", 20.0, "generation 2, chunk 2 of 2"),
    ("chunks-individual", 20.0, "individual mode, slice 2 of 2"),
])
def test_the_special_nodes_last_required_event_completes_the_schedule(kind, last_t, last_note):
    sc = timeline.build(kind, 10, 2, 3, span=20.0)
    last = sc.events[timeline.last_required_index(sc)]
    assert (last.node, last.t, last.note) == (sc.special_node, last_t, last_note)


def test_restart_generation_updates_in_place_before_the_last_other_node():
    sc = timeline.build("restart-generation", 10, 2, 3, span=20.0)
    special = [(e.t, e.op) for e in sc.events if e.node == sc.special_node]
    assert [op for _t, op in special] == ["create", "create", "update", "update"]
    assert [t for t, _op in special[2:]] == [8.0, 9.0]
    last = sc.events[timeline.last_required_index(sc)]
    assert last.node != sc.special_node and last.t == 15.0


def test_stale_and_no_driver():
    stale = timeline.build("stale", 10, 2, 3, span=20.0)
    assert [e.node for e in stale.pre] == [timeline.STALE_NODE] and stale.events[-1].node == stale.special_node
    nodrv = timeline.build("no-driver", 10, 2, 3, span=20.0)
    assert not nodrv.ready_possible and nodrv.special_node not in {e.node for e in nodrv.events}


def test_adversarial_kinds_need_two_nodes_and_unknown_kinds_are_refused():
    with pytest.raises(ValueError, match="at least 2 nodes"):
        timeline.build("chunks", 1, 2, 1)
    with pytest.raises(ValueError, match="unknown scenario kind"):
        timeline.build("nope", 10, 2, 1)
