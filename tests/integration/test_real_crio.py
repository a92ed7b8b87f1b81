"""The driver on a real node that runs CRI-O v1.36.3 instead of containerd (issue 32).

kubevirtci's k8s-1.36 provider runs CRI-O 1.36 on every node, so KubeVirt's CI lane takes this path:
the driver's NRI plugin and its CDI specs under CRI-O, and CRI-O's containerRuntimeVersion read by
the preflight. real01 here is the cluster's kubelet with a real CRI-O (built by `tests/cluster/build.sh
cri-o` from tools/cri-o-v1.36.3, with Debian's conmon and runc; CLUSTER_REAL_NODE_OVERRIDES
`{"real01": {"runtime": "cri-o"}}`), the same fake CPU hardware as the containerd nodes (12 CPUs, 2
cells). Asserted, from the real API and the node itself:
- the kubelet reports `cri-o://1.36.3` and the topology, pods run, images come through CRI-O's
  registries.conf mirror from the local registry;
- the role installs: preflight's container_runtime check reads `cri-o://1.36.3` and passes, the
  chart's driver registers with the kubelet and publishes upstream's slices for this node;
- a claim pod starts: CRI-O injected the driver's CDI spec (DRA_CPUSET_<uid>) and the KEP-5304
  metadata file the library's CDI spec mounts, the driver pinned the container through CRI-O's NRI
  (and re-pinned its own, shared, container), and deleting the pod unprepares the claim;
- verify's pod runs and reports the CPUs the driver pinned it to;
- `cluster.py down` leaves no process, mount, cgroup or bind-mount target (/run/crio) behind.
Runs last, after `build.sh cri-o` (late_builds.py), in the real-node lane of `make test`.
"""
import glob
import hashlib
import json
import os
import ssl
import urllib.request

import pytest

from ansible_run import run_playbook
from cluster_pids import processes_of
from real_nodes_lib import NODE, apis, assert_pinned_through_nri, real_slices, remove_claim_pod, start_claim_pod, wait

pytestmark = [
    pytest.mark.late_build("cri-o"),
    pytest.mark.skipif(os.geteuid() != 0, reason="real nodes need root (mount/UTS namespaces, cgroups)"),
    pytest.mark.timeout(900),
]

CRIO_VERSION = "cri-o://1.36.3"


@pytest.fixture(scope="module")
def crio(cluster_factory):
    # one real node on CRI-O and nothing else: no simulated node, so no real-node taint either
    c = cluster_factory("real-crio", CLUSTER_NODES=0, CLUSTER_REAL_NODES=1,
                        CLUSTER_REAL_NODE_OVERRIDES={NODE: {"runtime": "cri-o"}}, CLUSTER_SLICE_DELETE_DELAY=3)
    yield c
    c.down()


@pytest.fixture(scope="module")
def installed(crio):
    r = run_playbook(crio, "install")
    assert r.rc == 0, r
    return r



def pause_pod(name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE}, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1"}]}}


def test_the_kubelet_runs_on_crio(crio):
    core, _ = apis(crio)
    node = core.read_node(NODE)
    assert node.status.node_info.container_runtime_version == CRIO_VERSION
    assert node.status.capacity["cpu"] == "12", node.status.capacity
    state = json.load(open(os.path.join(crio.state_dir, "real-nodes.json")))["nodes"][NODE]
    assert state["runtime"] == "cri-o"
    req = urllib.request.Request(f"{crio.env['CLUSTER_APISERVER']}/api/v1/nodes/{NODE}/proxy/configz",
                                 headers={"Authorization": f"Bearer {crio.env['CLUSTER_ADMIN_TOKEN']}"})
    ctx = ssl.create_default_context(cafile=crio.env["CLUSTER_CA_FILE"])
    with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
        conf = json.load(r)["kubeletconfig"]
    assert conf["cgroupDriver"] == "cgroupfs" and conf["containerRuntimeEndpoint"] == "unix:///run/crio/crio.sock"
    # a bridge-network pod, its image pulled by CRI-O through registries.conf's mirror
    core.create_namespaced_pod("default", pause_pod("crio-bridge"))
    wait("pod crio-bridge Running", lambda: core.read_namespaced_pod("crio-bridge", "default").status.phase == "Running",
         timeout=90)
    crio_log = open(os.path.join(crio.state_dir, "logs", f"real-{NODE}-crio.log"), errors="replace").read()
    assert "registry.k8s.io/pause:3.10.1" in crio_log, crio_log[-2000:]
    reg_log = open(os.path.join(crio.state_dir, "logs", "registry.log"), errors="replace").read()
    assert "/v2/pause/manifests/3.10.1" in reg_log
    core.delete_namespaced_pod("crio-bridge", "default")


