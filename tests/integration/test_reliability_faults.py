"""Faults while waiting or installing (issue 6): each case asserts the outcome, the message and the
cluster state after. Two small clusters (reliability_lib.get_cluster): 'slices' (3 simulated nodes,
no driver: the test publishes the ResourceSlices itself, in shapes a driver does not make on
demand) and 'driver' (2 real nodes, real01 and real02: a real kubelet + containerd each, the
project's driver a real kubelet plugin there, the chart installed by the role). The driver
cluster's faults are real: a driver that crashes (real02's simulated CPU hardware loses its
`online` file, upstream's first read), a node that cannot pull the driver image (`cluster.py
registry-off`), helm killed while its pods cannot start."""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from ansible_run import run_playbook
from real_nodes_lib import CRASHLOOP_STATE
from reliability_lib import (FIGURES, NEEDS_REAL_NODES, AuditLog, capture, cluster_py, delete_slices, get_cluster,
                             helm, no_traceback, pool_slices, publish, res, slice_names, topology_playbook)

pytestmark = pytest.mark.timeout(900)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(REPO, ".collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)


def injected():
    """A fault was injected (counted at once, survived or not)."""
    FIGURES["faults_injected"] += 1


def survived():
    """Called as the last statement of a fault's test: it counts only once every assert passed."""
    FIGURES["faults_survived"] += 1


def task_seconds(result, contains):
    """Wall time of a task as the controller saw it (module start, wait, diagnostics and exit)."""
    import datetime
    for play in result.data.get("plays", []):
        for task in play.get("tasks", []):
            if contains in task["task"]["name"]:
                d = task["task"]["duration"]
                start, end = (datetime.datetime.fromisoformat(d[k].replace("Z", "+00:00")) for k in ("start", "end"))
                return (end - start).total_seconds(), end.timestamp()
    raise AssertionError(f"no task named like {contains!r}")


@pytest.fixture(scope="module")
def sc(cluster_factory):
    return get_cluster(cluster_factory, "slices")


@pytest.fixture(scope="module")
def dc(cluster_factory):
    return get_cluster(cluster_factory, "driver")


def run_topology(cluster, tmp_path, **options):
    opts = {"kubeconfig": cluster.kubeconfig, "namespace": "dra-driver-cpu"}
    opts.update(options)
    started = time.monotonic()
    r = run_playbook(cluster, topology_playbook(tmp_path, **opts))
    r.wall = time.monotonic() - started
    return capture("cpu_topology " + json.dumps(options), r)


def in_background(fn, *args, **kwargs):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", fn(*args, **kwargs)), daemon=True)
    t.start()
    return t, box


def slice_watches(cluster):
    """Open WATCH requests on resourceslices (kube-apiserver's apiserver_longrunning_requests)."""
    import ssl
    import urllib.request
    ctx = ssl.create_default_context(cafile=cluster.env["CLUSTER_CA_FILE"])
    req = urllib.request.Request(cluster.env["CLUSTER_APISERVER_METRICS"],
                                 headers={"Authorization": "Bearer " + cluster.env["CLUSTER_ADMIN_TOKEN"]})
    text = urllib.request.urlopen(req, context=ctx, timeout=10).read().decode()
    n = 0
    for line in text.splitlines():
        if line.startswith("apiserver_longrunning_requests{") and 'resource="resourceslices"' in line \
                and 'verb="WATCH"' in line:
            n += int(float(line.rsplit(" ", 1)[1]))
    return n


def wait_for_watch(cluster, thread, baseline, timeout=60):
    """Block until the module's watch on resourceslices is open (one more than `baseline`, the
    scheduler's and controller manager's informers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert thread.is_alive(), "the module returned before it started watching"
        if slice_watches(cluster) > baseline:
            return
        time.sleep(0.3)
    raise AssertionError("the module never opened its watch")


def topo_result(r):
    return r.result("Wait for the topology")


# ------------------------------------------------------------------------------ waits (slices cluster)


def test_apiserver_killed_and_restarted_during_the_wait(sc, tmp_path):
    delete_slices(sc)
    publish(sc, pool_slices(sc, "node01"))
    baseline = slice_watches(sc)
    t, box = in_background(run_topology, sc, tmp_path, nodes=["node01", "node02"], timeout=150)
    wait_for_watch(sc, t, baseline)
    cluster_py(sc, "restart-apiserver", "2")            # returns once /readyz answers again
    injected()
    time.sleep(3)
    assert t.is_alive(), f"returned after the restart although node02 is missing: {box.get('r')!r}"
    publish(sc, pool_slices(sc, "node02"))
    t.join(150)
    r = box["r"]
    assert r.rc == 0, r
    assert no_traceback(r), r.stdout[-3000:]
    res_ = topo_result(r)
    nodes = res_["ansible_facts"]["dra_cpu_topology"]["nodes"]
    assert sorted(nodes) == ["node01", "node02"]
    assert all(n["allocatable_cpus"] == 10 for n in nodes.values())
    stats = res_["wait_stats"]
    assert stats["reconnects"] + stats["relists"] >= 1, stats
    assert stats["elapsed"] < 150
    survived()


def etcd_compact(cluster):
    """Compact etcd at its current revision through the v3 JSON gateway; returns the revision."""
    import urllib.request
    with open(os.path.join(cluster.state_dir, "cluster.json")) as f:
        port = json.load(f)["ports"]["etcd"]

    def post(path, body):
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        return json.loads(urllib.request.urlopen(req, timeout=10).read())
    rev = int(post("/v3/kv/range", {"key": "Lw=="})["header"]["revision"])
    post("/v3/kv/compaction", {"revision": str(rev), "physical": True})
    return rev


def test_expired_watch_410_relists_and_continues(sc):
    """module_utils level against the real API server: the watch resumes from a resourceVersion
    that etcd compacted away and the watch cache no longer holds -> 410 Gone -> re-list."""
    from kubernetes import dynamic
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import RawApi
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import RESOURCE_SLICES_PATH as SLICES_PATH
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.waiter import SliceWaiter

    delete_slices(sc)
    publish(sc, pool_slices(sc, "node01"))
    compacted = etcd_compact(sc)
    injected()

    class StaleList(RawApi):
        """The first list answers with a resourceVersion from before the compaction."""
        first = True

        def get_json(self, path, query=None, timeout=None):
            data = super().get_json(path, query, timeout)
            if path == SLICES_PATH and self.first:
                self.first = False
                data["metadata"]["resourceVersion"] = "2"
            return data

    api = StaleList(dynamic.DynamicClient(sc.api_client))
    waiter = SliceWaiter(api)
    t, box = in_background(waiter.wait, ["node01", "node02"], 60)
    time.sleep(2)
    publish(sc, pool_slices(sc, "node02"))
    t.join(60)
    out = box["r"]
    assert out["complete"], out["progress"]
    assert out["stats"]["relists"] >= 1, (out["stats"], out["last_error"], compacted)
    assert int(out["resource_version"]) > compacted
    survived()


def test_pool_with_a_missing_chunk_is_not_ready(sc, tmp_path):
    delete_slices(sc)
    publish(sc, pool_slices(sc, "node01", chunks=2)[:1])
    injected()
    r = run_topology(sc, tmp_path, nodes=["node01"], timeout=6)
    assert r.rc != 0, "reported ready with one chunk of two"
    res_ = topo_result(r)
    assert "dra_cpu_topology" not in (res_.get("ansible_facts") or {})
    assert "node01" in res_["msg"] and "timed out after 6s" in res_["msg"], res_["msg"]
    assert [p["node"] for p in res_["pending_nodes"]] == ["node01"]
    assert res_["pending_nodes"][0]["state"] == "incomplete"
    assert res_["wait_stats"]["elapsed"] < 6 + 5
    # the missing chunk arrives: ready
    assert no_traceback(r), r.stdout[-3000:]
    publish(sc, pool_slices(sc, "node01", chunks=2)[1:])
    r = run_topology(sc, tmp_path, nodes=["node01"], timeout=20)
    assert r.rc == 0, r
    survived()


def test_generation_bump_mid_wait_waits_for_the_new_generation(sc, tmp_path):
    delete_slices(sc)
    publish(sc, pool_slices(sc, "node01", generation=1))
    baseline = slice_watches(sc)
    t, box = in_background(run_topology, sc, tmp_path, nodes=["node01", "node02"], timeout=60)
    wait_for_watch(sc, t, baseline)
    gen2 = pool_slices(sc, "node01", generation=2, reserved=(0, 1, 6))
    publish(sc, gen2[:1] + pool_slices(sc, "node02"))        # node02 complete, node01 gen 2 half done
    injected()
    time.sleep(4)
    assert t.is_alive(), f"ready while node01's generation 2 is incomplete: {box.get('r')!r}"
    publish(sc, gen2[1:])
    t.join(60)
    r = box["r"]
    assert r.rc == 0, r
    node01 = topo_result(r)["ansible_facts"]["dra_cpu_topology"]["nodes"]["node01"]
    assert node01["pool_generation"] == 2
    assert node01["allocatable_cpus"] == 9          # generation 2 reserves CPU 6 too
    survived()


def test_node_deleted_during_the_wait_is_dropped(sc, tmp_path):
    """node03 runs no driver (no slices) and node02 has half a pool; both Nodes are deleted during
    the wait (the garbage collector then deletes node02's slice): both are dropped and the wait
    ends within 20 s of the deletion (the module re-checks the pending nodes every 15 s), far
    before its 90 s timeout. Runs last on this cluster (it deletes Nodes)."""
    delete_slices(sc)
    publish(sc, pool_slices(sc, "node01"))
    publish(sc, pool_slices(sc, "node02", chunks=2)[:1])
    baseline = slice_watches(sc)
    t, box = in_background(run_topology, sc, tmp_path, nodes=["node01", "node02", "node03"], timeout=90)
    wait_for_watch(sc, t, baseline)
    nodes = res(sc, "v1", "Node")
    deleted_at = time.time()
    nodes.delete(name="node02")
    nodes.delete(name="node03")
    injected()
    t.join(90)
    r = box["r"]
    assert r.rc == 0, r
    out = topo_result(r)
    assert out["dropped_nodes"] == ["node02", "node03"]
    assert out["targets"] == ["node01"]
    assert sorted(out["ansible_facts"]["dra_cpu_topology"]["nodes"]) == ["node01"]
    _, task_end = task_seconds(r, "Wait for the topology")
    took = task_end - deleted_at
    assert took < 20, f"the task ended {took:.1f}s after the deletion (node check every 15 s, timeout 90 s)"
    survived()


# ------------------------------------------------------------------------------ driver cluster

def install(cluster, **extra):
    vars_ = {"dra_cpu_topology_timeout": 60, "dra_cpu_helm_timeout": "90s"}
    vars_.update(extra)
    return capture("install " + json.dumps(extra), run_playbook(cluster, "install", vars_))


def helm_uninstall(cluster):
    """Remove the release directly (cheaper than the role; the role's uninstall has its own tests)."""
    if release_history(cluster):
        helm(cluster, "uninstall", "dra-driver-cpu", "-n", "dra-driver-cpu", "--wait", "--timeout", "60s")


def release_history(cluster, name="dra-driver-cpu", ns="dra-driver-cpu"):
    r = helm(cluster, "history", name, "-n", ns, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else []


def node_pods(cluster, node):
    from kubernetes import client
    return client.CoreV1Api(cluster.api_client).list_namespaced_pod(
        "dra-driver-cpu", field_selector=f"spec.nodeName={node}").items


def delete_node_pods(cluster, node):
    from kubernetes import client
    for pod in node_pods(cluster, node):
        client.CoreV1Api(cluster.api_client).delete_namespaced_pod(pod.metadata.name, "dra-driver-cpu",
                                                                   grace_period_seconds=0)


def until(what, fn, timeout, interval=1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def online_file(cluster, node):
    """The `online` file of the node's simulated CPU hardware (tests/cluster/cluster_node_hw.py lays
    it out under the kubelet plugins dir; the driver reads it as $HOST_ROOT/sys/devices/system/cpu/online)."""
    return os.path.join(cluster.state_dir, "real-nodes", node, "mnt/var/lib/kubelet/plugins/dracpu-host/sys",
                        "devices/system/cpu/online")


def healthz_refused(cluster, node):
    """True when nothing listens on the node's healthz port (the chart's 8080): no driver of another
    node answers that node's readiness probe (the nodes share a network namespace: driver bind.go)."""
    import socket
    from kubernetes import client
    [ip] = [a.address for a in client.CoreV1Api(cluster.api_client).read_node(node).status.addresses
            if a.type == "InternalIP"]
    try:
        socket.create_connection((ip, 8080), timeout=3).close()
        return False
    except ConnectionRefusedError:
        return True


@NEEDS_REAL_NODES
def test_driver_crashloop_on_one_node_fails_in_time_naming_node_reason_and_logs(dc):
    """real02's CPU hardware loses devices/system/cpu/online: upstream's driver reads it first
    (pkg/driver/driver.go New: cpuinfo.OnlineCPUs) and exits 1 ("driver failed to initialize: failed
    to get online CPUs"), so its pod really crash-loops (the kubelet's back-off); helm's --wait
    accepts the DaemonSet (maxUnavailable 1, real01's pod Ready)."""
    hidden = online_file(dc, "real02")
    os.rename(hidden, hidden + ".gone")
    injected()
    try:
        r = install(dc, dra_cpu_topology_timeout=20)
        out = r.result("Wait until every driver node has published its CPU topology")
        msg = out.get("msg", "")
        elapsed = out.get("wait_stats", {}).get("elapsed", 999)
        assert r.rc != 0, r
        assert no_traceback(r), r.stdout[-3000:]
        assert "timed out after 20s" in msg and "- real02: no ResourceSlice published; pod dra-driver-cpu-" in msg, msg
        assert CRASHLOOP_STATE.search(msg), msg
        assert "last log lines of dra-driver-cpu-" in msg, msg
        assert '"failed to run" err="driver failed to initialize: failed to get online CPUs: open ' \
               'devices/system/cpu/online: no such file or directory"' in msg, msg
        assert "real01:" not in msg
        assert 20 <= elapsed < 25, elapsed          # the wait ends at its timeout, not before
        # the whole task (module start, the wait, the pod diagnostics and logs, exit) within timeout + 10 s
        # (25.1 s measured for the 20 s timeout at load 15 on 2 cores)
        task, _ = task_seconds(r, "Wait until every driver node has published its CPU topology")
        assert task < 20 + 10, task
        assert [p["node"] for p in out["pending_nodes"]] == ["real02"]
        assert out["pending_nodes"][0]["logs"], out["pending_nodes"][0]
        # the healthy node's facts are in the result
        assert out["topology"]["nodes"]["real01"]["allocatable_cpus"] == 10, out.get("topology")
        # real02's readiness probe finds no driver: real01's driver listens on real01's address only
        assert healthz_refused(dc, "real02")
        survived()
    finally:
        os.rename(hidden + ".gone", hidden)


@NEEDS_REAL_NODES
def test_driver_never_starting_on_one_node_names_the_pending_pod(dc, tmp_path):
    """After the crash-loop case the release is installed. real02 is cut off from the registry
    (`cluster.py registry-off`: its mirror at a closed port, the driver image out of its store) and
    its driver pod replaced: the new one cannot pull its image (ErrImagePull, ImagePullBackOff) and
    stays Pending. The kubelet removes real02's slices once the old driver is unregistered (30 s)."""
    if not release_history(dc):
        assert install(dc).rc == 0
    cluster_py(dc, "registry-off", "real02")
    injected()
    try:
        delete_node_pods(dc, "real02")
        until("real02's slices gone", lambda: not [s for s in slice_names(dc, "dra.cpu") if "real02" in s], 45)
        until("real02's new driver pod failing to pull", lambda: [
            p for p in node_pods(dc, "real02") if p.status.container_statuses and p.status.container_statuses[0].state.waiting
            and p.status.container_statuses[0].state.waiting.reason in ("ErrImagePull", "ImagePullBackOff")], 30)
        r = run_topology(dc, tmp_path, timeout=8)
        out = topo_result(r)
        assert r.rc != 0
        assert no_traceback(r), r.stdout[-3000:]
        assert "real02: no ResourceSlice published" in out["msg"], out["msg"]
        assert "Pending" in out["msg"] and re.search("ErrImagePull|ImagePullBackOff", out["msg"]), out["msg"]
        assert out["topology"]["nodes"]["real01"]["allocatable_cpus"] == 10
        assert out["wait_stats"]["elapsed"] <= 8 + 5
        survived()
    finally:
        cluster_py(dc, "registry-on", "real02")
    helm_uninstall(dc)


def kill_helm_midway(cluster, *args, status):
    """Run helm with --wait while no driver pod can start (both nodes cut off from the registry),
    SIGKILL it once the release secret says `status`: the release is left stuck like after an
    interrupted CI job."""
    from kubernetes import client
    core = client.CoreV1Api(cluster.api_client)
    for n in ("real01", "real02"):
        cluster_py(cluster, "registry-off", n)
    env = cluster.run_env(HELM_CONFIG_HOME=os.path.join(cluster.state_dir, "helm", "config"),
                          HELM_CACHE_HOME=os.path.join(cluster.state_dir, "helm", "cache"))
    proc = subprocess.Popen([cluster.env["CLUSTER_HELM_BINARY"], "--kubeconfig", cluster.kubeconfig, *args,
                             "--wait", "--timeout", "5m", "--plain-http"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            secrets = core.list_namespaced_secret("dra-driver-cpu", label_selector="owner=helm").items \
                if any(ns.metadata.name == "dra-driver-cpu" for ns in core.list_namespace().items) else []
            if any(s.metadata.labels.get("status") == status for s in secrets):
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"helm never reached {status}")
        time.sleep(1)
        assert proc.poll() is None, proc.communicate()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for n in ("real01", "real02"):
            cluster_py(cluster, "registry-on", n)
    hist = release_history(cluster)
    assert hist and hist[-1]["status"] == status, hist


@NEEDS_REAL_NODES
def test_pending_install_is_reported_then_recovered(dc):
    chart = dc.chart
    kill_helm_midway(dc, "install", "dra-driver-cpu", chart, "--version", "0.3.0", "-n", "dra-driver-cpu",
                     "--create-namespace", status="pending-install")
    injected()
    r = install(dc)
    msg = " ".join(r.failure_messages())
    assert r.rc != 0
    assert "stuck in 'pending-install'" in msg, msg
    assert "helm uninstall dra-driver-cpu -n dra-driver-cpu" in msg and "dra_cpu_helm_recover=true" in msg, msg
    assert release_history(dc)[-1]["status"] == "pending-install"     # untouched
    r = install(dc, dra_cpu_helm_recover=True)
    assert r.rc == 0, r
    hist = release_history(dc)
    assert hist[-1]["status"] == "deployed", hist
    assert r.fact("dra_cpu_topology")["nodes"]["real01"]["allocatable_cpus"] == 10
    survived()


@NEEDS_REAL_NODES
def test_pending_upgrade_is_reported_then_rolled_back_and_upgraded(dc):
    if not release_history(dc):
        assert install(dc).rc == 0
    before = release_history(dc)
    assert before and before[-1]["status"] == "deployed"
    kill_helm_midway(dc, "upgrade", "dra-driver-cpu", dc.chart, "--version", "0.3.0", "-n", "dra-driver-cpu",
                     "--reuse-values", "--set", "podAnnotations.interrupted=yes", status="pending-upgrade")
    injected()
    r = install(dc)
    msg = " ".join(r.failure_messages())
    assert r.rc != 0
    assert "stuck in 'pending-upgrade'" in msg and "helm rollback dra-driver-cpu -n dra-driver-cpu --wait" in msg, msg
    r = install(dc, dra_cpu_helm_recover=True)
    assert r.rc == 0, r
    hist = release_history(dc)
    assert hist[-1]["status"] == "deployed", hist
    # helm's rollback leaves the interrupted revision's record as it was; nothing after the
    # deployed one is pending, so helm accepts the next operation (the role's upgrade ran)
    last = max(h["revision"] for h in hist if h["status"] == "deployed")
    assert not [h for h in hist if h["revision"] > last], hist
    assert [h["revision"] for h in hist] == sorted(h["revision"] for h in hist)
    assert helm(dc, "upgrade", "dra-driver-cpu", dc.chart, "--version", "0.3.0", "-n", "dra-driver-cpu",
                "--reuse-values", "--plain-http", "--wait", "--timeout", "60s").returncode == 0
    survived()


@NEEDS_REAL_NODES
def test_two_installs_at_the_same_time_end_consistent(dc):
    helm_uninstall(dc)
    audit = AuditLog(dc).mark()
    a, box_a = in_background(install, dc)
    b, box_b = in_background(install, dc)
    injected()
    a.join(600)
    b.join(600)
    ra, rb = box_a["r"], box_b["r"]
    hist = release_history(dc)
    releases = json.loads(helm(dc, "list", "-A", "-a", "-o", "json").stdout)
    consistent = (len(releases) == 1 and hist[-1]["status"] == "deployed"
                  and not [h for h in hist if h["status"].startswith("pending") or h["status"] == "failed"])
    failed = [r for r in (ra, rb) if r.rc != 0]
    clear = all(("another operation" in " ".join(r.failure_messages())
                 or "cannot re-use a name" in " ".join(r.failure_messages())
                 # helm's own answer when the other run created the release first
                 or "release: already exists" in " ".join(r.failure_messages())
                 or "stuck in" in " ".join(r.failure_messages())) for r in failed)
    assert len(failed) <= 1, (ra, rb)
    assert clear, [r.failure_messages() for r in failed]
    assert consistent, (releases, hist)
    assert audit.writes(), "no writes recorded"
    survived()
