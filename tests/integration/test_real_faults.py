"""Faults made real on a real node (issue 17 item 6): CLUSTER_REAL_NODES=1 next to one simulated node.

real01 is a real kubelet + containerd running the project's driver image (tests/cluster/driver, a
real kubelet plugin on k8s.io/dynamic-resource-allocation); node01 is simulated: the healthy node
the role must not name while the faults hit real01. Its pool comes from the same Go driver
(`dracpu publish`), so a bad config (one ConfigMap for every node) would crash its driver too, as
it would a second real node's: the bad-config case runs the DaemonSet on real01 only. The reliability suite's 'driver' cluster
has a per-node crash on two real nodes (test_reliability_faults.py). Each case injects
the fault on real01, asserts what the kubelet, the control plane and the role really do, and keeps
the assert at the role's own wording (docs/troubleshooting.md; pod_diagnostics.timeout_message,
preflight/nodes.py, module_utils/verify/). Upstream behaviour relied on is named per test.

The chart is installed with the tolerations {key: dra-cpu.kubevirtci.io/real-node, operator:
Exists} (the real node's NoExecute taint) plus the chart's default {operator: Exists, effect:
NoSchedule}, so the DaemonSet runs on real01 too. Not `[{operator: Exists}]`: that tolerates every
taint, and the "driver gone" case needs a NoExecute taint the driver does not tolerate (a
nodeSelector change through the role would also restart node01's pod and take a helm upgrade, most
of the kubelet's 30 s before it removes the gone driver's slices).

The cases run in file order on one cluster: a bad config, a deleted pod, a driver gone, a kubelet
stopped (last: it leaves the node's conditions freshly changed). About 4 minutes.
Runs last, after the real-node binaries are built (`tests/cluster/build.sh real-node`; late_builds.py).
"""
import os
import time

import pytest

from ansible_run import run_playbook
from real_nodes_lib import (CRASHLOOP_STATE, DRIVER_NS as NS, NODE, TAINT_KEY, apis, driver_pods, is_ready,
                            node_taints, only_real_node_schedulable as taint_simulated, ready_driver_pod, real_slices,
                            set_taints, skip_marks, wait)

pytestmark = skip_marks() + [
    pytest.mark.timeout(900),
]

TOLERATIONS = [{"key": TAINT_KEY, "operator": "Exists"}, {"operator": "Exists", "effect": "NoSchedule"}]
GOOD = {"dra_cpu_chart_values": {"tolerations": TOLERATIONS}, "dra_cpu_topology_timeout": 60}
GONE_TAINT = {"key": "dra-cpu.kubevirtci.io/driver-off", "value": "true", "effect": "NoExecute"}
# the cluster's good install: set by the first good install of the module (the recovery in the
# bad-config case, or the `installed` fixture when that case did not get so far)
STATE = {}


@pytest.fixture(scope="module")
def rc(cluster_factory):
    # real01 beside a simulated node01 (not the default: one real node alone): node01 is the healthy
    # node the faults on real01 are compared with (the DaemonSet stays available through it)
    c = cluster_factory("real-faults", CLUSTER_NODES=1, CLUSTER_REAL_NODES=1, CLUSTER_SLICE_DELETE_DELAY=3)
    yield c
    # down at the module's end, not the session's: its kubelet, containerd and pods leave the
    # machine's 2 CPUs to the modules after it
    c.down()


def install_good(c):
    r = run_playbook(c, "install", extra_vars=GOOD)
    assert r.rc == 0, r
    STATE["topology"] = r.fact("dra_cpu_topology")
    return r


@pytest.fixture
def installed(rc):
    if "topology" not in STATE:
        install_good(rc)
    wait("the driver pod Ready on the real node", lambda: ready_driver_pod(rc), timeout=90)
    wait("real01's slices published", lambda: real_slices(rc), timeout=60)
    return STATE["topology"]


def kubelet_log(c):
    return os.path.join(c.state_dir, "logs", f"real-{NODE}-kubelet.log")


