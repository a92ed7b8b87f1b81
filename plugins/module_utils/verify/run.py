# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""One run of the verify module, shared by the module and its action plugin (k8s/runner.py).

Owns the order of the API calls; every decision is in the other files of this package (``sizing.py``,
``manifests.py``, ``readout.py``, ``report.py``, ``pinned.py``):
1. the published topology, waited for as the topology stage waits (``topology/run.py``), and the
   driver's ResourceSlices (which NUMA attribute a count of CPU devices can be kept on);
2. the claim's size; in check mode the run stops here and says what it would do;
3. test objects of an earlier run are deleted, the claim and the pod created; the claim's allocation
   and then the pod's readout (its log) are waited for, each up to ``timeout`` seconds;
4. the driver's pinning from its log (``pinned.py``), the judgement, the report;
5. whatever happened, the pod and the claim are deleted and their deletion waited for (``finally``).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import time
from collections.abc import Callable
from urllib.parse import quote
from typing import TYPE_CHECKING, Any

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import auth_argument_spec
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.target import client_error
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as topology_run
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import manifests, readout, report, sizing
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.pinned import pinned as read_pinned

if TYPE_CHECKING:  # the annotation only: the module does not import the runner
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.runner import GetClient

# Kubernetes' own e2e busybox: k8s.io/kubernetes test/utils/image/manifest.go,
# `configs[BusyBox] = Config{list.PromoterE2eRegistry, "busybox", "1.37.0-1"}` (PromoterE2eRegistry is
# registry.k8s.io/e2e-test-images); the role's default (roles/dra_cpu/defaults/main.yml) is the same
DEFAULT_IMAGE = "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"
POLL = 2.0


def argument_spec() -> dict[str, Any]:
    spec = auth_argument_spec(AUTH_ARG_SPEC)
    spec.update(
        name=dict(type="str", default="dra-cpu-verify"),
        namespace=dict(type="str", default="default"),
        driver_namespace=dict(type="str", default="dra-driver-cpu"),
        release_name=dict(type="str", default="dra-driver-cpu"),
        cpus=dict(type="int", default=0),
        vm_vcpus=dict(type="int", default=0),
        vm_io_threads=dict(type="int", default=0),
        vm_isolate_emulator_thread=dict(type="bool", default=False),
        vm_even_parity=dict(type="bool", default=False),
        image=dict(type="str", default=DEFAULT_IMAGE),
        tolerations=dict(type="list", elements="dict", default=[]),
        allow_missing_metadata=dict(type="bool", default=False),
        timeout=dict(type="int", default=120),
        topology_timeout=dict(type="int", default=300),
    )
    return spec


class Objects(object):
    """The test claim and pod through the API: paths, create, get, delete, wait until gone."""

    def __init__(self, api: RawApi, namespace: str, name: str, clock: Callable[[], float],
                 sleep: Callable[[float], None]) -> None:
        self.api, self.clock, self.sleep = api, clock, sleep
        ns, n = quote(namespace, safe=""), quote(name, safe="")
        self.claims = "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % ns
        self.pods = "/api/v1/namespaces/%s/pods" % ns
        self.claim, self.pod = "%s/%s" % (self.claims, n), "%s/%s" % (self.pods, n)
        self.events = "/api/v1/namespaces/%s/events" % ns
        self.name = name

    def get(self, path: str) -> dict[str, Any] | None:
        try:
            return self.api.get_json(path)
        except KubeRequestError as exc:
            if exc.not_found:
                return None
            raise

    def delete(self, timeout: int) -> list[str]:
        """Delete the pod, then the claim, each waited for; the problems (none: both gone). The pod is
        deleted gracefully (its own terminationGracePeriodSeconds is 1; 0 would be immediate): a forced
        deletion takes it out of the API before its kubelet has unprepared the claim, and the kubelet
        then refuses the next claim of the same name ("old ResourceClaim with same name ... still
        exists (previous pod force-deleted?!)", seen on the real node)."""
        problems = []
        for path in (self.pod, self.claim):
            try:
                self.api.send_json("DELETE", path)
            except KubeRequestError as exc:
                if not exc.not_found:
                    problems.append(exc.message)
                    continue
            deadline = self.clock() + timeout
            while self.get(path) is not None:
                if self.clock() >= deadline:
                    problems.append("%s still there %ds after its deletion" % (path, timeout))
                    break
                self.sleep(1)
        return problems

    def pod_events(self, uid: str | None = None) -> list[dict[str, Any]]:
        """The events of this run's pod (``uid``), not of an earlier pod of the same name."""
        selector = "involvedObject.name=%s,involvedObject.kind=Pod" % self.name
        if uid:
            selector += ",involvedObject.uid=%s" % uid
        query = {"fieldSelector": selector}
        try:
            return self.api.get_json(self.events, query).get("items") or []
        except KubeRequestError:
            return []


