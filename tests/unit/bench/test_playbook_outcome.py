# SPDX-License-Identifier: Apache-2.0
"""bench/waiters.py reads the playbook waiter's outcome from the default callback's real output (as a
user runs ansible-playbook, no JSON document of the run): the wait's stats from the line its last
task prints, a failure's message from the failed result. Here ansible-playbook itself prints both."""
import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "bench"))

import waiters  # noqa: E402  pylint: disable=wrong-import-position

PLAY = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      tasks:
        - name: Stats
          ansible.builtin.debug:
            msg: "BENCH_WAIT_STATS {{ {'lists': 1, 'watches': 2, 'events': 3} | to_json }}"
        - name: Fail like the wait
          ansible.builtin.fail:
            msg: "timed out after 5s waiting for node \\"n-7\\": pool incomplete\\nlast API error: none"
          when: fail | bool
    """)


def run(tmp_path, fail):
    path = tmp_path / "play.yml"
    path.write_text(PLAY)
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_CALLBACK_RESULT_FORMAT="json",
               ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="false")
    exe = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run([exe, str(path), "-e", "fail=%s" % fail], env=env, capture_output=True, text=True,
                          check=False)


def test_stats_line_and_success(tmp_path):
    proc = run(tmp_path, "false")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = waiters.playbook_outcome(proc.stdout)
    assert got == {"wait_stats": {"lists": 1, "watches": 2, "events": 3}}, proc.stdout


def test_failed_result_gives_its_message(tmp_path):
    proc = run(tmp_path, "true")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    got = waiters.playbook_outcome(proc.stdout)
    assert got["failed"] is True, proc.stdout
    assert got["msg"] == 'timed out after 5s waiting for node "n-7": pool incomplete\nlast API error: none', proc.stdout
