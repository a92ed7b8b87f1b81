"""A driver that cannot run ends the topology wait early, on real nodes (the reliability suite's 'driver'
cluster: real01 and real02, a real kubelet + containerd each; reliability_lib.get_cluster).

Two cases, each an install through the role with the default dra_cpu_topology_timeout (300 s):
- the driver image does not exist (a tag the cluster's registry does not have): the kubelet's pulls
  fail (ErrImagePull, ImagePullBackOff, events "Failed to pull image ...: not found"); the install fails
  within 60 s naming the node, the image and the kubelet's reason. The DaemonSet runs on real02 only
  (the chart's nodeSelector), so helm's --wait accepts it (one desired pod, maxUnavailable 1) and the
  failure is the topology wait's, as a new user on a one-node cluster sees it;
- real02's driver crash-loops (its simulated CPU hardware loses devices/system/cpu/online, which
  upstream's driver reads first, as test_reliability_faults.py does): the install fails within 60 s of
  the container's third restart, with the driver's last log lines.
docs/reliability.md states these two times (pod_diagnostics.DriverHealth: a tick every 10 s, a pull
window of 30 s or two failed pulls, 3 restarts).
"""
import os

import pytest

from reliability_lib import NEEDS_REAL_NODES, get_cluster, no_traceback
from test_reliability_faults import helm_uninstall, install, node_pods, online_file, release_history, task_seconds

pytestmark = [pytest.mark.timeout(900), NEEDS_REAL_NODES]

TASK = "Wait until every driver node has published its CPU topology"
ON_REAL02 = {"nodeSelector": {"kubernetes.io/hostname": "real02"}}


@pytest.fixture(scope="module")
def dc(cluster_factory):
    return get_cluster(cluster_factory, "driver")


def driver_image(cluster):
    """The image of the installed release's DaemonSet (installed first when it is not)."""
    from kubernetes import client
    if not release_history(cluster):
        assert install(cluster).rc == 0
    [ds] = client.AppsV1Api(cluster.api_client).list_namespaced_daemon_set("dra-driver-cpu").items
    return ds.spec.template.spec.containers[0].image


def third_restart(pod):
    """When the run of the driver container that was its third restart started (the API server's clock)."""
    [status] = pod.status.container_statuses
    assert status.restart_count == 3, "the wait should end before a fourth restart: %s" % status
    run = status.state.running or status.last_state.terminated
    return run.started_at.timestamp()


def test_an_image_that_does_not_exist_fails_within_60_s_naming_node_image_and_reason(dc):
    repository = driver_image(dc).rsplit(":", 1)[0].split("@")[0]
    missing = repository + ":v0.0.0-does-not-exist"
    helm_uninstall(dc)
    try:
        r = install(dc, dra_cpu_image=missing, dra_cpu_chart_values=ON_REAL02, dra_cpu_topology_timeout=300)
        out = r.result(TASK)
        msg = out.get("msg", "")
        assert r.rc != 0 and no_traceback(r), r.stdout[-3000:]
        assert msg.startswith("driver dra.cpu cannot run, so the wait ended before its timeout: driver pod "
                              "dra-driver-cpu-"), msg
        assert " on node real02 cannot pull its image %s: " % missing in msg, msg
        assert "ErrImagePull" in msg or "ImagePullBackOff" in msg, msg
        assert "not found" in msg, msg          # the kubelet's (containerd's) own words
        seconds, _ = task_seconds(r, TASK)
        assert seconds < 60, seconds
        assert out["wait_stats"]["elapsed"] < 60, out["wait_stats"]
        assert [p["node"] for p in out["pending_nodes"]] == ["real02"], out["pending_nodes"]
    finally:
        helm_uninstall(dc)


def test_a_crash_looping_driver_fails_within_60_s_of_its_third_restart_with_its_logs(dc):
    hidden = online_file(dc, "real02")
    os.rename(hidden, hidden + ".gone")
    try:
        r = install(dc, dra_cpu_topology_timeout=300)
        _, ended = task_seconds(r, TASK)
        out = r.result(TASK)
        msg = out.get("msg", "")
        assert r.rc != 0 and no_traceback(r), r.stdout[-3000:]
        assert "driver pod dra-driver-cpu-" in msg and " on node real02 keeps crashing: container dracpu " \
               "restarted 3 times (" in msg, msg
        assert "last log lines of dra-driver-cpu-" in msg, msg
        assert "failed to get online CPUs" in msg, msg
        assert "real01" not in msg, msg
        [pod] = [p for p in node_pods(dc, "real02") if not p.metadata.deletion_timestamp]
        assert ended - third_restart(pod) < 60, (ended, pod.status.container_statuses)
        assert out["topology"]["nodes"]["real01"]["allocatable_cpus"] == 10, out.get("topology")
    finally:
        os.rename(hidden + ".gone", hidden)
        helm_uninstall(dc)