def test_preflight_reads_crio_and_the_driver_publishes(crio, installed):
    findings = [f for f in installed.result("Check the cluster's prerequisites")["findings"] if f.get("node") == NODE]
    by_check = {f["check"]: f for f in findings}
    assert by_check["container_runtime"]["severity"] == "ok", findings
    assert by_check["container_runtime"]["message"] == f"node {NODE} runs {CRIO_VERSION}", findings
    core, _ = apis(crio)
    pods = core.list_namespaced_pod("dra-driver-cpu", field_selector=f"spec.nodeName={NODE}",
                                    label_selector="app.kubernetes.io/name=dra-driver-cpu").items
    assert len(pods) == 1 and pods[0].status.container_statuses[0].restart_count == 0
    kubelet_log = open(os.path.join(crio.state_dir, "logs", f"real-{NODE}-kubelet.log")).read()
    assert '"OperationExecutor.RegisterPlugin started"' in kubelet_log and "dra.cpu-reg.sock" in kubelet_log
    log = core.read_namespaced_pod_log(pods[0].metadata.name, "dra-driver-cpu")
    assert "NRI" in log or "nri" in log, log[-2000:]
    [s] = real_slices(crio)
    assert s["spec"]["pool"] == {"name": NODE, "generation": 1, "resourceSliceCount": 1}
    caps = {d["name"]: d["capacity"]["dra.cpu/cpu"]["value"] for d in s["spec"]["devices"]}
    assert caps == {"cpudevnuma000": "4", "cpudevnuma001": "6"}
    assert installed.fact("dra_cpu_topology")["nodes"][NODE]["cells"] == {"0": 4, "1": 6}


def test_a_claim_pod_gets_cdi_metadata_and_nri_pinning_from_crio(crio, installed):
    name = "crio-claim"
    # CDI: CRI-O applied the driver's spec (the env, start_claim_pod) and the library's metadata spec
    # (a bind mount at the path KubeVirt's virt-launcher reads)
    uid, res, cpuset, pid = start_claim_pod(crio, name)
    meta_path = f"/proc/{pid}/root/var/run/kubernetes.io/dra-device-attributes/resourceclaims/{name}/cpu/dra.cpu-metadata.json"
    meta = json.load(open(meta_path))
    assert meta["kind"] == "DeviceMetadata" and meta["apiVersion"] == "metadata.resource.k8s.io/v1beta1", meta
    [req] = meta["requests"]
    [dev] = req["devices"]
    assert (req["name"], dev["driver"], dev["pool"], dev["name"]) == ("cpu", "dra.cpu", NODE, res["device"]), meta
    assert dev["attributes"]["dra.cpu/allocatedNumCPUs"] == {"int": 4}, dev
    # NRI: the driver pinned the container through CRI-O, and re-pinned the shared ones
    assert_pinned_through_nri(crio, name, cpuset, pid)
    remove_claim_pod(crio, name, uid)


def test_verify_runs_on_crio(crio, installed):
    r = run_playbook(crio, "verify")
    assert r.rc == 0, r
    text = " ".join(str(res.get("msg", "")) for _, res in r.tasks())
    assert f"claim dra-cpu-verify-cpu for 6 CPUs allocated: node {NODE}" in text, text
    assert "pod virt-launcher-dra-cpu-verify Running, QoS Guaranteed" in text, text
    assert f"its container pinned to CPUs 6-11 (the driver's log on {NODE})" in text, text


def test_down_leaves_nothing(crio, installed):
    state = json.load(open(os.path.join(crio.state_dir, "real-nodes.json")))["nodes"][NODE]
    cg = f"dracpu-{hashlib.sha256(crio.state_dir.encode()).hexdigest()[:8]}-{NODE}"
    cgroups = glob.glob(f"/sys/fs/cgroup/*/{cg}")
    assert cgroups
    crio.down()
    mountinfo = open("/proc/self/mountinfo").read()
    assert crio.state_dir not in mountinfo
    assert " /run/crio " not in mountinfo
    assert not processes_of(crio.state_dir), processes_of(crio.state_dir)
    assert not [g for g in cgroups if os.path.exists(g)]
    assert not os.path.exists(os.path.join(crio.state_dir, "real-nodes.json"))
    assert state["bridge"] + ":" not in os.popen("ip -o link").read()