def _topology(api: RawApi, params: dict[str, Any], clock: Callable[[], float] | None,
              sleep: Callable[[float], None] | None) -> tuple[dict[str, Any], str | None]:
    """The topology stage's fact for the driver's nodes (waited for, as the role's topology stage)."""
    tparams = dict((k, v.get("default")) for k, v in topology_run.argument_spec().items())
    tparams.update(driver=manifests.DEVICE_CLASS, namespace=params["driver_namespace"],
                   release_name=params["release_name"], wait=True, timeout=params["topology_timeout"])
    result, failure = topology_run.run(api, tparams, [], clock=clock, sleep=sleep)
    fact = (result.get("ansible_facts") or {}).get("dra_cpu_topology") or result.get("topology") or {}
    return fact, failure


def _wait_for(clock: Callable[[], float], sleep: Callable[[float], None], timeout: int,
              done: Callable[[], bool]) -> bool:
    deadline = clock() + timeout
    while True:
        if done():
            return True
        if clock() >= deadline:
            return False
        sleep(POLL)


def verify(api: RawApi, params: dict[str, Any], check_mode: bool, clock: Callable[[], float] | None = None,
           sleep: Callable[[float], None] | None = None) -> dict[str, Any]:
    """The module's result (``failed`` and ``msg`` when the claim is not proven)."""
    now, pause = clock or time.monotonic, sleep or time.sleep
    problems = sizing.check_size_params(params)
    if problems:
        return {"failed": True, "changed": False, "msg": "; ".join(problems)}
    fact, failure = _topology(api, params, clock, sleep)
    if failure:
        return {"failed": True, "changed": False, "topology": fact, "msg": failure}
    cpus, size_line = sizing.claim_size(params, fact)
    mode = fact.get("mode") or "grouped"
    slices = api.get_json("/apis/resource.k8s.io/v1/resourceslices",
                          {"fieldSelector": "spec.driver=%s" % manifests.DEVICE_CLASS}).get("items") or []
    numa = manifests.numa_attribute(slices) if mode == "individual" else None
    name, namespace = params["name"], params["namespace"]
    metadata_file = manifests.metadata_path(name)
    result: dict[str, Any] = {"changed": False, "cpus": cpus, "mode": mode, "numa_attribute": numa,
                              "sizing": size_line, "metadata_file": metadata_file, "passed": False,
                              "ansible_facts": {"dra_cpu_topology": fact}}
    if cpus < 1:
        return dict(result, failed=True, msg=sizing.NO_CPUS, report=[size_line])
    if check_mode:
        return dict(result, report=[size_line, report.check_mode_line(namespace, name, cpus, mode, numa)])
    claim_def = manifests.claim_manifest(name, namespace, cpus, mode, numa)
    pod_def = manifests.pod_manifest(name, namespace, name, cpus, params["image"], params["tolerations"])
    result.update(claim_manifest=claim_def, pod_manifest=pod_def)
    objects = Objects(api, namespace, name, now, pause)
    leftovers = objects.delete(params["timeout"])
    if leftovers:
        return dict(result, failed=True, msg="cannot remove the test objects of an earlier run: %s" % "; ".join(leftovers))
    try:
        outcome = _prove(api, objects, params, result, cpus, mode, numa, size_line, now, pause)
    finally:
        cleanup = objects.delete(params["timeout"])
    result.update(outcome)
    result["cleanup"] = cleanup or ["deleted"]
    if cleanup:
        result.setdefault("report", []).append("test objects not removed: %s" % "; ".join(cleanup))
        if not result.get("failed"):
            result.update(failed=True, msg="the test objects were not removed: %s" % "; ".join(cleanup))
    return result


