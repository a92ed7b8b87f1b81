"""The driver as a real kubelet plugin on a real node: CLUSTER_REAL_NODES=1 next to one simulated node.

real01 is a real kubelet + containerd whose CPU hardware is a fake sysfs tree (12 CPUs, NUMA 0 =
0-5, NUMA 1 = 6-11, cluster_node_hw.py). The chart's DaemonSet runs the project's driver image there
(tests/cluster/driver, built on k8s.io/dynamic-resource-allocation like upstream), pulled through
containerd's mirror under the chart's own default image name. What is asserted is upstream's
behaviour (../shared/reference/dra-driver-cpu.md), read from the real API:
- the kubelet reports the topology (capacity.cpu 12), as on a real 12-CPU node;
- the pod turns Ready only after the kubelet registered the plugin (upstream's Start), and the
  slices are upstream's example for this node ("Example: node-a, 12 CPUs ... reserved 0-1"):
  cpudevnuma000 capacity 4, cpudevnuma001 capacity 6, pool named after the node, generation 1,
  owned by the Node; the role's report gives those numbers for real01;
- a Guaranteed pod with a claim starts on the real kubelet: the claim is prepared by the driver
  (NodePrepareResources), the container gets DRA_CPUSET_<claim uid> through CDI from containerd,
  the driver pins it to those CPUs through NRI and re-pins the shared containers without them
  (through the node's runc wrapper, which maps the fake CPU ids onto the machine's and logs them),
  and deleting the pod unprepares it (the CDI spec goes).
Runs last, after the real-node binaries are built (`tests/cluster/build.sh real-node`; late_builds.py).
"""
import glob
import json
import os

import pytest

from ansible_run import run_playbook
from real_nodes_lib import NODE, TAINT_KEY, apis, only_real_node_schedulable as taint_simulated, real_slices, skip_marks, wait

pytestmark = skip_marks() + [
    pytest.mark.timeout(900),
]

# the chart's default tolerates NoSchedule taints only; the real node carries a NoExecute one
EVERY_NODE = {"dra_cpu_chart_values": {"tolerations": [{"operator": "Exists"}]}}


@pytest.fixture(scope="module")
def mixed(cluster_factory):
    c = cluster_factory("real-driver", CLUSTER_REAL_NODES=1, CLUSTER_SLICE_DELETE_DELAY=3)
    yield c
    # down at the module's end, not the session's: its kubelet, containerd and pods leave the
    # machine's 2 CPUs to the modules after it
    c.down()


@pytest.fixture(scope="module")
def installed(mixed):
    r = run_playbook(mixed, "install", extra_vars=EVERY_NODE)
    assert r.rc == 0, r
    return r


def node_dir(c):
    return json.load(open(os.path.join(c.state_dir, "real-nodes.json")))["nodes"][NODE]["dir"]


def test_the_real_kubelet_sees_the_fake_topology(mixed):
    core, _ = apis(mixed)
    node = core.read_node(NODE)
    assert node.status.capacity["cpu"] == "12", node.status.capacity
    assert node.status.node_info.container_runtime_version == "containerd://2.4.2"


def klog_time(log, marker):
    """The time of day of the first klog line holding ``marker`` (``I1202 17:47:10.497550 ...``), as text
    that sorts as the time does."""
    line = next(line for line in log.splitlines() if marker in line)
    return line.split()[1]


