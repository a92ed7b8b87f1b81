# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The release stage's uninstall (pure): from preflight's ``installed`` the steps (the release; the
namespace only when it carries the collection's owner label and holds no other helm release) and
the words of the report and the failure. plugins/plugin_utils/uninstall.py runs the steps.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import Installed


def namespace_owned(namespace: dict[str, Any], owner_label: dict[str, Any]) -> bool:
    """Whether the namespace (``installed.namespace_state``'s shape) exists and carries every label of
    ``owner_label`` with its value: the collection created it."""
    labels = (namespace or {}).get("labels") or {}
    return bool((namespace or {}).get("exists")) and bool(owner_label) and all(
        labels.get(k) == v for k, v in owner_label.items())


def plan(installed: Installed, release_name: str, namespace: str, owner_label: dict[str, Any]) -> dict[str, Any]:
    """The uninstall's steps: ``{helm, delete_namespace, namespace_line}``.

    ``installed``: ``{namespace, release, other_releases}`` as preflight read them (the one reading;
    the release stage fails before this when it could not). ``helm``: uninstall the release through
    helm (there is one); ``delete_namespace``: the namespace goes; ``namespace_line``: the report's line
    for a namespace that stays (None when it goes or is not there).
    """
    ns: dict[str, Any] = dict(installed.get("namespace") or {})
    release = installed.get("release")
    others = [r for r in installed.get("other_releases") or [] if r != release_name]
    owned = namespace_owned(ns, owner_label)
    line = None
    if not ns.get("exists"):
        line = "namespace %s: not there" % namespace
    elif not owned:
        line = ("namespace %s: left in place, not created by this collection (no %s label)"
                % (namespace, ",".join("%s=%s" % kv for kv in sorted(owner_label.items()))))
    elif others:
        line = ("namespace %s: left in place, created by this collection but it also holds helm release(s) %s"
                % (namespace, ", ".join(others)))
    return {"helm": bool(release), "delete_namespace": owned and not others,
            "namespace_line": line}


def release_line(release_name: str, namespace: str, action: str) -> str:
    """``release <name> (namespace <ns>): <action>``, the first line of the report, as an install's."""
    return "release %s (namespace %s): %s" % (release_name, namespace, action)


def deleted_line(namespace: str, check: bool) -> str:
    return "namespace %s: %s (created by this collection)" % (namespace, "would delete it" if check else "deleted")


def slices_outlive_message(driver: str, slices: list[dict[str, Any]], timeout: int) -> str:
    """The failure when ``slices`` (ResourceSlice objects) of ``driver`` are still there ``timeout``
    seconds after the release went: how many, on which nodes, and why that happens."""
    nodes = sorted(set(str((s.get("spec") or {}).get("nodeName") or "?") for s in slices))
    return ("%d ResourceSlice(s) of driver %s are still there %ss after the release was removed, on node(s) %s. "
            "The kubelet deletes a driver's slices about 30s after the driver stops; slices of a node whose "
            "kubelet is down stay until it returns or the Node is deleted. Another release of dra-driver-cpu "
            "still running would also keep them (helm list -A)." % (len(slices), driver, timeout, ", ".join(nodes)))