def _prove(api: RawApi, objects: Objects, params: dict[str, Any], result: dict[str, Any], cpus: int, mode: str,
           numa: str | None, size_line: str, now: Callable[[], float], pause: Callable[[float], None]) -> dict[str, Any]:
    name, namespace, timeout = params["name"], params["namespace"], params["timeout"]
    api.send_json("POST", objects.claims, result["claim_manifest"])
    api.send_json("POST", objects.pods, result["pod_manifest"])
    seen: dict[str, Any] = {}

    def allocated() -> bool:
        seen["claim"] = objects.get(objects.claim) or {}
        return bool((seen["claim"].get("status") or {}).get("allocation"))

    if not _wait_for(now, pause, timeout, allocated):
        pod = objects.get(objects.pod) or {}
        return {"failed": True, "claim": seen.get("claim"), "pod": pod,
                "msg": report.not_allocated(namespace, name, cpus, timeout, pod), "report": [size_line]}

    def printed() -> bool:
        seen["pod"] = objects.get(objects.pod) or {}
        phase = (seen["pod"].get("status") or {}).get("phase")
        if phase in ("Failed", "Succeeded"):
            return True
        if phase != "Running":
            return False
        seen["log"] = api.pod_log(namespace, name, container=manifests.CONTAINER, tail_lines=10000)
        return manifests.MARK + "end" in seen["log"]

    ran = _wait_for(now, pause, timeout, printed)
    pod, claim = seen.get("pod") or {}, seen.get("claim") or {}
    if not ran or (pod.get("status") or {}).get("phase") != "Running":
        return {"failed": True, "claim": claim, "pod": pod, "report": [size_line],
                "msg": report.not_started(namespace, name, pod, timeout,
                                          objects.pod_events((pod.get("metadata") or {}).get("uid")))}
    try:
        pinned = read_pinned(api, {"pod": name, "namespace": namespace, "driver_namespace": params["driver_namespace"],
                                   "release_name": params["release_name"], "log_lines": 5000})
    except KubeRequestError as exc:
        pinned = {"failed": True, "msg": exc.message}
    pinned_cpus = (pinned.get("containers") or {}).get(manifests.CONTAINER)
    seen_out = readout.judge(seen.get("log") or "", claim, cpus, mode, pinned_cpus,
                             params["allow_missing_metadata"], result["metadata_file"])
    results = readout.allocated_devices(claim)
    lines = [size_line, report.allocation_line(cpus, results, pod, mode, numa)]
    lines += report.readout_lines(seen_out, result["metadata_file"], pinned)
    out: dict[str, Any] = {"claim": claim, "pod": pod, "node": (pod.get("spec") or {}).get("nodeName"),
                           "pod_phase": (pod.get("status") or {}).get("phase"),
                           "qos_class": (pod.get("status") or {}).get("qosClass"), "readout": seen_out,
                           "pinned": pinned, "log": seen.get("log"), "report": lines,
                           "passed": not seen_out["problems"]}
    if seen_out["problems"]:
        out.update(failed=True, msg="the claim was allocated and its pod runs, but what its container sees is not "
                   "what KubeVirt's virt-launcher needs: %s" % "; ".join(seen_out["problems"]))
    return out


def run_verify(params: dict[str, Any], check_mode: bool, source: Any, get_client: "GetClient") -> dict[str, Any]:
    """The module's result; ``get_client(source)`` builds the client."""
    try:
        client = get_client(source)
    except Exception as exc:  # pylint: disable=broad-except
        return {"failed": True, "msg": client_error(exc)}
    try:
        return verify(RawApi(client.client), params, check_mode)
    except KubeRequestError as exc:
        return {"failed": True, "changed": False,
                "msg": "cannot verify claim %s/%s: %s" % (params["namespace"], params["name"], exc.message)}
