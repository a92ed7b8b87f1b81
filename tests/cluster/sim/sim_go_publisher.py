"""The simulated nodes' driver process: the Go test driver's publish mode, `dracpu publish`.

Owns: starting `<driver dir>/dracpu publish --kubeconfig K --qps Q --burst B` (one process for
every simulated node; the binary from tests/cluster/driver, `CLUSTER_DRIVER_DIR` or its build.sh),
the JSON line protocol (internal/publish/protocol.go: requests on its stdin, replies and log events
on its stdout), synchronous requests with a timeout, and starting the process again when it died
(every node's driver is then forgotten: `started` is cleared, so the caller starts them again).
Must not: decide anything about devices, config or slices (the Go driver does), nor when a node's
driver starts or publishes (sim_driver_publish.py and sim_pods.py do).
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
from typing import Any, Callable

log = logging.getLogger("sim")

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER_BUILD = os.path.join(os.path.dirname(HERE), "driver", "build.sh")


class PublisherError(RuntimeError):
    """The publish process did not answer (died, timed out) or refused a request."""


def driver_dir(env: dict) -> str:
    """The directory holding `dracpu`: CLUSTER_DRIVER_DIR, else what the driver's build.sh prints."""
    d = env.get("CLUSTER_DRIVER_DIR") or ""
    if d:
        return d
    out = subprocess.run([DRIVER_BUILD], check=True, stdout=subprocess.PIPE, text=True)
    return out.stdout.strip().splitlines()[-1]


class GoPublisher:
    """One `dracpu publish` child; request() is safe from many threads."""

    def __init__(self, binary: str, kubeconfig: str, qps: float, burst: int,
                 on_log: Callable[[str, str, str], None], timeout: float = 120.0) -> None:
        self.argv = [binary, "publish", f"--kubeconfig={kubeconfig}", f"--qps={qps:g}", f"--burst={burst}"]
        self.on_log = on_log
        self.timeout = timeout
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.seq = 0
        self.pending: dict[int, tuple[threading.Event, list]] = {}
        self.started: dict[str, str] = {}       # node -> pod uid whose driver the process runs
        self.restarts = 0

    def _ensure(self) -> subprocess.Popen:
        """The running child (started now if none or it died); call with self.lock held."""
        if self.proc is not None and self.proc.poll() is None:
            return self.proc
        if self.proc is not None:
            self.restarts += 1
            log.error("dracpu publish exited with %s: starting it again (restart %d); every simulated "
                      "node's driver is started again", self.proc.returncode, self.restarts)
            self.started.clear()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)
        threading.Thread(target=self._read, args=(self.proc,), name="publish-reader", daemon=True).start()
        log.info("started %s (pid %d)", " ".join(self.argv[:2]), self.proc.pid)
        return self.proc

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                log.warning("dracpu publish: %s", line.rstrip())
                continue
            if ev.get("event") == "log":
                self.on_log(ev.get("node", ""), ev.get("pod", ""), ev.get("line", ""))
                continue
            with self.lock:
                waiter = self.pending.pop(int(ev.get("id") or 0), None)
            if waiter is not None:
                waiter[1].append(ev)
                waiter[0].set()
        with self.lock:   # the child is gone: fail whoever waits
            for done, _ in self.pending.values():
                done.set()
            self.pending.clear()

    def request(self, op: str, node: str, **fields: Any) -> dict:
        """Send one request and wait for its reply (raises PublisherError without one)."""
        done: threading.Event = threading.Event()
        box: list = []
        with self.lock:
            proc = self._ensure()
            self.seq += 1
            rid = self.seq
            self.pending[rid] = (done, box)
            try:
                assert proc.stdin is not None
                proc.stdin.write(json.dumps({"id": rid, "op": op, "node": node, **fields}) + "\n")
                proc.stdin.flush()
            except OSError as e:
                self.pending.pop(rid, None)
                raise PublisherError(f"dracpu publish: {op} {node}: {e}") from None
        if not done.wait(self.timeout) or not box:
            with self.lock:
                self.pending.pop(rid, None)
            raise PublisherError(f"dracpu publish: {op} {node}: no reply")
        reply = box[0]
        with self.lock:
            if op == "start" and reply.get("ok"):
                self.started[node] = fields.get("pod", "")
            elif op == "stop":
                self.started.pop(node, None)
        return reply

    def running_for(self, node: str) -> str:
        """The pod uid whose driver the process runs for the node ("" if none, or it restarted)."""
        with self.lock:
            return self.started.get(node, "")

    def close(self) -> None:
        with self.lock:
            proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