def test_the_driver_registers_with_the_kubelet_and_publishes_upstreams_slices(mixed, installed):
    core, _ = apis(mixed)
    def driver_pods():
        return core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={NODE}",
                                                label_selector="app.kubernetes.io/name=dra-driver-cpu").items

    # the role waits for the published pool, not for pod readiness: upstream's /healthz and the
    # chart's readiness probe (initialDelaySeconds 5) may come after the slices
    wait("the driver pod Ready on the real node", lambda: [
        p for p in driver_pods() if any(x.type == "Ready" and x.status == "True" for x in p.status.conditions or [])],
        timeout=60)
    pods = driver_pods()
    assert len(pods) == 1, [p.metadata.name for p in pods]
    pod = pods[0]
    assert pod.spec.containers[0].image == "registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.3.0"
    assert pod.status.container_statuses[0].restart_count == 0
    # the kubelet's plugin watcher found the driver's registration socket in this node's directory
    assert glob.glob(os.path.join(node_dir(mixed), "mnt/var/lib/kubelet/plugins_registry/dra.cpu*.sock"))
    kubelet_log = open(os.path.join(mixed.state_dir, "logs", f"real-{NODE}-kubelet.log")).read()
    assert '"OperationExecutor.RegisterPlugin started"' in kubelet_log and "dra.cpu-reg.sock" in kubelet_log
    # upstream's Start: publication begins only once the kubelet reported the plugin registered
    # (by klog's own timestamps: two goroutines' lines may reach the log out of order)
    log = core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace)
    assert klog_time(log, '"driver started"') <= klog_time(log, '"begin: publishing resources"'), log[-2000:]

    slices = real_slices(mixed)
    assert len(slices) == 1, slices
    s = slices[0]
    assert s["spec"]["pool"] == {"name": NODE, "generation": 1, "resourceSliceCount": 1}
    assert s["spec"]["nodeName"] == NODE and s["spec"]["driver"] == "dra.cpu"
    owner = s["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner.get("controller")) == ("Node", NODE, True)
    devices = {d["name"]: d for d in s["spec"]["devices"]}
    assert sorted(devices) == ["cpudevnuma000", "cpudevnuma001"]
    for name, numa, cpus in (("cpudevnuma000", 0, 4), ("cpudevnuma001", 1, 6)):
        d = devices[name]
        assert d["capacity"] == {"dra.cpu/cpu": {"value": str(cpus)}}, d
        assert d["allowMultipleAllocations"] is True
        attrs = {k: list(v.values())[0] for k, v in d["attributes"].items()}
        assert attrs == {"dra.cpu/numaNodeID": numa, "dra.cpu/socketID": 0, "dra.cpu/smtEnabled": False,
                         "dra.cpu/numCPUs": cpus, "dra.net/numaNode": numa,
                         "resource.kubernetes.io/numaNode": numa}, attrs

    topo = installed.fact("dra_cpu_topology")
    assert topo["nodes"][NODE]["cells"] == {"0": 4, "1": 6}


def test_preflight_reads_the_real_kubelet_and_runtime(installed):
    """Preflight's node checks on real01 come from the real kubelet's /configz (through the API
    server's node proxy) and the runtime version the real containerd reports over CRI."""
    findings = [f for f in installed.result("Check the cluster's prerequisites")["findings"] if f.get("node") == NODE]
    by_check = {f["check"]: f for f in findings}
    assert by_check["container_runtime"]["severity"] == "ok", findings
    assert by_check["container_runtime"]["message"] == f"node {NODE} runs containerd://2.4.2", findings
    assert by_check["cpu_manager_policy"]["message"] == f"node {NODE}: cpuManagerPolicy none", findings


def fmt(ids):
    """A cpuset in the kernel's list format (k8s.io/utils/cpuset String: 2-5,8)."""
    out, ids = [], sorted(ids)
    while ids:
        end = 0
        while end + 1 < len(ids) and ids[end + 1] == ids[end] + 1:
            end += 1
        out.append(str(ids[0]) if end == 0 else "%d-%d" % (ids[0], ids[end]))
        ids = ids[end + 1:]
    return ",".join(out)


def container_pid(var):
    """The pid of the process whose environment has an entry starting with var."""
    for env in glob.glob("/proc/[0-9]*/environ"):
        try:
            if any(e.startswith(var) for e in open(env, "rb").read().decode(errors="replace").split("\0")):
                return env.split("/")[2]
        except OSError:
            pass
    raise AssertionError(f"no process with {var}")


def test_a_claim_pod_starts_on_the_real_kubelet(mixed, installed):
    core, custom = apis(mixed)
    name = "real-claim"
    custom.create_namespaced_custom_object("resource.k8s.io", "v1", "default", "resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "cpu", "exactly": {
            "deviceClassName": "dra.cpu", "capacity": {"requests": {"dra.cpu/cpu": "4"}}}}]}}})
    core.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE},
                 "tolerations": [{"key": TAINT_KEY, "operator": "Exists"}],
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

    # containerd applied the driver's CDI spec: the container's environment holds the CPUs it got
    var = f"DRA_CPUSET_{uid}="   # upstream's CDI env: DRA_CPUSET_<claim uid>=<cpuset>
    cdi = glob.glob(os.path.join(node_dir(mixed), "mnt/run/cdi/*.json"))
    assert any(uid in open(f).read() for f in cdi), cdi
    found = []
    for env in glob.glob("/proc/[0-9]*/environ"):
        try:
            found += [e for e in open(env, "rb").read().decode(errors="replace").split("\0") if e.startswith(var)]
        except OSError:
            pass
    assert found, f"no process with {var}"
    cpuset = found[0].split("=", 1)[1]
    cell = {"cpudevnuma000": set(range(2, 6)), "cpudevnuma001": set(range(6, 12))}[res["device"]]
    ids = set()
    for part in cpuset.split(","):
        a, _, b = part.partition("-")
        ids |= set(range(int(a), int(b or a) + 1))
    assert len(ids) == 4 and ids <= cell, (cpuset, res["device"])

    # the driver pinned the container to those CPUs through NRI (upstream nri_hooks.go CreateContainer:
    # a claim's container gets its claims' CPUs), and re-pinned the node's shared containers (here its
    # own) to the available CPUs minus the claim's (2-11 minus the claim). The machine has fewer CPUs:
    # the node's runc wrapper maps every fake id onto a real one and logs the cpuset asked for.
    ctr = core.read_namespaced_pod(name, "default").status.container_statuses[0].container_id.split("//")[1]
    mapping = os.path.join(node_dir(mixed), "cpumap.log")
    created = [line.split() for line in open(mapping) if f" create {ctr} cpus " in line]
    assert [line[4] for line in created] == [fmt(ids)], (open(mapping).read(), cpuset)
    shared = fmt(set(range(2, 12)) - ids)
    wait(f"a shared container re-pinned to {shared}",
         lambda: any(line.split()[1] == "update" and line.split()[4] == shared for line in open(mapping)), timeout=30)
    with open(f"/proc/{container_pid(var)}/status") as status:
        allowed = [line.split()[1] for line in status if line.startswith("Cpus_allowed_list:")]
    assert allowed == [created[0][6]], (allowed, created)   # the mapped cpuset, applied by the kernel

    core.delete_namespaced_pod(name, "default")
    wait("the claim pod gone", lambda: not core.list_namespaced_pod(
        "default", field_selector=f"metadata.name={name}").items, timeout=60)
    wait("the CDI spec of the claim removed (NodeUnprepareResources)", lambda: not any(
        uid in open(f).read() for f in glob.glob(os.path.join(node_dir(mixed), "mnt/run/cdi/*.json"))), timeout=30)
    custom.delete_namespaced_custom_object("resource.k8s.io", "v1", "default", "resourceclaims", name)


