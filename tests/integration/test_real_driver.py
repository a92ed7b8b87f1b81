"""The driver as a real kubelet plugin on a real node: CLUSTER_REAL_NODES=1 next to one simulated node.

real01 is a real kubelet + containerd whose CPU hardware is a fake sysfs tree (12 CPUs, NUMA 0 =
0-5, NUMA 1 = 6-11, cluster_node_hw.py). The chart's DaemonSet runs the project's driver image there
(tests/cluster/driver, built on k8s.io/dynamic-resource-allocation like upstream), pulled through
containerd's mirror under the chart's own default image name. What is asserted is upstream's
behaviour (docs/upstream.md, "What the driver publishes"), read from the real API:
- the kubelet reports the topology (capacity.cpu 12), as on a real 12-CPU node;
- the pod turns Ready only after the kubelet registered the plugin (upstream's Start), and the
  slices are upstream's example for this node (docs/upstream.md, "Example: node node-a"):
  cpudevnuma000 capacity 4, cpudevnuma001 capacity 6, pool named after the node, generation 1,
  owned by the Node; the role's report gives those numbers for real01;
- a Guaranteed pod with a claim starts on the real kubelet: the claim is prepared by the driver
  (NodePrepareResources), the container gets DRA_CPUSET_<claim uid> through CDI from containerd,
  the driver pins it to those CPUs through NRI and re-pins the shared containers without them
  (through the node's runc wrapper, which maps the fake CPU ids onto the machine's and logs them),
  and deleting the pod unprepares it (the CDI spec goes);
- the driver answers /metrics on its health port with upstream main's allocation gauges, and its log's
  operations (opID) run from "begin:" to "end:" as upstream's contextual-logging check requires;
- with `dra_cpu_expose_pcie_roots` (DRAListTypeAttributes is on in the test cluster's 1.36) the devices whose CPUs are local
  to one of the machine's PCIe roots carry resource.kubernetes.io/pcieRoot, the others none.
Runs last, after the real-node binaries are built (`tests/cluster/build.sh real-node`; late_builds.py).
"""
import glob
import os
import sys

import pytest

from ansible_run import run_playbook
from driver_observe_lib import gauges, http_get, operations
from real_nodes_lib import NODE, TAINT_KEY, apis, assert_rolled_out, runs_upstreams_binary, assert_pinned_through_nri, cdi_specs_naming, cpuset_ids, node_dir, remove_claim_pod, start_claim_pod, only_real_node_schedulable as taint_simulated, real_slices, skip_marks, wait

pytestmark = skip_marks() + [
    pytest.mark.timeout(900),
]

# the chart's default tolerates NoSchedule taints only; the real node carries a NoExecute one
EVERY_NODE = {"dra_cpu_chart_values": {"tolerations": [{"operator": "Exists"}]}}


@pytest.fixture(scope="module")
def mixed(cluster_factory):
    # real01 beside a simulated node01 (not the default: one real node alone): the tests compare the
    # real node with the simulated one and taint node01 so verify's pod can only go to real01
    c = cluster_factory("real-driver", CLUSTER_NODES=1, CLUSTER_REAL_NODES=1, CLUSTER_SLICE_DELETE_DELAY=3)
    yield c
    # down at the module's end, not the session's: its kubelet, containerd and pods leave the
    # machine's 2 CPUs to the modules after it
    c.down()


@pytest.fixture(scope="module")
def installed(mixed):
    r = run_playbook(mixed, "install", extra_vars=EVERY_NODE)
    assert r.rc == 0, r
    return r



def test_the_real_kubelet_sees_the_fake_topology(mixed):
    core, _ = apis(mixed)
    node = core.read_node(NODE)
    assert node.status.capacity["cpu"] == "12", node.status.capacity
    assert node.status.node_info.container_runtime_version == "containerd://2.4.2"