def test_a_driver_that_refuses_its_config_crash_loops_and_the_role_names_node_crash_and_log(rc):
    """Upstream main's driver reads `sysfsOverlay` (driverConfig, the ConfigMap's config.yaml) at
    start and exits 1 when the file cannot be read ("failed to run" err="read sysfs overlay: ...").

    What the role validates itself is refused before anything is written (a bad
    dra_cpu_reserved_cpus: `validate`, no release). A path inside the driver's container is
    something only the driver can check: the role and the chart's schema (a string) let it through,
    so it reaches the driver. The bad install runs the DaemonSet on real01 only (the chart's
    nodeSelector): the simulated node01 runs the same Go driver (`dracpu publish`), which would
    refuse the same file there too. Then, really: the pod on real01 crash-loops with real restarts
    (the kubelet's back-off), helm's --wait accepts the DaemonSet (maxUnavailable 1), and the
    role's topology wait fails at its timeout naming real01, the CrashLoopBackOff, the last exit
    and the driver's log line (the kubelet serves the last terminated container's log while the
    next one waits), and not node01. A corrected config (on every node again) recovers: the
    chart's checksum/config annotation rolls the pod.
    """
    r = run_playbook(rc, "install", extra_vars=dict(GOOD, dra_cpu_reserved_cpus="0-x"))
    assert r.rc != 0, r
    msg = " ".join(r.failure_messages())
    assert "dra_cpu_reserved_cpus" in msg and "is not a valid cpuset" in msg, msg
    core, _ = apis(rc)
    assert not [n for n in core.list_namespace().items if n.metadata.name == NS], "validation wrote to the cluster"

    overlay = "/etc/dracpu/missing-overlay.yaml"
    bad = {"dra_cpu_chart_values": {"tolerations": TOLERATIONS, "driverConfig": {"sysfsOverlay": overlay},
                                    "nodeSelector": {"kubernetes.io/hostname": NODE}},
           "dra_cpu_topology_timeout": 20}
    r = run_playbook(rc, "install", extra_vars=bad)
    assert r.rc != 0, r
    out = r.result("Wait until every driver node has published its CPU topology")
    msg = out.get("msg", "")
    assert "timed out after 20s waiting for the ResourceSlices of driver dra.cpu on 1 node(s):" in msg, msg
    assert f"- {NODE}: no ResourceSlice published; pod dra-driver-cpu-" in msg, msg
    assert CRASHLOOP_STATE.search(msg), msg
    assert "last log lines of dra-driver-cpu-" in msg, msg
    assert f'"failed to run" err="read sysfs overlay: open {overlay}: no such file or directory"' in msg, msg
    assert "node01:" not in msg, msg
    assert [p["node"] for p in out["pending_nodes"]] == [NODE]
    assert "node01" not in out["topology"]["nodes"]      # no driver pod there (nodeSelector)

    # the real pod: restarted by the kubelet, exit 1, CrashLoopBackOff
    def crash_looping():
        pods = driver_pods(rc)
        s = pods[0].status.container_statuses[0] if pods and pods[0].status.container_statuses else None
        return s if s and s.restart_count >= 1 and s.state.waiting \
            and s.state.waiting.reason == "CrashLoopBackOff" else None
    s = wait("the real driver pod in CrashLoopBackOff", crash_looping, timeout=30)
    assert s.last_state.terminated.exit_code == 1, s
    pod = driver_pods(rc)[0]
    events = core.list_namespaced_event(NS, field_selector=f"involvedObject.name={pod.metadata.name}").items
    assert any(e.reason == "BackOff" and "Back-off restarting failed container dracpu" in e.message
               for e in events), [(e.reason, e.message) for e in events]
    assert not real_slices(rc)

    r = install_good(rc)
    assert [n for n in r.changed_tasks()
            if n.startswith("kubevirtci.dra_cpu.dra_cpu : Install or upgrade release dra-driver-cpu on ")], r
    assert STATE["topology"]["nodes"][NODE]["cells"] == {"0": 4, "1": 6}
    pod = wait("the new driver pod Ready", lambda: ready_driver_pod(rc), timeout=60)
    assert pod.status.container_statuses[0].restart_count == 0


