# SPDX-License-Identifier: Apache-2.0
"""KEP-5517's checks: the pod's nodeAllocatableResourceClaimStatuses entry (k8s.io/api v0.37.0 core/v1
NodeAllocatableResourceClaimStatus: resourceClaimName, containers, mapping [{name, quantity}]), what a node has
left when the claim is not counted (the scheduler's NodeResourcesFit rule: a pod's request is the larger of its
containers' sum and its largest init container, plus overhead; finished pods hold nothing), and the probe's
outcome from the pod's PodScheduled condition."""
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


def test_probe_outcome_and_problem():
    unschedulable = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
    assert N.probe_outcome(unschedulable) == "unschedulable"
    assert N.probe_outcome({"spec": {"nodeName": "n"}}) == "scheduled"
    error = {"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}
    assert N.probe_outcome({"status": {"conditions": [error]}}) is None
    assert N.probe_problem("unschedulable", "n", 1000, 2) is None
    assert "was scheduled beside the claim" in N.probe_problem("scheduled", "n", 1000, 2)
    assert "neither scheduled nor refused" in N.probe_problem(None, "n", 1000, 2)