def klog_time(log, *markers, last=False):
    """The date and time of the first (or last) klog line holding every marker (``I1202 17:47:10.497550
    ...``), as text that sorts as the time does (``1202 17:47:10.497550``; klog writes no year or zone:
    the kubelet and the driver's container both log in UTC here)."""
    lines = [line for line in log.splitlines() if all(m in line for m in markers)]
    line = lines[-1] if last else lines[0]
    return f"{line.split()[0][1:]} {line.split()[1]}"


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
    # upstream's Start (pkg/driver/driver.go): waitForRegistration, then `go cp.PublishResources(ctx)`,
    # so publication begins only after the kubelet took the plugin up (its RegisterPlugin, by klog's own
    # timestamps; the last registration of dra.cpu's socket, this pod's: the cluster ran drivers before
    # it). "driver started" is logged by main once Start has returned, beside the publishing
    # goroutine, so it may come just before or just after "begin: publishing resources" (85 us after
    # it in a fresh-clone run of 328aef3), and is only required to be there.
    log = core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace)
    assert '"driver started"' in log, log[-2000:]
    assert not runs_upstreams_binary(mixed)   # 0.3.0: the project's driver, standing in for upstream main
    assert klog_time(kubelet_log, '"OperationExecutor.RegisterPlugin started"', "dra.cpu-reg.sock", last=True) \
        <= klog_time(log, '"begin: publishing resources"'), log[-2000:]

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


def test_a_claim_pod_starts_on_the_real_kubelet(mixed, installed):
    name = "real-claim"
    uid, _, cpuset, pid = start_claim_pod(mixed, name, [{"key": TAINT_KEY, "operator": "Exists"}])
    assert cdi_specs_naming(mixed, uid)   # containerd applied the driver's CDI spec (its env: start_claim_pod)
    assert_pinned_through_nri(mixed, name, cpuset, pid)
    remove_claim_pod(mixed, name, uid)


def driver_pod_on_node(mixed):
    core, _ = apis(mixed)
    pods = [p for p in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={NODE}",
            label_selector="app.kubernetes.io/name=dra-driver-cpu").items if p.status.phase == "Running"]
    assert len(pods) == 1, [p.metadata.name for p in pods]
    return pods[0]


def test_the_project_driver_serves_metrics_and_logs_its_operations(mixed, installed):
    """After a claim pod came and went (the test above): /metrics on the health port (chart healthzPort
    8080, the pod's IP: hostNetwork) answers 200 with upstream main's allocation gauges, all 12 CPUs
    accounted for and nothing allocated; the prepare and unprepare counters saw the claim; an unknown
    path is 404. The log's operations follow upstream's logcheck rules, and there are some to check."""
    core, _ = apis(mixed)
    pod = driver_pod_on_node(mixed)
    base = f"http://{pod.status.pod_ip}:8080"
    status, text = http_get(base + "/metrics")
    assert status == 200, text[-2000:]
    g = gauges(text)
    assert g["dra_cpu_allocated_cpus"] == 0 and g["dra_cpu_resource_claims_active"] == 0, g
    assert g["dra_cpu_allocated_cpus"] + g["dra_cpu_available_cpus"] + g["dra_cpu_reserved_cpus"] == 12, g
    assert 'dra_cpu_prepare_claims_total{result="success"} ' in text and "go_goroutines " in text
    assert 'dra_cpu_prepare_claims_total{result="success"} 0\n' not in text, text[-3000:]
    assert 'dra_cpu_unprepare_claims_total{result="success"} 0\n' not in text, text[-3000:]
    assert http_get(base + "/nothing-here")[0] == 404
    log = core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace)
    ops, problems = operations(log)
    assert problems == [], problems
    firsts = [messages[0] for messages in ops.values()]
    for op in ("begin: publishing resources", "begin: preparing resource claims",
               "begin: unpreparing resource claims", "begin: CreateContainer", "begin: synchronize state with the runtime"):
        assert op in firsts, (op, sorted(set(firsts)))