@pytest.fixture
def only_real_node_schedulable(mixed):
    """node01 (simulated) tainted NoSchedule for one test: the verify pod can only go to real01."""
    with taint_simulated(mixed):
        yield


VERIFY_ON_REAL = {"dra_cpu_verify_tolerations": [{"key": TAINT_KEY, "operator": "Exists"}]}


def test_verify_proves_the_pod_starts_on_the_real_kubelet(mixed, installed, only_real_node_schedulable):
    r = run_playbook(mixed, "verify", extra_vars=VERIFY_ON_REAL)
    assert r.rc == 0, r
    text = " ".join(str(res.get("msg", "")) for _, res in r.tasks())
    assert f"claim for 6 CPUs allocated: node {NODE}" in text, text
    assert "test pod Running, QoS Guaranteed" in text, text
    # the 6 CPUs of cell 1 (6-11; the default size is max_vm_host_cpus, cell 0 has 4), as the driver
    # logs its NRI pinning (upstream nri_hooks.go CreateContainer "guaranteed CPUs found")
    assert f"its container pinned to CPUs 6-11 (the driver's log on {NODE})" in text, text


def test_verify_fails_with_the_events_when_the_pod_cannot_start(mixed, installed, only_real_node_schedulable):
    """A real fault: the image cannot be pulled (the local registry does not have it)."""
    r = run_playbook(mixed, "verify", extra_vars=dict(
        VERIFY_ON_REAL, dra_cpu_verify_image="registry.k8s.io/pause:0.0.0-missing", dra_cpu_verify_timeout=20))
    assert r.rc != 0, r
    msg = " ".join(r.failure_messages())
    assert f"the claim was allocated, but pod default/dra-cpu-verify on node {NODE} is Pending" in msg, msg
    assert "ImagePullBackOff" in msg or "ErrImagePull" in msg, msg
    assert "pause:0.0.0-missing" in msg, msg


def test_new_reserved_cpus_update_the_real_pool_in_place(mixed, installed):
    """The same upgrade the simulator is tested with, on the real kubelet plugin: the new driver's
    resourceslice controller updates the one slice in place at generation 1 (syncPool keeps the
    generation when at most one slice changed), and the role still reports the new sizes."""
    before = real_slices(mixed)
    r = run_playbook(mixed, "install", extra_vars=dict(EVERY_NODE, dra_cpu_reserved_cpus="0-3"))
    assert r.rc == 0, r
    topo = r.fact("dra_cpu_topology")
    assert topo["nodes"][NODE]["cells"] == {"0": 2, "1": 6}
    after = real_slices(mixed)
    assert [s["metadata"]["name"] for s in after] == [s["metadata"]["name"] for s in before]
    assert after[0]["spec"]["pool"] == {"name": NODE, "generation": 1, "resourceSliceCount": 1}
    assert after[0]["metadata"]["resourceVersion"] != before[0]["metadata"]["resourceVersion"]
