# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""One run of the verify module, shared by the module and its action plugin (k8s/runner.py).

Owns the order of the API calls; every decision is in the other files of this package (``sizing.py``,
``manifests.py``, ``readout.py``, ``node_allocatable.py``, ``report.py``, ``pinned.py``):
1. the published topology, waited for as the topology stage waits (``topology/run.py``), and the driver's
   ResourceSlices (where the allocated device is; the NUMA attribute of individual mode's escape hatch);
2. the mode: individual mode fails here unless its escape-hatch claim is asked for (KubeVirt synthesizes
   grouped claims only); the VMI and its hostCPUs; in check mode the run stops here and says what it would do;
3. test objects of an earlier run are deleted, the claim ``<vmi>-cpu`` and pod ``virt-launcher-<vmi>``
   created as virt-controller renders them; the claim's allocation and then the pod's readout (its log)
   are waited for, each up to ``timeout`` seconds; in aligned mode (``aligned_device_class``) the claim
   also asks for a device of that class, aligned by ``matchAttribute`` (``aligned.py``), refused before
   anything is created when the CPU devices cannot serve it, and its allocation proven against the
   published devices (there the run stops with ``aligned_allocation_only``);
4. the driver's pinning from its log (``pinned.py``), the judgement; on the KEP-5517 path (the driver
   publishes node-allocatable mappings) the pod's claim status, the probe pod and then its control; the report;