def test_the_project_driver_publishes_the_machines_pcie_roots(mixed, installed):
    """dra_cpu_expose_pcie_roots (args.exposePCIeRoots): each device gets the roots (the machine's, which lay_out copies into the
    node's $HOST_ROOT/sys/devices, as upstream v0.2.0 reads them from its container's /sys) local to one
    of its CPUs, as a list attribute; a device with none gets no attribute. Without the flag no device
    has it (the default install). Reserved 10-11 keeps CPUs 0-5 in cpudevnuma000."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
    from fake_sysfs import pcie_roots   # pylint: disable=import-outside-toplevel
    roots = pcie_roots()
    assert roots, "the machine has no PCIe root: nothing to prove here"
    assert all("resource.kubernetes.io/pcieRoot" not in d["attributes"] for s in real_slices(mixed)
               for d in s["spec"]["devices"])
    # the driver on real01 only: node01's simulated driver (publish mode) has no PCIe root under its
    # host root, so its pool would never carry the attribute the install waits for with the setting on
    real_only = dict(EVERY_NODE["dra_cpu_chart_values"], nodeSelector={"kubernetes.io/hostname": NODE})
    try:
        r = run_playbook(mixed, "install", extra_vars=dict(
            dra_cpu_chart_values=real_only, dra_cpu_reserved_cpus="10-11", dra_cpu_expose_pcie_roots=True))
        assert r.rc == 0, r
        assert_rolled_out(mixed)
        cpus = {"cpudevnuma000": set(range(0, 6)), "cpudevnuma001": set(range(6, 10))}
        want = {name: sorted(r for r, affinity in roots.items() if cpuset_ids(affinity) & ids)
                for name, ids in cpus.items()}
        def published():
            devices = {d["name"]: d for s in real_slices(mixed) for d in s["spec"]["devices"]}
            return {n: devices[n]["attributes"].get("resource.kubernetes.io/pcieRoot", {}).get("strings", [])
                    for n in devices} == want and devices
        devices = wait(f"slices with pcieRoot {want}", published, timeout=60)
        for name, expected in want.items():
            attr = devices[name]["attributes"].get("resource.kubernetes.io/pcieRoot")
            assert (attr == {"strings": expected}) if expected else attr is None, (name, attr)
        pod = driver_pod_on_node(mixed)
        log = apis(mixed)[0].read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace)
        assert f'"PCIe domains detected" count={len(roots)}' in log, log[-3000:]
    finally:
        r = run_playbook(mixed, "install", extra_vars=EVERY_NODE)
        assert r.rc == 0, r


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
    assert f"claim dra-cpu-verify-cpu for 6 CPUs allocated: node {NODE}" in text, text
    assert "pod virt-launcher-dra-cpu-verify Running, QoS Guaranteed" in text, text
    # the 6 CPUs of cell 1 (6-11; the default size is max_vm_host_cpus, cell 0 has 4), as the driver
    # logs its NRI pinning (upstream nri_hooks.go CreateContainer "guaranteed CPUs found")
    assert f"its container pinned to CPUs 6-11 (the driver's log on {NODE})" in text, text
    # what virt-launcher reads, from inside the container: the main flavour's KEP-5304 metadata (the
    # library's file through its CDI bind mount) and DRA_CPUSET_<claim uid> through the driver's CDI spec
    v = r.result("Verify that the claim KubeVirt synthesizes")
    out = v["readout"]
    assert v["passed"] is True and out["problems"] == [], out
    assert [(d["pool"], d["name"], d["numa_node"]) for d in out["metadata"]["devices"]] == \
        [(NODE, "cpudevnuma001", 1)], out
    assert out["metadata"]["allocated_cpus"] == 6 and out["dra_cpuset"] == "6-11" == out["pinned"], out
    assert "KEP-5304 device metadata at /var/run/kubernetes.io/dra-device-attributes/resourceclaims/" \
        "dra-cpu-verify-cpu/cpu/dra.cpu-metadata.json: device cpudevnuma001, NUMA node 1" in text, text
    assert f"in compute, what virt-launcher reads: DRA_CPUSET_{v['claim']['metadata']['uid']}=6-11" in text, text


def test_verify_fails_with_the_events_when_the_pod_cannot_start(mixed, installed, only_real_node_schedulable):
    """A real fault: the image cannot be pulled (the local registry does not have it)."""
    r = run_playbook(mixed, "verify", extra_vars=dict(
        VERIFY_ON_REAL, dra_cpu_verify_image="registry.k8s.io/pause:0.0.0-missing", dra_cpu_verify_timeout=20))
    assert r.rc != 0, r
    msg = " ".join(r.failure_messages())
    assert f"the claim was allocated, but pod default/virt-launcher-dra-cpu-verify on node {NODE} is Pending" in msg, msg
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


def standard_numa_everywhere(slices):
    """The slices when every device in them has main's resource.kubernetes.io/numaNode, else None."""
    devices = [d for s in slices for d in s["spec"].get("devices") or []]
    return slices if devices and all("resource.kubernetes.io/numaNode" in (d.get("attributes") or {})
                                     for d in devices) else None


def verify_text(r):
    return " ".join(str(res.get("msg", "")) for _, res in r.tasks())


