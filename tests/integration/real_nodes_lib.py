"""What the real-node test modules share: the binaries they need, the node, its taint, and small reads.

test_real_node.py, test_real_driver.py and test_real_faults.py each bring up a cluster with one real
node (CLUSTER_REAL_NODES=1: a real kubelet + containerd, tests/cluster/cluster_real_node.py) named
NODE, tainted TAINT_KEY:NoExecute so only pods that ask for it run there. `skip_marks()` runs a
module last, after the real-node binaries are built (late_builds.py), and skips it, saying why, only
when the run is not root; `wait` polls; the rest read the driver's
ResourceSlices, pods and the nodes' taints from the real API.

The claim-pod round trip (`node_dir`, `start_claim_pod`, `assert_pinned_through_nri`,
`remove_claim_pod`, and the cpuset and environment reads under them) serves test_real_driver.py
(containerd) and test_real_crio.py (CRI-O), which each add what their runtime shows.
"""
import glob
import json
import os
import re
import time
from contextlib import contextmanager

import pytest

NODE = "real01"
TAINT_KEY = "dra-cpu.kubevirtci.io/real-node"
DRIVER_NS = "dra-driver-cpu"
# how the role names a crash-looping driver container: it waits in CrashLoopBackOff between its
# millisecond-long runs, and the pod read can also catch it terminated or in one of those runs
# ("running, 3 restarts": a new machine at load 16)
CRASHLOOP_STATE = re.compile(r"container dracpu (waiting CrashLoopBackOff|terminated Error|running), \d+ restarts, "
                             r"last Error \(exit 1\)")


def skip_marks():
    """The marks every real-node module carries: run last, after the real-node build; skipped, saying
    why, when not root."""
    return [
        pytest.mark.late_build("real-node"),
        pytest.mark.skipif(os.geteuid() != 0, reason="real nodes need root (mount/UTS namespaces, cgroups)"),
    ]


def wait(what, fn, timeout=120, interval=0.5):
    """fn()'s first truthy value within timeout seconds, else an AssertionError naming what and the last value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def apis(c):
    from kubernetes import client
    return client.CoreV1Api(c.api_client), client.CustomObjectsApi(c.api_client)


def real_slices(c):
    """The dra.cpu ResourceSlices of the real node."""
    _, custom = apis(c)
    return custom.list_cluster_custom_object(
        "resource.k8s.io", "v1", "resourceslices",
        field_selector=f"spec.driver=dra.cpu,spec.nodeName={NODE}")["items"]


def driver_pods(c):
    """The chart's driver pods on the real node."""
    core, _ = apis(c)
    return core.list_namespaced_pod(DRIVER_NS, field_selector=f"spec.nodeName={NODE}",
                                    label_selector="app.kubernetes.io/name=dra-driver-cpu").items


# upstream's own binary says so first (cmd/dracpu/app.go printVersion: buildinfo's Go version, at
# start); the project's driver never logs it. A 0.2.0 install runs upstream's v0.2.0 on a real node
# (tests/cluster/cluster_images.py push_driver).
UPSTREAM_VERSION_LINE = '"dracpu" goVersion="go'


def runs_upstreams_binary(c):
    """Whether the driver pod on the real node runs upstream's own binary (its log's first lines),
    called right after an install: the install returned with the driver rolled out (assert_rolled_out)."""
    core, _ = apis(c)
    pods = [p for p in assert_rolled_out(c) if p.spec.node_name == NODE]
    assert pods, "no driver pod on " + NODE
    head = core.read_namespaced_pod_log(pods[0].metadata.name, DRIVER_NS, limit_bytes=4096)
    return UPSTREAM_VERSION_LINE in head


def is_ready(obj):
    return any(x.type == "Ready" and x.status == "True" for x in obj.status.conditions or [])


def wrote_its_pool(c, pod):
    """The pod's driver published its node's pool: its container running, never restarted, and the
    pool created or written in a later second than the pod was made (upstream's driver answers
    /healthz once driver.Start returned, and Start publishes: cmd/dracpu/app.go)."""
    statuses = pod.status.container_statuses or []
    if pod.status.phase != "Running" or not statuses or any(
            not (x.state and x.state.running) or x.restart_count for x in statuses):
        return False
    _, custom = apis(c)
    slices = custom.list_cluster_custom_object(
        "resource.k8s.io", "v1", "resourceslices",
        field_selector=f"spec.driver=dra.cpu,spec.nodeName={pod.spec.node_name}")["items"]
    stamps = [m.get("time") for s in slices for m in s["metadata"].get("managedFields") or []]
    stamps += [s["metadata"]["creationTimestamp"] for s in slices]
    created = pod.metadata.creation_timestamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    return any(t and t > created for t in stamps)


