# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Why a node has not published: the driver pod's state, events and logs, as text.

Owns: the per-pod summary, the report of every pending node when a wait ends without success and its
failure message; and ``DriverHealth``, the rule that a driver cannot run (its image not pulled for
PULL_WINDOW seconds or PULL_FAILURES times, or CRASH_RESTARTS restarts), which ends the waits of
waiter.py and rollout.py early. Reads pods, events and logs through the given API object and never
raises on I/O errors (they go into the report).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Callable, Mapping
from typing import Any, List, Optional, TypedDict
from urllib.parse import quote

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.driver_pods import (
    describe_selectors,
    list_driver_pods,
    live_pods_by_node,
    pod_node,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.nodes import is_ready


class _ContainerBase(TypedDict):
    name: Optional[str]
    ready: bool
    restarts: int
    state: str
    reason: str


class ContainerState(_ContainerBase, total=False):
    """A container of a pod: ready, restarts, its state and why; how it last ended, if it did."""

    last_termination: str


class PodState(TypedDict):
    """A pod in brief (``pod_state``)."""

    name: Optional[str]
    phase: str
    reason: str
    message: str
    containers: List[ContainerState]


class _EntryBase(TypedDict):
    node: str
    state: str
    reason: str
    pod: Optional[PodState]
    logs: List[str]


class PendingEntry(_EntryBase, total=False):
    """A node the wait ended on: its state and why, its driver pod (or why none) and its last log
    lines (or why none)."""

    pod_error: str
    logs_error: str


def _meta(obj: K8sObject) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def pod_state(pod: K8sObject) -> PodState:
    """``{name, phase, reason, message, containers: [{name, ready, restarts, state, reason}]}``."""
    status = (pod or {}).get("status") or {}
    containers = []
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        state = cs.get("state") or {}
        current = next(iter(state), "unknown") if state else "unknown"
        detail = state.get(current) or {}
        entry: ContainerState = {
            "name": cs.get("name"),
            "ready": bool(cs.get("ready")),
            "restarts": cs.get("restartCount", 0),
            "state": current,
            "reason": detail.get("reason") or "",
        }
        last = (cs.get("lastState") or {}).get("terminated") or {}
        if last:
            entry["last_termination"] = "%s (exit %s)" % (last.get("reason") or "terminated",
                                                          last.get("exitCode"))
        containers.append(entry)
    return {
        "name": _meta(pod).get("name"),
        "phase": status.get("phase") or "Unknown",
        "reason": status.get("reason") or "",
        "message": status.get("message") or "",
        "containers": containers,
    }


def describe_pod(state: PodState) -> str:
    """One line: ``pod p Running; container dracpu waiting CrashLoopBackOff, 5 restarts``."""
    text = "pod %s %s" % (state["name"], state["phase"])
    if state["reason"]:
        text += " (%s)" % state["reason"]
    parts = []
    for c in state["containers"]:
        part = "container %s %s" % (c["name"], c["state"])
        if c["reason"]:
            part += " %s" % c["reason"]
        if c["restarts"]:
            part += ", %d restarts" % c["restarts"]
        if c.get("last_termination"):
            part += ", last %s" % c["last_termination"]
        parts.append(part)
    if parts:
        text += "; " + "; ".join(parts)
    return text


def pending_report(api: RawApi, result: Mapping[str, Any], namespace: str, pod_selector: list[str], log_lines: int = 20,
                   container: str | None = None) -> list[PendingEntry]:
    """Per node still missing or incomplete: state, reason, driver pod, logs.

    ``pod_selector`` is one label selector or a list of them (a release's
    DaemonSets). Returns a list of ``{node, state, reason, pod, logs}``; I/O
    errors are reported in the entries rather than raised.
    """
    selectors = [pod_selector] if isinstance(pod_selector, str) else list(pod_selector)
    progress = result["progress"]
    entries = []
    pods_by_node: dict[str, list[K8sObject]] = {}
    pod_error = None
    try:
        for pod in list_driver_pods(api, namespace, selectors):
            node = pod_node(pod)
            if node:
                pods_by_node.setdefault(node, []).append(pod)
    except KubeRequestError as exc:
        pod_error = exc.message
    pending = [(n, "missing", "no ResourceSlice published") for n in progress["missing"]]
    pending += [(n, "incomplete", r) for n, r in sorted(progress["incomplete"].items())]
    for node, state, reason in sorted(pending):
        entry: PendingEntry = {"node": node, "state": state, "reason": reason, "pod": None, "logs": []}
        pods = pods_by_node.get(node) or []
        if pod_error:
            entry["pod_error"] = pod_error
        elif not pods:
            entry["pod_error"] = "no driver pod on this node (namespace %s, %s)" % (
                namespace, describe_selectors(selectors))
        else:
            entry["pod"] = pod_state(pods[0])
            _with_logs(api, entry, namespace, log_lines, container)
        entries.append(entry)
    return entries


def _with_logs(api: RawApi, entry: PendingEntry, namespace: str, log_lines: int, container: str | None) -> None:
    """Add the pod's last log lines to ``entry`` (not for a pod still Pending: it has none)."""
    pod = entry["pod"]
    if log_lines and pod is not None and pod["phase"] != "Pending":
        try:
            text = api.pod_log(namespace, str(pod["name"]), container=container, tail_lines=log_lines)
            entry["logs"] = text.splitlines()[-int(log_lines):]
        except KubeRequestError as exc:
            entry["logs_error"] = exc.message


def rollout_report(api: RawApi, serving: Mapping[str, Any], namespace: str, log_lines: int = 20,
                   container: str | None = None) -> list[PendingEntry]:
    """Per node whose driver pod does not serve after its pool completed (rollout.wait_serving's
    ``nodes``): ``{node, state: "not serving", reason, pod, logs}``, the pod the one not Ready."""
    entries = []
    live = live_pods_by_node(serving.get("pods") or [])
    for node, reason in sorted(serving["nodes"].items()):
        entry: PendingEntry = {"node": node, "state": "not serving", "reason": reason, "pod": None, "logs": []}
        unready = [p for p in live.get(node) or [] if not is_ready(p)]
        if unready:
            entry["pod"] = pod_state(unready[0])
            _with_logs(api, entry, namespace, log_lines, container)
        entries.append(entry)
    return entries


def _entry_lines(entries: list[PendingEntry]) -> list[str]:
    lines = []
    for entry in entries:
        line = "- %s: %s" % (entry["node"], entry["reason"])
        pod = entry.get("pod")
        if pod:
            line += "; " + describe_pod(pod)
        elif entry.get("pod_error"):
            line += "; " + entry["pod_error"]
        lines.append(line)
        if entry.get("logs"):
            lines.append("  last log lines of %s:" % (pod["name"] if pod else None))
            lines.extend("    " + log for log in entry["logs"])
        elif entry.get("logs_error"):
            lines.append("  logs unavailable: %s" % entry["logs_error"])
    return lines


def timeout_message(driver: str, timeout: int, entries: list[PendingEntry],
                    stats: Mapping[str, Any] | None = None) -> str:
    """The failure message listing each pending node with its pod and logs."""
    lines = ["timed out after %ss waiting for the ResourceSlices of driver %s on %d node(s):"
             % (timeout, driver, len(entries))]
    return "\n".join(lines + _entry_lines(entries))


def rollout_message(driver: str, timeout: int, serving: Mapping[str, Any], entries: list[PendingEntry]) -> str:
    """The failure message when every pool is complete but the driver has not rolled out: the
    DaemonSets behind, each node whose driver pod does not serve (pod, logs), the last API error."""
    lines = ["timed out after %ss waiting for driver %s to roll out: every pool is complete, but the "
             "driver that published them may not be the one running (after an upgrade the old driver's pool "
             "stays until the new one publishes)" % (timeout, driver)]
    lines += ["- %s" % line for line in serving.get("daemonsets") or []]
    lines += _entry_lines(entries)
    if serving.get("last_error"):
        lines.append("last API error: %s" % serving["last_error"])
    return "\n".join(lines)


# a driver that cannot run: its image not pulled for this long or this often, or restarted this often
PULL_WINDOW = 30.0
PULL_FAILURES = 2
CRASH_RESTARTS = 3
PULL_REASONS = ("ErrImagePull", "ImagePullBackOff")


def _statuses(pod: K8sObject) -> list[K8sObject]:
    status = (pod or {}).get("status") or {}
    return list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or [])