def test_a_deleted_driver_pod_comes_back_and_its_slices_stay(rc, installed):
    """The DaemonSet controller recreates the pod; the kubelet unregisters the plugin when the old
    driver's socket goes and registers the new one (its plugin watcher); it deletes an unregistered
    driver's slices only 30 s later, and a driver that registers again within that time cancels it.
    The new driver's ResourceSlice controller (k8s.io/dynamic-resource-allocation) finds its pool
    as published and changes nothing: the same slice object (uid, resourceVersion), generation 1.
    A re-run of install is changed=0 and reports the same topology for real01."""
    core, _ = apis(rc)
    [before] = real_slices(rc)
    old = ready_driver_pod(rc)
    log_offset = os.path.getsize(kubelet_log(rc))
    deleted = time.monotonic()
    core.delete_namespaced_pod(old.metadata.name, NS)
    new = wait("a new driver pod Ready on the real node", lambda: (
        lambda p: p if p and p.metadata.name != old.metadata.name else None)(ready_driver_pod(rc)), timeout=60)
    assert new.status.container_statuses[0].restart_count == 0

    r = run_playbook(rc, "install", extra_vars=GOOD)
    assert r.rc == 0, r
    assert r.changed == 0, r.changed_tasks()
    assert r.fact("dra_cpu_topology")["nodes"][NODE] == STATE["topology"]["nodes"][NODE]

    # past the kubelet's 30 s wipe delay: the slice was never deleted nor rewritten
    time.sleep(max(0.0, 33 - (time.monotonic() - deleted)))
    [after] = real_slices(rc)
    assert (after["metadata"]["uid"], after["metadata"]["resourceVersion"]) == \
        (before["metadata"]["uid"], before["metadata"]["resourceVersion"]), (before["metadata"], after["metadata"])
    assert after["spec"]["pool"] == {"name": NODE, "generation": 1, "resourceSliceCount": 1}
    with open(kubelet_log(rc), errors="replace") as f:
        f.seek(log_offset)
        text = f.read()
    unreg = text.find('"OperationExecutor.UnregisterPlugin started"')
    assert unreg >= 0 and text.find('"OperationExecutor.RegisterPlugin started"', unreg) > unreg, text[-3000:]


@pytest.fixture
def only_real_node_schedulable(rc):
    """node01 (simulated) tainted NoSchedule for one test: the verify pod can only go to real01."""
    with taint_simulated(rc):
        yield


def test_a_claim_on_a_node_whose_driver_is_gone_fails_verify_with_the_pod_events(rc, installed,
                                                                                  only_real_node_schedulable):
    """The driver is evicted from real01 by a NoExecute taint it does not tolerate (the DaemonSet
    does not bring it back). The kubelet unregisters the plugin at once but deletes its
    ResourceSlices only 30 s later (measured 30.0 s here), so the scheduler still allocates a claim
    from them: verify's pod is bound to real01 and the kubelet cannot prepare the claim ("DRA driver
    dra.cpu is not registered", FailedPrepareDynamicResources). verify fails with the role's
    message naming the node, the container state and that event. Then the slices go (the kubelet)
    and the driver comes back when the taint is removed."""
    core, _ = apis(rc)
    assert real_slices(rc)
    taints = node_taints(rc, NODE)
    tainted = time.monotonic()
    set_taints(rc, NODE, taints + [GONE_TAINT])
    try:
        wait("the driver pod gone from the real node", lambda: not driver_pods(rc), timeout=30)
        r = run_playbook(rc, "verify", extra_vars={
            "dra_cpu_verify_timeout": 20,
            "dra_cpu_verify_tolerations": [{"key": TAINT_KEY, "operator": "Exists"},
                                           {"key": GONE_TAINT["key"], "operator": "Exists"}]})
        assert r.rc != 0, r
        msg = " ".join(r.failure_messages())
        assert "was not allocated" not in msg, \
            f"the claim came after the kubelet removed the slices ({time.monotonic() - tainted:.0f}s after " \
            f"the taint): {msg}"
        assert f"the claim was allocated, but pod default/virt-launcher-dra-cpu-verify on node {NODE} is Pending after 20s, " \
               "not Running" in msg, msg
        assert "Container: ContainerCreating." in msg, msg
        assert "Failed to prepare dynamic resources: prepare dynamic resources: DRA driver dra.cpu is not registered" \
            in msg, msg
        wait("the kubelet deleting the gone driver's slices", lambda: not real_slices(rc),
             timeout=max(1.0, 45 - (time.monotonic() - tainted)))
        assert not core.list_namespaced_pod("default", field_selector="metadata.name=virt-launcher-dra-cpu-verify").items
    finally:
        set_taints(rc, NODE, taints)
    wait("the driver back on the real node", lambda: ready_driver_pod(rc), timeout=60)
    wait("real01's slices published again", lambda: real_slices(rc), timeout=30)


