# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Why a node has not published: the driver pod's state and logs, as text.

Owns: the per-pod summary (phase, container states, restarts, last
termination), the report of every pending node after a wait timed out, and
the failure message built from it; the same for the nodes whose driver pod
did not turn Ready after their pools completed (rollout.py's wait). Reads pods and logs through the given
API object and never raises on I/O errors (they go into the report). The
wait itself is in waiter.py.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.driver_pods import (
    describe_selectors,
    list_driver_pods,
    live_pods_by_node,
    pod_node,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.nodes import is_ready


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return (obj or {}).get("metadata") or {}


def pod_state(pod: dict[str, Any]) -> dict[str, Any]:
    """``{name, phase, reason, message, containers: [{name, ready, restarts, state, reason}]}``."""
    status = (pod or {}).get("status") or {}
    containers = []
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        state = cs.get("state") or {}
        current = next(iter(state), "unknown") if state else "unknown"
        detail = state.get(current) or {}
        entry = {
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


def describe_pod(state: dict[str, Any]) -> str:
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


def pending_report(api: RawApi, result: dict[str, Any], namespace: str, pod_selector: list[str], log_lines: int = 20,
                   container: str | None = None) -> list[dict[str, Any]]:
    """Per node still missing or incomplete: state, reason, driver pod, logs.

    ``pod_selector`` is one label selector or a list of them (a release's
    DaemonSets). Returns a list of ``{node, state, reason, pod, logs}``; I/O
    errors are reported in the entries rather than raised.
    """
    selectors = [pod_selector] if isinstance(pod_selector, str) else list(pod_selector)
    progress = result["progress"]
    entries = []
    pods_by_node: dict[str, list[dict[str, Any]]] = {}
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
        entry = {"node": node, "state": state, "reason": reason, "pod": None, "logs": []}
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


def _with_logs(api: RawApi, entry: dict[str, Any], namespace: str, log_lines: int, container: str | None) -> None:
    """Add the pod's last log lines to ``entry`` (not for a pod still Pending: it has none)."""
    if log_lines and entry["pod"]["phase"] != "Pending":
        try:
            text = api.pod_log(namespace, entry["pod"]["name"], container=container, tail_lines=log_lines)
            entry["logs"] = text.splitlines()[-int(log_lines):]
        except KubeRequestError as exc:
            entry["logs_error"] = exc.message


def rollout_report(api: RawApi, serving: dict[str, Any], namespace: str, log_lines: int = 20,
                   container: str | None = None) -> list[dict[str, Any]]:
    """Per node whose driver pod does not serve after its pool completed (rollout.wait_serving's
    ``nodes``): ``{node, state: "not serving", reason, pod, logs}``, the pod the one not Ready."""
    entries = []
    live = live_pods_by_node(serving.get("pods") or [])
    for node, reason in sorted(serving["nodes"].items()):
        entry: dict[str, Any] = {"node": node, "state": "not serving", "reason": reason, "pod": None, "logs": []}
        unready = [p for p in live.get(node) or [] if not is_ready(p)]
        if unready:
            entry["pod"] = pod_state(unready[0])
            _with_logs(api, entry, namespace, log_lines, container)
        entries.append(entry)
    return entries


def _entry_lines(entries: list[dict[str, Any]]) -> list[str]:
    lines = []
    for entry in entries:
        line = "- %s: %s" % (entry["node"], entry["reason"])
        if entry.get("pod"):
            line += "; " + describe_pod(entry["pod"])
        elif entry.get("pod_error"):
            line += "; " + entry["pod_error"]
        lines.append(line)
        if entry.get("logs"):
            lines.append("  last log lines of %s:" % entry["pod"]["name"])
            lines.extend("    " + log for log in entry["logs"])
        elif entry.get("logs_error"):
            lines.append("  logs unavailable: %s" % entry["logs_error"])
    return lines


def timeout_message(driver: str, timeout: int, entries: list[dict[str, Any]],
                    stats: dict[str, Any] | None = None) -> str:
    """The failure message listing each pending node with its pod and logs."""
    lines = ["timed out after %ss waiting for the ResourceSlices of driver %s on %d node(s):"
             % (timeout, driver, len(entries))]
    return "\n".join(lines + _entry_lines(entries))


def rollout_message(driver: str, timeout: int, serving: dict[str, Any], entries: list[dict[str, Any]]) -> str:
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
