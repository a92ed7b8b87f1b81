# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""How a watch's events are read for the one wait (k8s/wait.py): in the caller's thread (``InlinePump``), or
by a daemon thread into a queue (``ThreadedPump``), as client-go's reflector reads in its own goroutine, so
that a wait's tick is judged while its watch stays open instead of ending the watch to wake up.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import queue
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject


class Pump(Protocol):
    """How a watch's events are read: ``next(timeout)`` -> the next event, None (no event within
    ``timeout`` seconds), or EndOfWatch; ``close`` when the wait is done with it."""

    def next(self, timeout: float) -> K8sObject | None: ...

    def close(self) -> None: ...


class EndOfWatch(Exception):
    """The watch's stream ended (the server's timeoutSeconds, or closed)."""


class InlinePump(object):
    """A watch's events read in the caller's thread: ``next`` blocks until the next one (its ``timeout`` is not
    kept). For waits without a tick, and for scripted sources under a fake clock, where a ``None`` the
    source yields stands for time passing without an event."""

    def __init__(self, events: Iterator[K8sObject | None]) -> None:
        self.events = iter(events)

    def next(self, timeout: float) -> K8sObject | None:
        try:
            return next(self.events)
        except StopIteration:
            raise EndOfWatch()

    def close(self) -> None:
        close = getattr(self.events, "close", None)
        if close:
            close()


class ThreadedPump(object):
    """A watch's events read by a daemon thread into a queue: ``next(timeout)`` returns the next event, or
    None when ``timeout`` seconds pass without one, so a tick is judged while the watch stays open.
    ``close`` stops handing events on; a thread blocked in a read ends with the stream (the watch's
    timeoutSeconds is the wait's deadline) or the process."""

    def __init__(self, events: Iterator[K8sObject | None]) -> None:
        self.queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._read, args=(events,), name="watch", daemon=True)
        self.thread.start()

    def _read(self, events: Iterator[K8sObject | None]) -> None:
        try:
            for event in events:
                if self.stopped.is_set():
                    return
                self.queue.put(("event", event))
            self.queue.put(("end", None))
        except Exception as exc:  # handed to the waiting thread, which maps it
            self.queue.put(("error", exc))

    def next(self, timeout: float) -> K8sObject | None:
        try:
            kind, item = self.queue.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None
        if kind == "end":
            raise EndOfWatch()
        if kind == "error":
            raise item
        return item

    def close(self) -> None:
        self.stopped.set()
