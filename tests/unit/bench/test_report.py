# SPDX-License-Identifier: Apache-2.0
"""bench/report.py turns results.json into results.md and the plot.

The committed run of 2026-12-01 ended in a KeyError because the plot had no colour for the
module_pods waiter added with the role's path; results.md is rewritten from the committed
results.json here, and every waiter has a colour.
"""
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BENCH = os.path.join(REPO, "bench")
sys.path.insert(0, BENCH)

import report  # noqa: E402
import waiters  # noqa: E402


def _committed_results():
    with open(os.path.join(BENCH, "results.json")) as f:
        return json.load(f)


def test_every_waiter_has_a_plot_colour():
    assert set(waiters.ALL) <= set(report.COLORS)


def test_the_committed_results_give_every_goal_a_verdict_and_missed_ones_a_cause():
    rows = report.goals(_committed_results())
    assert len(rows) == 9
    assert all(row[3] is not None for row in rows), "a goal not measured in the committed run"
    why = report.causes()
    missed = [row[0] for row in rows if row[3] is False]
    # every missed goal has its cause, and no cause is left for a goal this run met
    assert sorted(why) == sorted(missed), (missed, sorted(why))


def test_results_md_is_written_from_results_json(tmp_path):
    md = report.write(_committed_results(), str(tmp_path))
    with open(md) as f:
        text = f.read()
    assert "| goal | measured | met | cause when missed |" in text
    assert "not yet analysed" not in text
