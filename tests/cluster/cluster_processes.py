"""Process supervision for the test cluster.

Owns: starting each component detached in its own session (process group) with
<state>/pids/<name>.json (pid + kernel start time, so a reused pid is never killed) and
<state>/logs/<name>.log; stopping a group; finding stragglers by the DRACPU_CLUSTER_ID marker;
waiting for a condition while watching the process; the restart loop of `cluster.py _supervise`.
Must not: know what the components are or how they are configured (cluster_control_plane.py),
nor touch the network namespace (cluster_netns.py).
"""
import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

from cluster_state import ID_ENV, STATE, die, p, read_json, tail, write_file


def proc_start_time(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def pidinfo(name):
    return read_json(p("pids", name + ".json"))


def proc_alive(name):
    info = pidinfo(name)
    if not info:
        return False
    st = proc_start_time(info["pid"])
    if st is None or st != info["start"]:
        return False
    try:
        with open(f"/proc/{info['pid']}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def exit_report(proc, logs=()):
    """What `proc` and the programs it ran said last: the tail of its own log, then of each of
    `logs` (the real nodes' containerd and kubelet, which log to files of their own)."""
    out = f"last log lines of {proc}:\n{tail(p('logs', proc + '.log'))}"
    for path in logs:
        out += f"\nlast log lines of {os.path.basename(path)}:\n{tail(path)}"
    return out


def wait_for(what, fn, timeout, interval=0.2, proc=None, logs=()):
    """Polls fn() until it is true; dies when `timeout` passes or `proc` exits, with the tails of its
    log and of `logs` (exit_report)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc and not proc_alive(proc):
            die(f"{what}: {proc} exited; {exit_report(proc, logs)}")
        try:
            if fn():
                return
        except Exception as e:  # noqa: BLE001 -- keep polling, remember the reason
            last = e
        time.sleep(interval)
    die(f"timed out after {timeout}s waiting for {what} (last error: {last})"
        + (f"; {exit_report(proc, logs)}" if proc else ""))


def spawn(name, cmd, env=None, cwd=None):
    os.makedirs(p("logs"), exist_ok=True)
    os.makedirs(p("pids"), exist_ok=True)
    full_env = dict(env if env is not None else os.environ)
    full_env[ID_ENV] = STATE
    logf = open(p("logs", name + ".log"), "ab")
    logf.write(f"\n==== {datetime.datetime.now().isoformat()} {' '.join(map(shlex.quote, cmd))}\n".encode())
    logf.flush()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                            env=full_env, cwd=cwd or STATE, start_new_session=True, close_fds=True)
    logf.close()
    info = {"pid": proc.pid, "start": proc_start_time(proc.pid), "cmd": cmd}
    write_file(p("pids", name + ".json"), json.dumps(info))
    # the child is detached; reap it if it dies while we are still running
    threading.Thread(target=proc.wait, daemon=True).start()
    return proc.pid


def kill_group(name, grace=5.0):
    info = pidinfo(name)
    if not info:
        return
    pid = info["pid"]
    if proc_start_time(pid) == info["start"]:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and proc_start_time(pid) == info["start"] and proc_alive(name):
            time.sleep(0.1)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.unlink(p("pids", name + ".json"))
    except OSError:
        pass


def marked(pid):
    """True when process `pid` carries this state dir's id (ID_ENV=STATE) in its environment: every
    process a component starts inherits it (spawn sets it)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"{ID_ENV}={STATE}".encode() in f.read().split(b"\0")
    except OSError:
        return False


def stragglers():
    """Processes carrying this state dir's id in their environment (children that left the group)."""
    me = os.getpid()
    return [int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) != me and marked(d)]


def mntns_of(pid):
    """Process `pid`'s mount namespace as /proc names it ('mnt:[4026532174]'), or None."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def wait_new_mntns(pid, timeout=10.0):
    """The mount namespace `pid` moves to (an `unshare -m` it execs), once it differs from ours; None
    if it exits or does not within `timeout`. A fixed sleep read the host's own namespace from a
    process still starting, which `pids_in_mntns` would later have claimed whole."""
    mine = mntns_of(os.getpid())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ns = mntns_of(pid)
        if ns is None:
            return None
        if ns != mine:
            return ns
        time.sleep(0.02)
    return None


def pids_in_mntns(ns):
    """The processes of this state dir (marked) in mount namespace `ns`. The number alone does not
    name a namespace for long: once the last process of one exits, the kernel gives its number to
    the next namespace made on the machine (the lowest free one, any type), so a teardown that
    looked for the number alone SIGKILLed what another cluster had just started there (issue 30:
    another lane's real node, as its run.sh unshared)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid() and mntns_of(d) == ns and marked(d):
            out.append(int(d))
    return out


def kill_until_gone(find, rounds=3, pause=0.2):
    """SIGKILL the pids ``find()`` returns, round after round, until it returns none; returns the
    pids still there after ``rounds`` rounds (empty when all are gone)."""
    for _ in range(rounds):
        left = set(find())
        if not left:
            return set()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(pause)
    return set(find())


def kill_stragglers():
    kill_until_gone(stragglers)


def cmd_supervise(name, cmd):
    """Runs cmd, restarts it when it exits (backoff up to 30 s); stops it on SIGTERM."""
    child = None

    def stop(signum, _frame):
        if child and child.poll() is None:
            child.terminate()
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    backoff = 1
    while True:
        started = time.monotonic()
        child = subprocess.Popen(cmd)
        rc = child.wait()
        if time.monotonic() - started > 60:
            backoff = 1
        print(f"[supervise] {name} exited with {rc}; restarting in {backoff}s", flush=True)
        time.sleep(backoff)
        backoff = min(backoff * 2, 30)
