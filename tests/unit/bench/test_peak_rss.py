# SPDX-License-Identifier: Apache-2.0
"""bench/waiters.py measures a waiter's own peak memory, not the benchmark's.

A process forked from a large parent that then execs a small program reports (through wait4's
ru_maxrss) at least the parent's size on Linux; the bench runs each waiter under GNU time, which
forks it from its own small image. Here a parent holding 200 MiB starts /bin/true and `python -c
pass` the way the bench starts a waiter.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BENCH = os.path.join(REPO, "bench")

PARENT = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    import waiters
    ballast = b"\\x01" * (200 << 20)          # 200 MiB, every page touched
    out = {}
    for wid, argv in (("true", ["/bin/true"]), ("python", [sys.executable, "-c", "pass"])):
        child = waiters.Child(wid, argv, dict(os.environ), sys.argv[2], sys.argv[2])
        assert child.join(time.time() + 60)
        out[wid] = {"own_kib": child.peak_rss_kib(), "wait4_kib": child.rusage.ru_maxrss, "rc": child.rc}
    print(json.dumps(out))
""")


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="GNU time missing: run make deps")
def test_small_child_of_a_large_parent_reports_its_own_size(tmp_path):
    r = subprocess.run([sys.executable, "-c", PARENT, BENCH, str(tmp_path)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    for wid, limit_kib in (("true", 8 << 10), ("python", 48 << 10)):
        res = got[wid]
        assert res["rc"] == 0
        # the measured figure is the child's: /bin/true a few MiB, a bare Python well under 48 MiB ...
        assert res["own_kib"] is not None and 0 < res["own_kib"] < limit_kib, res
        # ... while wait4 on the same child (GNU time, forked from the 200 MiB parent) reports the parent's
        assert res["wait4_kib"] > 200 << 10, res


def test_peak_rss_is_none_without_a_record(tmp_path):
    sys.path.insert(0, BENCH)
    try:
        import waiters
    finally:
        sys.path.remove(BENCH)
    assert waiters.read_peak_rss(str(tmp_path / "missing.rss")) is None
    (tmp_path / "x.rss").write_text("Command terminated by signal 9\n1234\n")
    assert waiters.read_peak_rss(str(tmp_path / "x.rss")) == 1234