def test_a_stopped_kubelet_makes_the_node_not_ready_and_the_role_still_reports_it(rc, installed):
    """`cluster.py stop-kubelet real01` freezes the kubelet (SIGSTOP; containerd, the driver and its
    pods keep running). The node lifecycle controller marks the node Ready=Unknown
    (NodeStatusUnknown) after kube-controller-manager's --node-monitor-grace-period (the default;
    measured ~44 s here); then, in separate writes moments later, it taints the node
    node.kubernetes.io/unreachable and marks its pods not Ready; the DaemonSet's own unreachable
    toleration keeps the driver pod.
    Nobody deletes the node's ResourceSlices (the kubelet that would is the one stopped; the Node's
    garbage collection only when the Node is deleted).

    What the role does on a re-run: preflight's one finding is the node_ready WARNING naming the
    node, its Ready condition (Unknown: NodeStatusUnknown, "Kubelet stopped posting node status.")
    and the fix; it does not ask the node's /configz (through the API server's node proxy it would
    be an HTTP 503 after the proxy's wait: the frozen kubelet never finishes the TLS handshake). helm
    sees nothing to change, and the topology step reports real01 from its stale, complete pool:
    changed=0, rc 0, real01 with its 10 CPUs, marked not Ready and counted in no figure (the largest
    VM, the largest and smallest cells, the total come from the Ready nodes). The kubelet resumes (SIGCONT) and the node is Ready
    again within seconds."""
    core, _ = apis(rc)
    rc.cluster_py("stop-kubelet", NODE)
    stopped = time.monotonic()
    try:
        node = wait("the node not Ready", lambda: (lambda n: None if is_ready(n) else n)(core.read_node(NODE)),
                    timeout=75, interval=1)
        took = time.monotonic() - stopped
        [cond] = [x for x in node.status.conditions if x.type == "Ready"]
        assert (cond.status, cond.reason) == ("Unknown", "NodeStatusUnknown"), cond
        assert took > 20, f"NotReady after {took:.0f}s, before any grace period"
        # the taint is a separate write of the node lifecycle controller, after the condition: its
        # tainting passes run from a queue (doNoScheduleTaintingPass on the Node's update,
        # doNoExecuteTaintingPass every 100 ms), so it can lag the Ready=Unknown status by a moment
        wait("the node tainted node.kubernetes.io/unreachable", lambda: "node.kubernetes.io/unreachable" in
             [t.key for t in core.read_node(NODE).spec.taints or []], timeout=15, interval=0.5)
        wait("the driver pod marked not Ready", lambda: driver_pods(rc) and not is_ready(driver_pods(rc)[0]),
             timeout=15)

        r = run_playbook(rc, "install", extra_vars=dict(GOOD, dra_cpu_topology_timeout=30))
        assert r.rc == 0, r
        assert r.changed == 0, r.changed_tasks()
        preflight = r.result("Check the cluster's prerequisites")
        report = " ".join(preflight["report"])
        assert "Preflight: 0 error(s), 1 warning(s)" in report, report
        # the run's short report has the warning too (preflight's summary)
        assert any(line.startswith(f"[WARNING] node_ready on {NODE}: ") for line in preflight["summary"]), \
            preflight["summary"]
        assert "(0 errors, 1 warnings)" in " ".join(r.result("Report")["msg"]), r.result("Report")["msg"]
        assert f"[WARNING] node_ready on {NODE}: node {NODE} is not Ready (Ready=Unknown: NodeStatusUnknown, " \
               "Kubelet stopped posting node status.) since " in report, report
        assert "the driver cannot start or publish there and no pod with a claim can start there" in report, report
        assert f"kubectl delete node {NODE}" in report, report
        # its /configz is not asked (the node proxy would answer 503 after its wait)
        assert "cpu_manager_policy" not in " ".join(line for line in preflight["report"] if NODE in line), report
        # its stale pool stays in the fact and the table, marked, and counts in no figure: the
        # scheduler places no new pod on a node tainted node.kubernetes.io/unreachable (NoSchedule)
        topo = r.fact("dra_cpu_topology")
        assert topo["nodes"][NODE] == dict(STATE["topology"]["nodes"][NODE], ready=False), topo
        assert topo["not_ready_nodes"] == [NODE], topo
        others = [n for n in topo["nodes"] if n != NODE]
        assert topo["total_allocatable_cpus"] == sum(topo["nodes"][n]["allocatable_cpus"] for n in others), topo
        assert topo["largest_cell"]["node"] != NODE and topo["smallest_cell"]["node"] != NODE, topo
        totals = [line for line in r.result("Report")["msg"] if line.startswith(NODE) and " total " in line]
        assert len(totals) == 1 and totals[0].endswith(" (node not Ready: counted in no figure below)"), totals
        assert real_slices(rc)
    finally:
        rc.cluster_py("start-kubelet", NODE)
    wait("the node Ready again", lambda: is_ready(core.read_node(NODE)), timeout=60, interval=1)
    wait("the unreachable taint removed", lambda: "node.kubernetes.io/unreachable" not in
         [t.key for t in core.read_node(NODE).spec.taints or []], timeout=30, interval=1)
