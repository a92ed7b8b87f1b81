# SPDX-License-Identifier: Apache-2.0
"""KEP-5517's checks: the pod's nodeAllocatableResourceClaimStatuses entry (k8s.io/api v0.37.0 core/v1
NodeAllocatableResourceClaimStatus: resourceClaimName, containers, mapping [{name, quantity}]), what a node has
left when the claim is not counted (the scheduler's NodeResourcesFit rule: a pod's request is the larger of its
containers' sum and its largest init container, plus overhead; finished pods hold nothing), and the probe's
and its control's sizes (one CPU more / exactly what is left beside the claim) and outcomes from the pod's
PodScheduled condition or FailedScheduling event (only the scheduler's "Insufficient cpu" is a refusal)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import node_allocatable as N


def test_claim_status_names_the_claim_container_and_cpus():
    good = [{"resourceClaimName": "vm-cpu", "containers": ["compute"], "mapping": [{"name": "cpu", "quantity": "4"}]}]
    entry, problems = N.claim_status({"status": {"nodeAllocatableResourceClaimStatuses": good}}, "vm-cpu", 4)
    assert entry == good[0] and problems == []
    # the pod's own reference name is accepted too
    by_ref = [dict(good[0], resourceClaimName="cpu-dra")]
    assert N.claim_status({"status": {"nodeAllocatableResourceClaimStatuses": by_ref}}, "vm-cpu", 4)[1] == []
    millis = [dict(good[0], mapping=[{"name": "cpu", "quantity": "4000m"}])]
    assert N.claim_status({"status": {"nodeAllocatableResourceClaimStatuses": millis}}, "vm-cpu", 4)[1] == []
    wrong = [{"resourceClaimName": "vm-cpu", "containers": ["other"], "mapping": [{"name": "cpu", "quantity": "2"}]}]
    _entry, problems = N.claim_status({"status": {"nodeAllocatableResourceClaimStatuses": wrong}}, "vm-cpu", 4)
    assert problems == ["the claim's node-allocatable status names containers ['other'], not compute",
                        "the claim's node-allocatable status maps cpu 2, the claim holds 4 CPUs"]
    entry, problems = N.claim_status({"status": {}}, "vm-cpu", 4)
    assert entry is None and "names no claim vm-cpu (it has: none)" in problems[0]


def test_free_millis_counts_every_pod_that_still_holds_cpu():
    node = {"status": {"allocatable": {"cpu": "2"}}}
    pods = [
        {"spec": {"containers": [{"resources": {"requests": {"cpu": "100m"}}}, {"resources": {}}]},
         "status": {"phase": "Running"}},
        # the init container is larger than the containers' sum; overhead adds
        {"spec": {"initContainers": [{"resources": {"requests": {"cpu": "500m"}}}],
                  "containers": [{"resources": {"requests": {"cpu": "200m"}}}], "overhead": {"cpu": "50m"}},
         "status": {"phase": "Pending"}},
        {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Succeeded"}},
    ]
    assert N.free_millis(node, pods) == 2000 - 100 - 550


def test_probe_is_bound_to_the_node_by_affinity_not_by_name():
    pod = N.probe_manifest("p", "ns", "real01", 1899, "img", [{"operator": "Exists"}])
    spec = pod["spec"]
    assert "nodeName" not in spec
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["real01"]}]}]
    assert spec["containers"][0]["resources"]["requests"]["cpu"] == "1899m"
    assert spec["tolerations"] == [{"operator": "Exists"}]


CPU = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found."
TAINT = "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."


def unschedulable(message=None):
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    if message:
        condition["message"] = message
    return {"status": {"conditions": [condition]}}


def pod(outcome, millis=1000, message=None):
    return {"name": "p", "cpu_millis": millis, "outcome": outcome, "message": message}


def test_the_probe_asks_one_cpu_more_than_is_left_beside_the_claim_the_control_exactly_that():
    assert N.probe_sizes(11899, 6) == (6899, 5899)
    assert N.probe_sizes(1900, 1) == (1900, 900)
    assert N.probe_sizes(4000, 4) == (1000, 0)


def test_probe_outcome_needs_the_schedulers_insufficient_cpu():
    assert N.probe_outcome(unschedulable(CPU)) == ("unschedulable", CPU)
    # said by the FailedScheduling event when the condition has no message
    assert N.probe_outcome(unschedulable(), ["x", CPU]) == ("unschedulable", CPU)
    # the negative control: Unschedulable for another reason is not the accounting
    assert N.probe_outcome(unschedulable(TAINT)) == ("unschedulable, not for insufficient CPU", TAINT)
    assert N.probe_outcome(unschedulable()) == ("unschedulable, not for insufficient CPU", "no message")
    assert N.probe_outcome({"spec": {"nodeName": "n"}}) == ("scheduled", None)
    error = {"type": "PodScheduled", "status": "False", "reason": "SchedulerError", "message": CPU}
    assert N.probe_outcome({"status": {"conditions": [error]}}) == (None, None)


def test_probe_problem():
    assert N.probe_problem(pod("unschedulable", message=CPU), "n", 2) is None
    assert "was scheduled beside the claim" in N.probe_problem(pod("scheduled"), "n", 2)
    other = N.probe_problem(pod("unschedulable, not for insufficient CPU", message=TAINT), "n", 2)
    assert "not for insufficient CPU (scheduler: %s)" % TAINT in other
    assert "neither scheduled nor refused" in N.probe_problem(pod(None), "n", 2)


def test_control_problem_is_the_upper_bound():
    assert N.control_problem(pod("scheduled"), "n", 2) is None
    assert N.control_problem(pod("not run: no CPU left beside the claim"), "n", 2) is None
    # the negative control: the control refused for insufficient CPU = the claim counted as more than its CPUs
    assert "counts more than the claim's CPUs" in N.control_problem(pod("unschedulable", message=CPU), "n", 2)
    assert "bounds the accounting from below only" in N.control_problem(
        pod("unschedulable, not for insufficient CPU", message=TAINT), "n", 2)
    assert "neither scheduled nor refused" in N.control_problem(pod(None), "n", 2)