def _image(pod: K8sObject, status: K8sObject) -> str:
    """The image a container asks for: its status's ``image``, else the pod spec's."""
    spec = (pod or {}).get("spec") or {}
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        if container.get("name") == status.get("name") and container.get("image"):
            return str(container["image"])
    return str(status.get("image") or "")


def pull_failures(events: list[K8sObject]) -> tuple[int, list[str]]:
    """The failed pulls in a pod's events (the kubelet's reason ``Failed``, ``Failed to pull image ...``,
    each counted ``count`` times) and their messages."""
    count, messages = 0, []
    for event in events or []:
        message = str(event.get("message") or "")
        if event.get("reason") == "Failed" and message.startswith("Failed to pull image"):
            series = (event.get("series") or {}).get("count") or 0
            count += max(int(event.get("count") or 1), int(series))
            messages.append(message)
    return count, messages


def stuck_pull(node: str, pod: K8sObject, events: list[K8sObject], waited: float) -> str | None:
    """Why the pod's image cannot be pulled, once a container waited ``waited`` >= PULL_WINDOW seconds in
    ErrImagePull/ImagePullBackOff or its events hold PULL_FAILURES failed pulls; else None."""
    failures, messages = pull_failures(events)
    for status in _statuses(pod):
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") not in PULL_REASONS or (waited < PULL_WINDOW and failures < PULL_FAILURES):
            continue
        text = "driver pod %s on node %s cannot pull its image %s: %s" % (
            _meta(pod).get("name"), node, _image(pod, status), waiting["reason"])
        if waiting.get("message"):
            text += ": %s" % waiting["message"]
        if messages and messages[-1] != waiting.get("message"):
            text += " (kubelet: %s)" % messages[-1]
        return text
    return None