def assert_rolled_out(c):
    """What an install promises when it returns (plugins/module_utils/topology/rollout.py), read once,
    no wait: the chart's DaemonSet rolled out as `kubectl rollout status` reads it (kubectl's
    DaemonSetStatusViewer: observedGeneration caught up, every desired pod updated) and one driver pod
    per desired node, not being deleted, each Ready or, the only one on its node, the writer of its
    node's pool (wrote_its_pool).
    helm's --wait alone accepts a one-node DaemonSet whose new pod is still starting (maxUnavailable 1),
    and after a version-only upgrade the old driver's pool keeps its shape and sizes: the install used
    to return there (a new machine's run). Returns the pods."""
    from kubernetes import client
    apps = client.AppsV1Api(c.api_client)
    sets = apps.list_namespaced_daemon_set(DRIVER_NS, label_selector="app.kubernetes.io/name=dra-driver-cpu").items
    assert sets, "no driver DaemonSet"
    for d in sets:
        assert ((d.status.observed_generation or 0) >= d.metadata.generation
                and (d.status.updated_number_scheduled or 0) >= d.status.desired_number_scheduled), d.status
    core, _ = apis(c)
    everyone = core.list_namespaced_pod(DRIVER_NS, label_selector="app.kubernetes.io/name=dra-driver-cpu").items
    pods = [p for p in everyone if not p.metadata.deletion_timestamp]
    assert len(pods) == sum(d.status.desired_number_scheduled for d in sets), [p.metadata.name for p in pods]
    going = set(p.spec.node_name for p in everyone if p.metadata.deletion_timestamp)
    assert all(is_ready(p) or (p.spec.node_name not in going and wrote_its_pool(c, p)) for p in pods), [
        (p.metadata.name, p.spec.node_name, p.status.phase, p.status.container_statuses) for p in pods]
    return pods


def ready_driver_pod(c):
    pods = [p for p in driver_pods(c) if not p.metadata.deletion_timestamp and is_ready(p)]
    return pods[0] if pods else None


def node_taints(c, name):
    core, _ = apis(c)
    return [c.api_client.sanitize_for_serialization(t) for t in core.read_node(name).spec.taints or []]


def set_taints(c, name, taints):
    core, _ = apis(c)
    core.patch_node(name, {"spec": {"taints": taints or None}})


@contextmanager
def only_real_node_schedulable(c, simulated="node01"):
    """The simulated node tainted NoSchedule meanwhile: a new pod (verify's) can only go to the real node."""
    taints = node_taints(c, simulated)
    set_taints(c, simulated, taints + [{"key": "dra-cpu.kubevirtci.io/test-only-real", "value": "true",
                                        "effect": "NoSchedule"}])
    try:
        yield
    finally:
        set_taints(c, simulated, taints)


def cpuset_ids(cpuset):
    """The CPU ids of a cpuset in the kernel's list format (2-5,8)."""
    ids = set()
    for part in cpuset.split(","):
        a, _, b = part.partition("-")
        ids |= set(range(int(a), int(b or a) + 1))
    return ids


def cpuset_fmt(ids):
    """A cpuset in the kernel's list format (k8s.io/utils/cpuset String: 2-5,8)."""
    out, ids = [], sorted(ids)
    while ids:
        end = 0
        while end + 1 < len(ids) and ids[end + 1] == ids[end] + 1:
            end += 1
        out.append(str(ids[0]) if end == 0 else "%d-%d" % (ids[0], ids[end]))
        ids = ids[end + 1:]
    return ",".join(out)


def process_with_env(var):
    """(pid, value) of the first process whose environment has an entry starting with var (NAME=)."""
    for env in glob.glob("/proc/[0-9]*/environ"):
        try:
            for e in open(env, "rb").read().decode(errors="replace").split("\0"):
                if e.startswith(var):
                    return env.split("/")[2], e.split("=", 1)[1]
        except OSError:
            pass
    raise AssertionError(f"no process with {var}")


def node_dir(c, node=NODE):
    """The real node's directory under the cluster's state dir (real-nodes.json)."""
    with open(os.path.join(c.state_dir, "real-nodes.json")) as f:
        return json.load(f)["nodes"][node]["dir"]


