"""dra_cpu_report_dir (default: $ARTIFACTS, as KubeVirt's CI lanes set it): what a run leaves there
for a lane's artifacts, against the session test cluster. A passing run: the preflight findings and
the dra_cpu_topology fact; a failed topology step (the published cells do not match the sizing rule)
and a failed helm install (a value the chart's schema refuses): the message, the driver's
ResourceSlices and its pods' state; check mode: nothing.

Nodes: the session cluster's real node, real01 (a real kubelet + containerd; the driver a real
kubelet plugin); its failures are the role's, a mismatch of the sizing rule and a value the chart
refuses.
"""
import json

from ansible_run import run_playbook

PREFLIGHT, TOPOLOGY, FAILURE = "dra-cpu-preflight.json", "dra-cpu-topology.json", "dra-cpu-failure.json"


def read(path):
    with open(path) as fh:
        return json.load(fh)


def test_a_passing_run_leaves_the_findings_and_the_topology(cluster, tmp_path):
    artifacts = tmp_path / "artifacts"
    r = run_playbook(cluster, "install", env={"ARTIFACTS": str(artifacts)})
    assert r.rc == 0, r
    assert sorted(p.name for p in artifacts.iterdir()) == [PREFLIGHT, TOPOLOGY]
    findings = read(artifacts / PREFLIGHT)
    assert findings["passed"] is True
    assert [f["node"] for f in findings["findings"] if f["check"] == "cpu_manager_policy"] == ["real01"]
    assert findings["report"] == r.result("Check the cluster's prerequisites")["report"]
    written = read(artifacts / TOPOLOGY)
    # the fact, and what it leaves out: each node's devices, pool, SMT (the table's devices column)
    details = written.pop("node_details")
    assert written == r.fact("dra_cpu_topology")
    assert [c["devices"] for c in details["real01"]["cells"]] == [["cpudevnuma000"], ["cpudevnuma001"]]


def test_check_mode_writes_nothing(cluster, tmp_path):
    artifacts = tmp_path / "artifacts"
    r = run_playbook(cluster, "install", check=True, extra_vars={"dra_cpu_report_dir": str(artifacts)})
    assert r.rc == 0, r
    assert not artifacts.exists()


def test_a_failed_topology_step_leaves_the_slices_and_the_pods(cluster, tmp_path):
    artifacts = tmp_path / "artifacts"
    r = run_playbook(cluster, "install", extra_vars={"dra_cpu_report_dir": str(artifacts),
                                                     "dra_cpu_num_vcpu": 12, "dra_cpu_num_numa_nodes": 3})
    assert r.rc == 2, r
    failure = read(artifacts / FAILURE)
    assert "node real01 publishes cells [0, 1], expected cells [0, 1, 2]" in failure["message"]
    assert {s["spec"]["nodeName"] for s in failure["resource_slices"]} == {"real01"}
    assert [(p["node"], p["phase"]) for p in failure["driver_pods"]] == [("real01", "Running")]
    assert failure["topology"]["nodes"]["real01"]["allocatable_cpus"] == 10
    assert failure["node_details"]["real01"]["cells"][0]["devices"] == ["cpudevnuma000"]
    assert not (artifacts / TOPOLOGY).exists()


def test_a_failed_helm_install_leaves_the_slices_and_the_pods(cluster, tmp_path):
    artifacts = tmp_path / "artifacts"
    r = run_playbook(cluster, "install", extra_vars={"dra_cpu_report_dir": str(artifacts),
                                                     "dra_cpu_chart_values": {"image": {"pullPolicy": "Sometimes"}}})
    assert r.rc == 2, r
    helm_failed = [m for m in r.failure_messages() if "pullPolicy" in m]
    assert helm_failed, r
    failure = read(artifacts / FAILURE)
    assert failure["message"] == r.result("Fail with the install's own message")["msg"]
    assert "pullPolicy" in failure["message"]
    # the release installed before is untouched: its driver and slices are what the lane needs to see
    assert [p["node"] for p in failure["driver_pods"]] == ["real01"]
    assert {s["spec"]["nodeName"] for s in failure["resource_slices"]} == {"real01"}
    assert failure["pending_nodes"] == []
