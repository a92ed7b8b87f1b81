# SPDX-License-Identifier: Apache-2.0
"""pinned_cpus: the CPUs a pod's containers were pinned to, as the driver logs them. Upstream behaviour
mirrored: dra-driver-cpu's NRI CreateContainer (pkg/driver/nri_hooks.go) logs, at --v=2, the message
"guaranteed CPUs found" with the keys pod (namespace/name), podUID, container, containerID and cpus
(klog text format, ctxlog.KObj(pod))."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import pinned as P
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import pinned_cpus
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import FakeCluster, Response, run_module

NS = "dra-driver-cpu"
LINE = ('I1202 22:10:00.123456       1 nri.go:160] "guaranteed CPUs found" driver="dra.cpu" opID="1a2b" '
        'pod="default/dra-cpu-verify" podUID="u-1" container="pause" containerID="c0ffee" cpus="2-5"\n')
LOG = ("I1202 22:09:59.000000       1 nri.go:150] \"no guaranteed CPUs found, using shared CPUs\" "
       "pod=\"kube-system/coredns\" container=\"coredns\" sharedCPUs=\"2-11\"\n" + LINE
       + LINE.replace('pod="default/dra-cpu-verify"', 'pod="other/dra-cpu-verify"').replace("2-5", "6-7"))


def test_parse_takes_the_pods_own_lines_only():
    assert P.parse_pinned(LOG, "default", "dra-cpu-verify") == {"pause": "2-5"}
    assert P.parse_pinned(LOG, "other", "dra-cpu-verify") == {"pause": "6-7"}
    assert P.parse_pinned(LOG, "default", "missing") == {}
    assert P.parse_pinned("", "default", "x") == {}


def test_parse_a_restarted_container_keeps_its_last_cpus():
    again = LINE.replace("2-5", "2-3,8")
    assert P.parse_pinned(LINE + again, "default", "dra-cpu-verify") == {"pause": "2-3,8"}


def cluster(log=LOG, node="node01"):
    return FakeCluster({
        "/api/v1/namespaces/default/pods/dra-cpu-verify": {"metadata": {"name": "dra-cpu-verify"},
                                                           "spec": {"nodeName": node}},
        "/apis/apps/v1/namespaces/%s/daemonsets" % NS: {"items": [{
            "metadata": {"name": "dra-driver-cpu", "labels": {"app.kubernetes.io/instance": "dra-driver-cpu"},
                         "annotations": {"meta.helm.sh/release-name": "dra-driver-cpu",
                                         "meta.helm.sh/release-namespace": NS}},
            "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "dra-driver-cpu"}}}}]},
        "/api/v1/namespaces/%s/pods" % NS: {"items": [
            {"metadata": {"name": "drv-2", "uid": "2"}, "spec": {"nodeName": "node02"}},
            {"metadata": {"name": "drv-1", "uid": "1"}, "spec": {"nodeName": "node01"}}]},
        "/api/v1/namespaces/%s/pods/drv-1/log" % NS: Response(log.encode()),
    })


def test_module_reads_the_log_of_the_driver_pod_on_the_pods_node():
    fake = cluster()
    result, failed = run_module(pinned_cpus, {"pod": "dra-cpu-verify"}, fake)
    assert failed is False, result
    assert result["node"] == "node01" and result["driver_pod"] == "drv-1"
    assert result["containers"] == {"pause": "2-5"} and result["found"] is True and result["changed"] is False
    assert ("/api/v1/namespaces/%s/pods/drv-1/log" % NS, {"tailLines": "5000"}) in [
        (p, dict((k, str(v)) for k, v in q.items())) for p, q in fake.calls]


def test_nothing_logged_is_not_an_error():
    result, failed = run_module(pinned_cpus, {"pod": "dra-cpu-verify"}, cluster(log="I1202 start\n"))
    assert failed is False and result["found"] is False and result["containers"] == {}


def test_no_driver_pod_on_the_node_fails_naming_it():
    result, failed = run_module(pinned_cpus, {"pod": "dra-cpu-verify"}, cluster(node="node09"))
    assert failed is True
    assert result["msg"] == "no driver pod of release dra-driver-cpu in namespace dra-driver-cpu runs on node node09"
