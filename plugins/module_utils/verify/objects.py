# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""verify's test objects through the API: their paths, get, delete and the wait until they are gone.

Owns the claim ``<vmi>-cpu``, the launcher pod ``virt-launcher-<vmi>`` and, on the KEP-5517 path, the probe
and control pods (``node_allocatable.py``): pods are deleted before the claim, each deletion waited for, and the
problems returned instead of raised (the caller deletes in a ``finally`` path); the waits are k8s/wait.py's.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import functools
from collections.abc import Callable
from urllib.parse import quote
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.wait import poll_until
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.manifests import claim_name, pod_name
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.node_allocatable import control_name, probe_name


class Objects(object):
    """The test claim and pods of VMI ``vmi`` in ``namespace``."""

    def __init__(self, api: RawApi, namespace: str, vmi: str, clock: Callable[[], float],
                 sleep: Callable[[float], None]) -> None:
        self.api, self.clock, self.sleep = api, clock, sleep
        ns = quote(namespace, safe="")
        self.claims = "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % ns
        self.pods = "/api/v1/namespaces/%s/pods" % ns
        self.claim_name, self.pod_name, self.probe_name = claim_name(vmi), pod_name(vmi), probe_name(vmi)
        self.claim = "%s/%s" % (self.claims, quote(self.claim_name, safe=""))
        self.pod = "%s/%s" % (self.pods, quote(self.pod_name, safe=""))
        self.probe = "%s/%s" % (self.pods, quote(self.probe_name, safe=""))
        self.control_name = control_name(vmi)
        self.control = "%s/%s" % (self.pods, quote(self.control_name, safe=""))
        self.events = "/api/v1/namespaces/%s/events" % ns

    def get(self, path: str) -> dict[str, Any] | None:
        try:
            return self.api.get_json(path)
        except KubeRequestError as exc:
            if exc.not_found:
                return None
            raise

    def delete(self, timeout: int, paths: tuple[str, ...] | None = None) -> list[str]:
        """Delete the pods, then the claim (or ``paths``), each waited for; the problems (none: all gone).
        A pod is deleted gracefully (its own terminationGracePeriodSeconds is 1; 0 would be immediate): a
        forced deletion takes it out of the API before its kubelet has unprepared the claim, and the kubelet
        then refuses the next claim of the same name ("old ResourceClaim with same name ... still exists
        (previous pod force-deleted?!)", seen on the real node)."""
        problems = []
        for path in paths or (self.control, self.probe, self.pod, self.claim):
            try:
                self.api.send_json("DELETE", path)
            except KubeRequestError as exc:
                if not exc.not_found:
                    problems.append(exc.message)
                    continue
            gone = poll_until(functools.partial(self.get, path), lambda seen: seen is None, timeout, 1.0,
                              self.clock, self.sleep)
            if not gone.done:
                problems.append("%s still there %ds after its deletion" % (path, timeout))
        return problems

    def pod_events(self, uid: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        """The events of this run's launcher pod (or pod ``name``) of ``uid``, not of an earlier pod of the
        same name."""
        selector = "involvedObject.name=%s,involvedObject.kind=Pod" % (name or self.pod_name)
        if uid:
            selector += ",involvedObject.uid=%s" % uid
        query = {"fieldSelector": selector}
        try:
            return self.api.get_json(self.events, query).get("items") or []
        except KubeRequestError:
            return []
