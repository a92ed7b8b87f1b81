# SPDX-License-Identifier: Apache-2.0
"""The driver's pods are found through the release's DaemonSets, whatever the chart names them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import driver_pods as dp
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import cpu_topology
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as topology_run
from ansible_collections.kubevirtci.dra_cpu.tests.unit.conftest import load_slices
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import FakeCluster

NS = "dra-driver-cpu"
DAEMONSETS = "/apis/apps/v1/namespaces/%s/daemonsets" % NS
PODS = "/api/v1/namespaces/%s/pods" % NS
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def daemonset(name, release, selector, helm=True, namespace=NS):
    meta = {"name": name, "labels": {"app.kubernetes.io/instance": release}}
    if helm:
        meta["annotations"] = {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace}
    meta["generation"] = 1
    return {"metadata": meta, "spec": {"selector": {"matchLabels": selector}},
            "status": {"observedGeneration": 1, "desiredNumberScheduled": 1, "updatedNumberScheduled": 1,
                       "numberAvailable": 1}}


def labelled_pod(name, node, labels):
    return {"metadata": {"name": name, "uid": name, "labels": labels}, "spec": {"nodeName": node},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


class SelectingCluster(FakeCluster):
    """FakeCluster that applies equality label selectors to the pod list."""

    def request(self, method, path, **params):
        response = FakeCluster.request(self, method, path, **params)
        selector = dict(params.get("query_params") or []).get("labelSelector")
        if path == PODS and selector:
            wanted = dict(part.split("=", 1) for part in selector.split(","))
            items = [p for p in self.routes[PODS]["items"]
                     if all(p["metadata"]["labels"].get(k) == v for k, v in wanted.items())]
            return FakeCluster.request(FakeCluster({PODS: {"items": items}}), method, path, **params)
        return response


def test_release_owns_by_helm_annotations_else_instance_label():
    assert dp.release_owns(daemonset("a", "r1", {}), "r1", NS)
    assert not dp.release_owns(daemonset("a", "r1", {}), "r2", NS)
    assert not dp.release_owns(daemonset("a", "r1", {}, namespace="other"), "r1", NS)
    # helm's annotation wins over a label another tool set
    other = daemonset("a", "r2", {})
    other["metadata"]["labels"]["app.kubernetes.io/instance"] = "r1"
    assert not dp.release_owns(other, "r1", NS)
    assert dp.release_owns(daemonset("a", "r1", {}, helm=False), "r1", NS)


def test_label_selector_text():
    assert dp.label_selector({"matchLabels": {"b": "2", "a": "1"}}) == "a=1,b=2"
    assert dp.label_selector({"matchExpressions": [
        {"key": "k", "operator": "In", "values": ["x", "y"]},
        {"key": "n", "operator": "NotIn", "values": ["z"]},
        {"key": "e", "operator": "Exists"},
        {"key": "d", "operator": "DoesNotExist"}]}) == "k in (x,y),n notin (z),e,!d"
    assert dp.label_selector(None) == ""


def test_selectors_follow_the_release_not_the_name_override():
    selector = {"app.kubernetes.io/name": "cpudrv", "app.kubernetes.io/instance": "dra-driver-cpu"}
    cluster = FakeCluster({DAEMONSETS: {"items": [
        daemonset("zz-other", "other", {"app": "other"}),
        daemonset("my-full-name", "dra-driver-cpu", selector)]}})
    selectors, problem = dp.resolve_pod_selectors(RawApi(cluster), NS, "dra-driver-cpu")
    assert problem is None
    assert selectors == ["app.kubernetes.io/instance=dra-driver-cpu,app.kubernetes.io/name=cpudrv"]


def test_explicit_selector_wins_and_the_default_stays():
    cluster = FakeCluster()
    assert dp.resolve_pod_selectors(RawApi(cluster), NS, "r", "x=y") == (["x=y"], None)
    assert dp.resolve_pod_selectors(RawApi(cluster), NS) == (["app.kubernetes.io/name=dra-driver-cpu"], None)
    assert cluster.paths() == []


def test_release_without_daemonset_is_named():
    cluster = FakeCluster({DAEMONSETS: {"items": [daemonset("x", "other", {"a": "b"})]}})
    selectors, problem = dp.resolve_pod_selectors(RawApi(cluster), NS, "dra-driver-cpu")
    assert selectors == []
    assert problem.startswith("helm release dra-driver-cpu has no DaemonSet in namespace dra-driver-cpu")


def test_list_driver_pods_once_each():
    cluster = SelectingCluster({PODS: {"items": [labelled_pod("p1", "node01", {"a": "1", "b": "2"}),
                                                 labelled_pod("p2", "node02", {"a": "1"})]}})
    pods = dp.list_driver_pods(RawApi(cluster), NS, ["a=1", "b=2"])
    assert [p["metadata"]["name"] for p in pods] == ["p1", "p2"]
    assert dp.describe_selectors(["a=1"]) == "selector a=1"
    assert dp.describe_selectors(["a=1", "b=2"]) == "selectors a=1; b=2"


def test_cpu_topology_finds_pods_of_a_renamed_chart():
    """nameOverride changes app.kubernetes.io/name: the old fixed selector found no pod."""
    labels = {"app.kubernetes.io/name": "cpudrv", "app.kubernetes.io/instance": "dra-driver-cpu"}
    slices = load_slices("reference_grouped_numanode.yaml")
    node = slices[0]["spec"]["nodeName"]
    cluster = SelectingCluster({
        DAEMONSETS: {"items": [daemonset("renamed", "dra-driver-cpu", labels)]},
        PODS: {"items": [labelled_pod("renamed-abc", node, labels)]},
        SLICES: {"metadata": {"resourceVersion": "100"}, "items": slices},
    })
    params = dict((k, v.get("default")) for k, v in cpu_topology.argument_spec().items())
    params.update(release_name="dra-driver-cpu")
    result, message = topology_run.run(RawApi(cluster), params, [])
    assert message is None, message
    assert result["targets"] == [node]
    params.update(release_name="")
    result, message = topology_run.run(RawApi(cluster), params, [])
    assert "no driver pod found in namespace dra-driver-cpu with selector app.kubernetes.io/name=dra-driver-cpu" \
        in message