def start_claim_pod(c, name, tolerations=()):
    """A claim of 4 CPUs (a dra.cpu/cpu capacity request, as KubeVirt's) and a Guaranteed pause pod on
    NODE that uses it; waits until it runs and returns (claim uid, the allocation's one result, the
    cpuset the driver passed in DRA_CPUSET_<uid>, that process's pid), the CPUs checked to be 4 of
    the allocated device's cell (the node's default hardware: cells 2-5 and 6-11)."""
    core, custom = apis(c)
    custom.create_namespaced_custom_object("resource.k8s.io", "v1", "default", "resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "cpu", "exactly": {
            "deviceClassName": "dra.cpu", "capacity": {"requests": {"dra.cpu/cpu": "4"}}}}]}}})
    core.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE}, "tolerations": list(tolerations),
                 "terminationGracePeriodSeconds": 1,
                 "resourceClaims": [{"name": "cpu", "resourceClaimName": name}],
                 "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
                                 "resources": {"requests": {"cpu": "4", "memory": "64Mi"},
                                               "limits": {"cpu": "4", "memory": "64Mi"},
                                               "claims": [{"name": "cpu"}]}}]}})
    wait("the claim pod Running", lambda: core.read_namespaced_pod(name, "default").status.phase == "Running",
         timeout=120)
    claim = custom.get_namespaced_custom_object("resource.k8s.io", "v1", "default", "resourceclaims", name)
    uid = claim["metadata"]["uid"]
    [res] = claim["status"]["allocation"]["devices"]["results"]
    assert res["pool"] == NODE and res["device"] in ("cpudevnuma000", "cpudevnuma001"), res
    assert core.read_namespaced_pod(name, "default").status.qos_class == "Guaranteed"
    # the runtime applied the driver's CDI spec: the container's environment holds the CPUs it got
    # (upstream's CDI env: DRA_CPUSET_<claim uid>=<cpuset>)
    pid, cpuset = process_with_env(f"DRA_CPUSET_{uid}=")
    cell = {"cpudevnuma000": set(range(2, 6)), "cpudevnuma001": set(range(6, 12))}[res["device"]]
    assert len(cpuset_ids(cpuset)) == 4 and cpuset_ids(cpuset) <= cell, (cpuset, res["device"])
    return uid, res, cpuset, pid


def assert_pinned_through_nri(c, name, cpuset, pid):
    """The driver pinned the container to the claim's CPUs through NRI (upstream nri_hooks.go
    CreateContainer: a claim's container gets its claims' CPUs), and re-pinned the node's shared
    containers (here its own) to the available CPUs minus the claim's (2-11 minus the claim). The
    machine has fewer CPUs: the node's runc wrapper maps every fake id onto a real one and logs the
    cpuset asked for; the kernel applied the mapped one."""
    core, _ = apis(c)
    ids = cpuset_ids(cpuset)
    ctr = core.read_namespaced_pod(name, "default").status.container_statuses[0].container_id.split("//")[1]
    mapping = os.path.join(node_dir(c), "cpumap.log")
    created = [line.split() for line in open(mapping) if f" create {ctr} cpus " in line]
    assert [line[4] for line in created] == [cpuset_fmt(ids)], (open(mapping).read(), cpuset)
    shared = cpuset_fmt(set(range(2, 12)) - ids)
    wait(f"a shared container re-pinned to {shared}",
         lambda: any(line.split()[1] == "update" and line.split()[4] == shared for line in open(mapping)), timeout=30)
    with open(f"/proc/{pid}/status") as status:
        allowed = [line.split()[1] for line in status if line.startswith("Cpus_allowed_list:")]
    assert allowed == [created[0][6]], (allowed, created)


def cdi_specs_naming(c, uid):
    """The node's CDI spec files (its /run/cdi) that name the claim uid."""
    return [f for f in glob.glob(os.path.join(node_dir(c), "mnt/run/cdi/*.json")) if uid in open(f).read()]


def remove_claim_pod(c, name, uid):
    """Deletes the pod, waits for the driver's NodeUnprepareResources to remove the claim's CDI specs,
    then deletes the claim."""
    core, custom = apis(c)
    core.delete_namespaced_pod(name, "default")
    wait("the claim pod gone", lambda: not core.list_namespaced_pod(
        "default", field_selector=f"metadata.name={name}").items, timeout=60)
    wait("the CDI specs of the claim removed (NodeUnprepareResources)", lambda: not cdi_specs_naming(c, uid),
         timeout=30)
    custom.delete_namespaced_custom_object("resource.k8s.io", "v1", "default", "resourceclaims", name)