def test_the_v02_driver_writes_no_metadata_and_verify_passes_as_kubevirt_would(mixed, installed):
    """Both flavours of the driver (upstream main and v0.2.0, docs/upstream.md "What the driver
    publishes"): v0.2.0 writes no KEP-5304 metadata but injects DRA_CPUSET_<claim uid>, which is all KubeVirt's
    CPU path reads (VEP 152 as merged), so verify passes by default and says the metadata is absent; it fails
    only when dra_cpu_verify_require_metadata asks for it. In individual mode verify fails by default
    (KubeVirt synthesizes grouped claims only); its escape-hatch claim is kept on one NUMA node by the
    attribute each flavour publishes: v0.2.0 has only dra.cpu/numaNodeID, main also the standard
    resource.kubernetes.io/numaNode (read from the slices). Runs last: it reinstalls."""
    v02 = dict(EVERY_NODE, dra_cpu_chart_version="0.2.0")
    try:
        r = run_playbook(mixed, "install", extra_vars=v02)
        assert r.rc == 0, r
        # upstream's own v0.2.0 chart and binary (issue 39), not a stand-in
        assert runs_upstreams_binary(mixed)
        with taint_simulated(mixed):
            ok = run_playbook(mixed, "verify", extra_vars=VERIFY_ON_REAL)
            assert ok.rc == 0, ok
            text = verify_text(ok)
            assert "in compute: no KEP-5304 device metadata at " in text, text
            assert "(not read by KubeVirt's CPU path; other DRA consumers read it)" in text, text
            assert "in compute, what virt-launcher reads: DRA_CPUSET_" in text, text
            assert f"its container pinned to CPUs 6-11 (the driver's log on {NODE})" in text, text

            v = run_playbook(mixed, "verify", extra_vars=dict(VERIFY_ON_REAL, dra_cpu_verify_require_metadata=True))
            assert v.rc != 0, v
            msg = " ".join(v.failure_messages())
            assert "the driver wrote no KEP-5304 device metadata" in msg, msg
            assert "dra_cpu_verify_require_metadata asks for it" in msg and "releases after v0.2.0 write it" in msg, msg
            core, _ = apis(mixed)
            assert not core.list_namespaced_pod(
                "default", field_selector="metadata.name=virt-launcher-dra-cpu-verify").items

        r = run_playbook(mixed, "install", extra_vars=dict(v02, dra_cpu_cpu_device_mode="individual"))
        assert r.rc == 0, r
        assert_rolled_out(mixed)   # the new mode's driver prepares verify's claim, not the grouped one going away
        with taint_simulated(mixed):
            refused = run_playbook(mixed, "verify", extra_vars=VERIFY_ON_REAL)
            assert refused.rc != 0, refused
            msg = " ".join(refused.failure_messages())
            assert "KubeVirt's virt-controller synthesizes grouped claims only" in msg, msg
            assert "dra_cpu_verify_individual_claim=true" in msg, msg
            ok = run_playbook(mixed, "verify", extra_vars=dict(VERIFY_ON_REAL, dra_cpu_verify_individual_claim=True))
            assert ok.rc == 0, ok
            res = ok.result("Verify that the claim KubeVirt synthesizes")
            assert res["numa_attribute"] == "dra.cpu/numaNodeID" and res["cpus"] == 6, res
            assert res["claim"]["spec"]["devices"]["constraints"] == [
                {"requests": ["cpu"], "matchAttribute": "dra.cpu/numaNodeID"}], res["claim"]

        r = run_playbook(mixed, "install", extra_vars=dict(EVERY_NODE, dra_cpu_cpu_device_mode="individual"))
        assert r.rc == 0, r
        assert_rolled_out(mixed)
        # v0.2.0 -> main in the same mode: the pool keeps its shape and sizes (what the install waits
        # for), and main's resourceslice controller adds the standard attribute in place a moment after
        # its pod is Ready (syncPool keeps the generation), so until then the slices are v0.2.0's and
        # verify rightly picks dra.cpu/numaNodeID (main publishes it too). A cached run saw that moment.
        wait("main's slices with resource.kubernetes.io/numaNode", lambda: standard_numa_everywhere(real_slices(mixed)),
             timeout=60)
        with taint_simulated(mixed):
            ok = run_playbook(mixed, "verify", extra_vars=dict(VERIFY_ON_REAL, dra_cpu_verify_individual_claim=True))
            assert ok.rc == 0, ok
            res = ok.result("Verify that the claim KubeVirt synthesizes")
            assert res["numa_attribute"] == "resource.kubernetes.io/numaNode", res
            meta = res["readout"]["metadata"]
            # six CPU devices of cell 1, each with its NUMA node in the metadata, as many as the claim's CPUs
            assert len(meta["devices"]) == 6 and meta["numa_nodes"] == ["1"] and meta["allocated_cpus"] == 6, meta
    finally:
        r = run_playbook(mixed, "install", extra_vars=EVERY_NODE)
        assert r.rc == 0, r
