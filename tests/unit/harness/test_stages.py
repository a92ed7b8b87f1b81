"""hack/stages.sh, the runner of `make test` and `make check`: lanes side by side, a lane stopping at
its first failure without stopping the others, each stage's output in one piece, the wall-time table
and every SKIPPED line under it. Runs the script on a scratch Makefile of tiny targets."""
import os
import re
import shutil
import subprocess
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

MAKEFILE = """\
slow:
\t@echo slow-1; sleep 2; echo slow-2
slow2:
\t@sleep 2
skips:
\t@echo "thing: SKIPPED, no thing here"
fails:
\t@echo about to fail; exit 3
after:
\t@echo after-ran
zbig:
\t@seq 1 300000
integration-real-nodes:
\t@true
"""


def run_stages(tmp_path, *args):
    (tmp_path / "hack").mkdir()
    shutil.copy(os.path.join(REPO, "hack", "stages.sh"), tmp_path / "hack" / "stages.sh")
    (tmp_path / "Makefile").write_text(MAKEFILE)
    start = time.monotonic()
    r = subprocess.run(["bash", str(tmp_path / "hack" / "stages.sh"), *args], capture_output=True, text=True,
                       check=False)
    return r, time.monotonic() - start


def table(out):
    """{stage: (lane, result)} from the summary table."""
    rows = {}
    header = re.search(r"^stage +lane +start", out, flags=re.M)
    for line in out[header.start():].splitlines()[1:]:
        parts = line.split()
        if parts and parts[0] not in ("wall", "skipped"):
            rows[parts[0]] = (parts[1], " ".join(parts[4:]))
        if parts and parts[0] == "wall":
            break
    return rows


def test_two_lanes_run_side_by_side_and_a_failed_lane_does_not_stop_the_other(tmp_path):
    r, secs = run_stages(tmp_path, "slow", "skips", "--lane", "fails", "after")
    assert r.returncode == 2, r.stdout   # make's exit status for a failed recipe
    rows = table(r.stdout)
    assert rows == {"slow": ("1", "passed"), "skips": ("1", "passed, 1 SKIPPED line(s) below"),
                    "fails": ("2", "FAILED (exit 2)")}
    assert "after-ran" not in r.stdout, "a lane goes on after its failed stage"
    # each stage's output in one piece, between its header and its end line
    block = r.stdout.split("===== slow (lane 1): passed after")[1].split("===== end of slow =====")[0]
    assert "slow-1\nslow-2\n" in block
    assert "[stages] fails started (lane 2; output: tests/output/stages/fails.log)" in r.stdout
    assert "skipped (with reasons):\n  skips: thing: SKIPPED, no thing here" in r.stdout
    starts = {line.split()[0]: int(line.split()[2]) for line in r.stdout.splitlines()
              if line.split()[:1] in (["slow"], ["fails"]) and len(line.split()) > 3 and line.split()[2].isdigit()}
    assert starts["fails"] < 2, "lane 2 started only after lane 1's 2-second stage: the lanes ran one after the other"
    assert secs < 10
    assert (tmp_path / "tests" / "output" / "stages" / "slow.log").read_text() == "slow-1\nslow-2\n"


def test_one_lane_streams_and_stops_at_its_first_failure(tmp_path):
    r = run_stages(tmp_path, "skips", "fails", "after")[0]
    assert r.returncode == 2
    assert r.stdout.startswith("thing: SKIPPED, no thing here\nabout to fail\n"), r.stdout
    assert "=====" not in r.stdout and "[stages]" not in r.stdout
    assert "after-ran" not in r.stdout
    assert set(table(r.stdout)) == {"skips", "fails"}


def test_the_wall_line_gives_the_elapsed_time_and_the_sum_of_the_stages(tmp_path):
    """Two 2-second stages in two lanes: the wall time is under their sum (bash's SECONDS: whole
    seconds, so each stage reads 2 or 3)."""
    r = run_stages(tmp_path, "slow", "--lane", "slow2")[0]
    assert r.returncode == 0
    rows = [line.split() for line in r.stdout.splitlines() if line.split()[:1] in (["slow"], ["slow2"])]
    stage_secs = sum(int(row[3]) for row in rows if len(row) > 3 and row[3].isdigit())
    wall = [line for line in r.stdout.splitlines() if line.startswith("wall")][0]
    secs = int(wall.split()[1])
    assert wall.endswith(f"({secs // 60} min; the stages one after the other: {stage_secs} s)"), wall
    assert 2 <= secs < stage_secs, f"two 2-second stages side by side: {wall}"


def test_the_skip_listing_survives_a_long_log_after_the_skipping_one(tmp_path):
    """The listing once went missing in CI: `cat logs | grep -q` under pipefail, grep stopping at
    skips.log's match while cat still wrote a later log (SIGPIPE). zbig.log (2 MB) comes after it."""
    r = run_stages(tmp_path, "skips", "zbig")[0]
    assert r.returncode == 0
    assert r.stdout.endswith("skipped (with reasons):\n  skips: thing: SKIPPED, no thing here\n"), r.stdout[-300:]


def test_the_table_columns_line_up_for_the_longest_stage_name_of_make_test(tmp_path):
    """make test's longest stage name (integration-real-nodes, 22 characters) keeps its row's columns
    under the header's (the names were once padded to 14 and shifted those rows)."""
    r = run_stages(tmp_path, "integration-real-nodes", "--lane", "skips")[0]
    assert r.returncode == 0, r.stdout
    lines = r.stdout.splitlines()
    header = next(line for line in lines if line.startswith("stage "))
    row = next(line for line in lines if line.startswith("integration-real-nodes "))
    short = next(line for line in lines if line.startswith("skips "))
    assert row.index(" 1 ") + 1 == header.index("lane") + 3, (header, row)
    assert short.index(" 2 ") + 1 == header.index("lane") + 3, (header, short)