5. whatever happened, the pods and the claim are deleted and their deletion waited for (``finally``).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import time
from collections.abc import Callable
from urllib.parse import quote
from typing import Any, cast

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import ArgumentSpec, auth_argument_spec
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import (
    RESOURCE_SLICES_PATH,
    ClusterError,
    KubeRequestError,
    RawApi,
    driver_field_selector,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import factory
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.wait import poll_until
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as topology_run
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import aligned, manifests, readout, report, sizing
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import node_allocatable as kep5517
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.objects import Objects
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.pinned import pinned as read_pinned
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.report import VerifyResult, Vmi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import TopologyFact

# Kubernetes' own e2e busybox: k8s.io/kubernetes test/utils/image/manifest.go,
# `configs[BusyBox] = Config{list.PromoterE2eRegistry, "busybox", "1.37.0-1"}` (PromoterE2eRegistry is
# registry.k8s.io/e2e-test-images); the role's default (roles/dra_cpu/defaults/main.yml) is the same
DEFAULT_IMAGE = "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"
POLL = 2.0
DEPRECATED_METADATA_OPTION = (
    "dra_cpu_verify_allow_missing_metadata (allow_missing_metadata) is deprecated and has no effect: verify "
    "no longer requires the KEP-5304 metadata (KubeVirt's CPU path does not read it); "
    "dra_cpu_verify_require_metadata requires it")
INDIVIDUAL_MODE = (
    "the driver runs in individual mode (dra_cpu_cpu_device_mode=individual): KubeVirt's virt-controller "
    "synthesizes grouped claims only (one dra.cpu/cpu capacity request, which individual devices cannot "
    "serve), and upstream is deprecating individual mode. Install in grouped mode for CPUsWithDRA, or set "
    "dra_cpu_verify_individual_claim=true to prove a NUMA-aligned count claim (what a VMI's "
    "spec.resourceClaims escape hatch would reference)")


def argument_spec() -> ArgumentSpec:
    spec = auth_argument_spec(AUTH_ARG_SPEC)
    spec.update(
        name=dict(type="str", default="dra-cpu-verify"),
        namespace=dict(type="str", default="default"),
        driver_namespace=dict(type="str", default="dra-driver-cpu"),
        release_name=dict(type="str", default="dra-driver-cpu"),
        cpus=dict(type="int", default=0),
        vm_cores=dict(type="int", default=0),
        vm_sockets=dict(type="int", default=1),
        vm_threads=dict(type="int", default=1),
        vm_vcpus=dict(type="int", removed_in_version="2.0.0", removed_from_collection="kubevirtci.dra_cpu"),
        vm_io_threads=dict(type="int", default=0),
        vm_isolate_emulator_thread=dict(type="bool", default=False),
        vm_even_parity=dict(type="bool", default=False),
        image=dict(type="str", default=DEFAULT_IMAGE),
        tolerations=dict(type="list", elements="dict", default=[]),
        require_metadata=dict(type="bool", default=False),
        allow_missing_metadata=dict(type="bool", removed_in_version="2.0.0",
                                    removed_from_collection="kubevirtci.dra_cpu"),
        allow_missing_dra_cpuset=dict(type="bool", default=False),
        individual_claim=dict(type="bool", default=False),
        aligned_device_class=dict(type="str", default=""),
        aligned_attribute=dict(type="str", default="pcieRoot", choices=sorted(aligned.ATTRIBUTES)),
        aligned_allocation_only=dict(type="bool", default=False),
        timeout=dict(type="int", default=120),
        topology_timeout=dict(type="int", default=300),
    )
    return spec


def _topology(api: RawApi, params: dict[str, Any], clock: Callable[[], float] | None,
              sleep: Callable[[float], None] | None) -> tuple[TopologyFact, str | None]:
    """The topology stage's fact for the driver's nodes (waited for, as the role's topology stage)."""
    tparams = dict((k, v.get("default")) for k, v in topology_run.argument_spec().items())
    tparams.update(driver=manifests.DEVICE_CLASS, namespace=params["driver_namespace"],
                   release_name=params["release_name"], wait=True, timeout=params["topology_timeout"])
    result, failure = topology_run.run(api, tparams, [], clock=clock, sleep=sleep)
    facts = result.get("ansible_facts") or {}
    fact = facts.get("dra_cpu_topology") or result.get("topology")
    return cast(TopologyFact, fact or {}), failure


def _wait_for(clock: Callable[[], float], sleep: Callable[[float], None], timeout: int,
              done: Callable[[], bool]) -> bool:
    """Whether ``done()`` (its reads included) turned true within ``timeout`` seconds, asked every POLL
    seconds (k8s/wait.py)."""
    return poll_until(done, bool, timeout, POLL, clock, sleep).done


def verify(api: RawApi, params: ModuleParams, check_mode: bool, clock: Callable[[], float] | None = None,
           sleep: Callable[[float], None] | None = None) -> VerifyResult:
    """The module's result (``failed`` and ``msg`` when the claim is not proven)."""
    now, pause = clock or time.monotonic, sleep or time.sleep
    problems = sizing.check_size_params(params)
    if problems:
        return {"failed": True, "changed": False, "msg": "; ".join(problems)}
    fact, failure = _topology(api, params, clock, sleep)
    if failure:
        return {"failed": True, "changed": False, "topology": fact, "msg": failure}
    mode = fact.get("mode") or "grouped"
    vmi_name, namespace = params["name"], params["namespace"]
    vm = sizing.vmi(params, fact)
    cpus, size_line = vm["host_cpus"], sizing.sizing_line("%s/%s" % (namespace, vmi_name), vm)
    claim_only = mode != "individual" and bool(fact.get("node_allocatable_mapping"))
    claim, pod_name = manifests.claim_name(vmi_name), manifests.pod_name(vmi_name)
    result: VerifyResult = {"changed": False, "cpus": cpus, "vmi": cast(Vmi, dict(vm, name=vmi_name)), "mode": mode,
                            "claim_name": claim, "pod_name": pod_name, "claim_only": claim_only,
                            "numa_attribute": None, "sizing": size_line, "passed": False,
                            "metadata_file": manifests.metadata_path(claim),
                            "ansible_facts": {"dra_cpu_topology": fact}}
    if params.get("allow_missing_metadata") is not None:
        result["warnings"] = [DEPRECATED_METADATA_OPTION]
    if mode == "individual" and not params.get("individual_claim"):
        result.update({"failed": True, "msg": INDIVIDUAL_MODE, "report": [size_line]})
        return result
    if cpus < 1:
        result.update({"failed": True, "report": [size_line],
                       "msg": sizing.NO_CPUS % int(fact.get("max_vm_host_cpus") or 0)})
        return result
    slices = api.get_json(RESOURCE_SLICES_PATH,
                          {"fieldSelector": driver_field_selector(manifests.DEVICE_CLASS)}).get("items") or []
    numa = manifests.numa_attribute(slices) if mode == "individual" else None
    result["numa_attribute"] = numa
    refused = _aligned_refusal(api, params, slices, mode)
    if refused:
        result.update({"failed": True, "msg": refused, "report": [size_line]})
        return result
    if check_mode:
        result["report"] = [size_line, report.check_mode_line(namespace, claim, pod_name, cpus, mode, numa, claim_only)]
        if params.get("aligned_device_class"):
            result["report"].append(aligned.check_mode_line(params["aligned_device_class"], _attribute(params)))
        return result
    claim_manifest = manifests.claim_manifest(claim, namespace, cpus, mode, numa)
    if params.get("aligned_device_class"):
        claim_manifest = aligned.claim_manifest(claim_manifest, params["aligned_device_class"], _attribute(params))
    result.update({"claim_manifest": claim_manifest,
                   "pod_manifest": manifests.pod_manifest(pod_name, namespace, claim, cpus, params["image"],
                                                          params["tolerations"], claim_only)})
    objects = Objects(api, namespace, vmi_name, now, pause)
    leftovers = objects.delete(params["timeout"])
    if leftovers:
        result.update({"failed": True, "msg": "cannot remove the test objects of an earlier run: %s" % "; ".join(leftovers)})
        return result
    try:
        outcome = _prove(api, objects, params, result, slices, now, pause)
    finally:
        cleanup = objects.delete(params["timeout"])
    result.update(outcome)
    result["cleanup"] = cleanup or ["deleted"]
    if cleanup:
        result.setdefault("report", []).append("test objects not removed: %s" % "; ".join(cleanup))
        if not result.get("failed"):
            result.update({"failed": True, "msg": "the test objects were not removed: %s" % "; ".join(cleanup)})
    return result


def _attribute(params: ModuleParams) -> str:
    return aligned.attribute_name(params.get("aligned_attribute") or "") or aligned.PCIE_ROOT


def _aligned_refusal(api: RawApi, params: ModuleParams, slices: list[dict[str, Any]], mode: str) -> str | None:
    """Aligned mode: why its claim cannot be allocated, before anything is created (None: try it)."""
    device_class = params.get("aligned_device_class")
    if not device_class:
        return None
    try:
        api.get_json("/apis/resource.k8s.io/v1/deviceclasses/%s" % quote(device_class, safe=""))
    except KubeRequestError as exc:
        if not exc.not_found:
            raise
        return "there is no DeviceClass %s (dra_cpu_verify_aligned_device_class): install its driver first" % device_class
    return aligned.cpu_devices_problem(slices, _attribute(params), mode, manifests.DEVICE_CLASS, api.version())


def _aligned_proof(api: RawApi, params: ModuleParams, claim: dict[str, Any],
                   slices: list[dict[str, Any]]) -> aligned.AlignedProof:
    """The allocated aligned claim against the CPU driver's slices and those of the device's driver."""
    drivers = sorted(set(str(r.get("driver")) for r in readout.allocated_devices(claim, aligned.DEVICE_REQUEST)))
    others = [obj for driver in drivers if driver != manifests.DEVICE_CLASS for obj in api.get_json(
        RESOURCE_SLICES_PATH, {"fieldSelector": "spec.driver=%s" % driver}).get("items") or []]
    return aligned.prove(claim, slices + others, params["aligned_device_class"], _attribute(params))


def _scheduled_pod(api: RawApi, objects: Objects, params: dict[str, Any], node: str, pod: kep5517.Probe,
                   path: str, now: Callable[[], float], pause: Callable[[float], None]) -> None:
    """Creates probe or control ``pod`` bound to ``node`` and waits until the scheduler decided it."""
    api.send_json("POST", objects.pods, kep5517.probe_manifest(pod["name"], params["namespace"], node,
                                                               pod["cpu_millis"], params["image"],
                                                               params["tolerations"]))

    def decided() -> bool:
        seen = objects.get(path) or {}
        events = []
        if not (seen.get("spec") or {}).get("nodeName"):
            uid = (seen.get("metadata") or {}).get("uid")
            events = [str(e.get("message")) for e in objects.pod_events(uid, pod["name"])
                      if e.get("reason") == "FailedScheduling" and e.get("message")]
        pod["outcome"], pod["message"] = kep5517.probe_outcome(seen, events)
        return pod["outcome"] is not None

    _wait_for(now, pause, params["timeout"], decided)


def _probe(api: RawApi, objects: Objects, params: dict[str, Any], node: str, cpus: int, now: Callable[[], float],
           pause: Callable[[float], None]) -> tuple[kep5517.Probe, kep5517.Probe, list[str]]:
    """KEP-5517: a pod asking for one CPU more than the node has left beside the claim must stay
    Unschedulable for insufficient CPU; then a control pod one CPU smaller must be scheduled."""
    node_obj = api.get_json("/api/v1/nodes/%s" % quote(node, safe=""))
    pods = api.get_json("/api/v1/pods", {"fieldSelector": "spec.nodeName=%s" % node}).get("items") or []
    free = kep5517.free_millis(node_obj, pods)
    probe_millis, control_millis = kep5517.probe_sizes(free, cpus)
    probe: kep5517.Probe = {"name": objects.probe_name, "cpu_millis": probe_millis, "outcome": None, "message": None}
    control: kep5517.Probe = {"name": objects.control_name, "cpu_millis": control_millis, "outcome": None,
                              "message": None}
    if control_millis < 0:
        probe["outcome"] = control["outcome"] = "not run: node %s has %dm CPU left without the claim" % (node, free)
        return probe, control, [kep5517.too_little_left(free, node, cpus)]
    _scheduled_pod(api, objects, params, node, probe, objects.probe, now, pause)
    if control_millis == 0:
        control["outcome"] = ("not run: node %s has no CPU left beside the claim (the accounting is bounded from "
                              "below only)" % node)
    else:
        _scheduled_pod(api, objects, params, node, control, objects.control, now, pause)
    problems = [kep5517.probe_problem(probe, node, cpus), kep5517.control_problem(control, node, cpus)]
    return probe, control, [p for p in problems if p]


def _prove(api: RawApi, objects: Objects, params: dict[str, Any], result: VerifyResult,
           slices: list[dict[str, Any]], now: Callable[[], float],
           pause: Callable[[float], None]) -> VerifyResult:
    namespace, timeout, cpus, mode = params["namespace"], params["timeout"], result["cpus"], result["mode"]
    devices = manifests.newest_devices(slices)
    size_line = result["sizing"]
    api.send_json("POST", objects.claims, result["claim_manifest"])
    api.send_json("POST", objects.pods, result["pod_manifest"])
    seen: dict[str, Any] = {}

    def allocated() -> bool:
        seen["claim"] = objects.get(objects.claim) or {}
        return bool((seen["claim"].get("status") or {}).get("allocation"))

    if not _wait_for(now, pause, timeout, allocated):
        pod = objects.get(objects.pod) or {}
        return {"failed": True, "claim": seen.get("claim"), "pod": pod, "report": [size_line],
                "msg": report.not_allocated(namespace, objects.claim_name, cpus, timeout, pod)}
    proof = _aligned_proof(api, params, seen["claim"], slices) if params.get("aligned_device_class") else None
    if proof and params.get("aligned_allocation_only"):
        return _allocation_only(objects, result, seen["claim"], proof)

    def printed() -> bool:
        seen["pod"] = objects.get(objects.pod) or {}
        phase = (seen["pod"].get("status") or {}).get("phase")
        if phase in ("Failed", "Succeeded"):
            return True
        if phase != "Running":
            return False
        seen["log"] = api.pod_log(namespace, objects.pod_name, container=manifests.CONTAINER, tail_lines=10000)
        return manifests.MARK + "end" in seen["log"]

    ran = _wait_for(now, pause, timeout, printed)
    pod, claim = seen.get("pod") or {}, seen.get("claim") or {}
    if not ran or (pod.get("status") or {}).get("phase") != "Running":
        return {"failed": True, "claim": claim, "pod": pod, "report": [size_line],
                "msg": report.not_started(namespace, objects.pod_name, pod, timeout,
                                          objects.pod_events((pod.get("metadata") or {}).get("uid")))}
    try:
        pinned = read_pinned(api, {"pod": objects.pod_name, "namespace": namespace, "log_lines": 5000,
                                   "driver_namespace": params["driver_namespace"],
                                   "release_name": params["release_name"]})
    except KubeRequestError as exc:
        pinned = {"failed": True, "msg": exc.message}
    results = readout.allocated_devices(claim)
    seen_out = readout.judge(seen.get("log") or "", claim, cpus, mode,
                             (pinned.get("containers") or {}).get(manifests.CONTAINER), params,
                             result["metadata_file"], readout.placement_of(results, devices, mode))
    node = (pod.get("spec") or {}).get("nodeName")
    where = readout.locality_of(results, devices)
    out: VerifyResult = {"claim": claim, "pod": pod, "node": node, "pod_phase": (pod.get("status") or {}).get("phase"),
                         "qos_class": (pod.get("status") or {}).get("qosClass"), "readout": seen_out,
                         "pinned": pinned, "log": seen.get("log"), "locality": where}
    lines = [size_line, report.allocation_line(objects.claim_name, cpus, results, pod, mode, result["numa_attribute"])]
    lines += report.readout_lines(seen_out, result["metadata_file"], pinned, where)
    if proof:
        out["aligned"] = proof
        seen_out["problems"] += proof["problems"]
        lines.append(aligned.report_line(proof, False))
    if result["claim_only"]:
        status, status_problems = kep5517.claim_status(pod, objects.claim_name, cpus)
        probe, control, probe_problems = _probe(api, objects, params, node or "", cpus, now, pause)
        seen_out["problems"] += status_problems + probe_problems
        out["node_allocatable"] = {"claim_status": status, "probe": probe, "control": control}
        lines += report.node_allocatable_lines(status, probe, control, cpus)
    out.update({"report": lines, "passed": not seen_out["problems"]})
    if seen_out["problems"]:
        out.update({"failed": True, "msg": "the claim was allocated and its pod runs, but what its container sees is not "
                   "what KubeVirt's virt-launcher needs: %s" % "; ".join(seen_out["problems"])})
    return out


def _allocation_only(objects: Objects, result: VerifyResult, claim: dict[str, Any],
                     proof: aligned.AlignedProof) -> VerifyResult:
    """Aligned mode up to the allocation: the claim and the proof, the pod not waited for."""
    pod = objects.get(objects.pod) or {}
    lines = [result["sizing"], report.allocation_line(objects.claim_name, result["cpus"],
                                                      readout.allocated_devices(claim), pod, result["mode"], None),
             aligned.report_line(proof, True)]
    out: VerifyResult = {"claim": claim, "pod": pod, "node": (pod.get("spec") or {}).get("nodeName"),
                         "aligned": proof, "report": lines, "passed": not proof["problems"]}
    if proof["problems"]:
        out.update({"failed": True, "msg": "the aligned claim was allocated, but not aligned as asked: %s"
                    % "; ".join(proof["problems"])})
    return out


def run_verify(params: ModuleParams, check_mode: bool, source: Any,
               get_client: factory.GetClient) -> VerifyResult:
    """The module's result; ``get_client(source)`` builds the client (k8s/factory.py)."""
    try:
        return verify(factory.connect(get_client, source, params).api, params, check_mode)
    except ClusterError as exc:
        return {"failed": True, "changed": False,
                "msg": factory.failure("cannot verify VMI %s/%s's claim" % (params["namespace"], params["name"]), exc)}