def crash_looping(pod: K8sObject) -> K8sObject | None:
    """The container status that restarted CRASH_RESTARTS times and is down (CrashLoopBackOff or terminated)."""
    for status in _statuses(pod):
        state = status.get("state") or {}
        down = ((state.get("waiting") or {}).get("reason") == "CrashLoopBackOff") or "terminated" in state
        if int(status.get("restartCount") or 0) >= CRASH_RESTARTS and down:
            return status
    return None


class DriverHealth(object):
    """Whether the driver pods on some nodes cannot run; ``check(nodes)`` -> why, or None.

    Remembers, by ``clock``, since when each pod has been seen waiting for its image."""

    def __init__(self, api: RawApi, namespace: str, selectors: list[str], clock: Callable[[], float],
                 log_lines: int = 20, container: str | None = None) -> None:
        self.api, self.namespace, self.selectors, self.clock = api, namespace, selectors, clock
        self.log_lines, self.container = log_lines, container
        self.pulling: dict[str, float] = {}

    def check(self, nodes: list[str], pods: list[K8sObject] | None = None) -> str | None:
        """Why the driver cannot run on one of ``nodes`` (their pods read unless given), or None."""
        try:
            pods = list_driver_pods(self.api, self.namespace, self.selectors) if pods is None else pods
        except KubeRequestError:
            return None
        live, now = live_pods_by_node(pods), self.clock()
        seen: set[str] = set()
        for node in sorted(nodes):
            for pod in live.get(node) or []:
                problem = self._pod(node, pod, now, seen)
                if problem:
                    return problem
        self.pulling = dict((k, v) for k, v in self.pulling.items() if k in seen)
        return None

    def _pod(self, node: str, pod: K8sObject, now: float, seen: set[str]) -> str | None:
        crashed = crash_looping(pod)
        if crashed:
            return self._crash(node, pod, crashed)
        if not any(((s.get("state") or {}).get("waiting") or {}).get("reason") in PULL_REASONS
                   for s in _statuses(pod)):
            return None
        key = str(_meta(pod).get("uid") or _meta(pod).get("name"))
        seen.add(key)
        since = self.pulling.setdefault(key, now)
        return stuck_pull(node, pod, self._events(pod), now - since)

    def _events(self, pod: K8sObject) -> list[K8sObject]:
        selector = "involvedObject.kind=Pod,involvedObject.name=%s" % _meta(pod).get("name")
        path = "/api/v1/namespaces/%s/events" % quote(self.namespace, safe="")
        try:
            return list(self.api.get_json(path, {"fieldSelector": selector}).get("items") or [])
        except KubeRequestError:
            return []

    def _crash(self, node: str, pod: K8sObject, status: K8sObject) -> str:
        state = status.get("state") or {}
        last = (status.get("lastState") or {}).get("terminated") or state.get("terminated") or {}
        how = ((state.get("waiting") or {}).get("reason") or "terminated")
        text = "driver pod %s on node %s keeps crashing: container %s restarted %d times (%s" % (
            _meta(pod).get("name"), node, status.get("name"), int(status.get("restartCount") or 0), how)
        if last:
            text += ", last %s, exit code %s" % (last.get("reason") or "terminated", last.get("exitCode"))
        text += ")"
        entry: PendingEntry = {"node": node, "state": "crashing", "reason": how, "logs": [], "pod": PodState(
            name=_meta(pod).get("name"), phase="Running", reason="", message="", containers=[])}
        _with_logs(self.api, entry, self.namespace, self.log_lines, self.container or status.get("name"))
        if entry.get("logs"):
            text += "\n  last log lines of %s:\n" % _meta(pod).get("name")
            text += "\n".join("    " + line for line in entry["logs"])
        elif entry.get("logs_error"):
            text += "\n  logs unavailable: %s" % entry["logs_error"]
        return text


def cannot_run_message(driver: str, reason: str) -> str:
    """The failure when a wait ended early because the driver cannot run."""
    return "driver %s cannot run, so the wait ended before its timeout: %s" % (driver, reason)
