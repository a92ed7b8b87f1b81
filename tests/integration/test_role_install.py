"""The role end to end on the session test cluster (1 node, 12 vCPUs, 2 NUMA cells).

Tests in this module run in order and share the cluster; each one states the cluster state it
needs first (installed / not installed), so a failure in one does not cascade into false passes.

Nodes: the session cluster's real node, real01 (a real kubelet + containerd; the driver a real
kubelet plugin): the role's uninstall waits for the kubelet to wipe the driver's slices, about 30 s
after the plugin unregisters, as on a real cluster; the tests of the uninstall run it, the others
start from an empty cluster through cluster_reset.remove_driver (the same end state in seconds).
"""
import hashlib
import http.server
import os
import re
import shutil
import socketserver
import tarfile
import threading

import pytest

from ansible_run import REPO, run_playbook
from cluster_reset import remove_driver

pytestmark = pytest.mark.timeout(1200)

NS = "dra-driver-cpu"
FOREIGN_DRIVER = "other.example.com"


def objects(cluster):
    """A snapshot of what the collection could create: namespaces, device classes, slices, releases."""
    from kubernetes import client
    core = client.CoreV1Api(cluster.api_client)
    custom = client.CustomObjectsApi(cluster.api_client)
    snap = {
        "namespaces": sorted(n.metadata.name for n in core.list_namespace().items),
        "secrets": sorted(f"{s.metadata.namespace}/{s.metadata.name}" for s in core.list_secret_for_all_namespaces().items
                          if not s.metadata.name.startswith("default-token")),
        "deviceclasses": sorted(o["metadata"]["name"] for o in custom.list_cluster_custom_object(
            "resource.k8s.io", "v1", "deviceclasses")["items"]),
        "resourceslices": sorted(o["metadata"]["name"] for o in custom.list_cluster_custom_object(
            "resource.k8s.io", "v1", "resourceslices")["items"]),
    }
    return snap


def slices(cluster, driver="dra.cpu"):
    from kubernetes import client
    custom = client.CustomObjectsApi(cluster.api_client)
    return custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices",
                                             field_selector=f"spec.driver={driver}")["items"]


def uninstall(cluster):
    r = run_playbook(cluster, "uninstall")
    assert r.rc == 0, r
    return r


def install(cluster, **extra):
    r = run_playbook(cluster, "install", extra_vars=extra)
    assert r.rc == 0, r
    return r


def cells(topology, node="real01"):
    """The fact's cells of a node as (id, allocatable CPUs), in the fact's (id) order."""
    return [(int(i), cpus) for i, cpus in topology["nodes"][node]["cells"].items()]


@pytest.mark.parametrize("flag", [None, "false", "TRUE", "1"])
def test_gate_off_changes_nothing(cluster, flag):
    remove_driver(cluster)
    before = objects(cluster)
    r = run_playbook(cluster, "install", use_dra_cpu=flag)
    assert r.rc == 0, r
    assert r.changed == 0, r
    assert objects(cluster) == before
    assert any("KUBEVIRT_USE_DRA_CPU" in (res.get("msg") or "") for _, res in r.tasks()), r


def test_gate_off_says_why_once_and_every_stage_is_skipped(cluster):
    """The gate is validate's first step: its task is skipped with the one message, then every later
    task is skipped too (the names of tasks that read settings never fail to render)."""
    r = run_playbook(cluster, "install", use_dra_cpu="false", callback="ansible.builtin.default")
    assert r.returncode == 0, r.stdout[-3000:]
    # the message as the callback quotes it (YAML here: ansible.cfg's result format)
    assert r.stdout.count("KUBEVIRT_USE_DRA_CPU is not ''true'': skipping dra-driver-cpu") == 1, r.stdout
    assert "[WARNING]" not in r.stdout + r.stderr and "[ERROR]" not in r.stdout + r.stderr, r.stdout + r.stderr
    recap = [line for line in r.stdout.splitlines() if line.startswith("localhost")][-1]
    assert " changed=0 " in recap and " failed=0 " in recap and " ok=1 " in recap, recap


def test_check_mode_on_empty_cluster_creates_nothing(cluster):
    remove_driver(cluster)
    before = objects(cluster)
    r = run_playbook(cluster, "install", check=True)
    assert r.rc == 0, r
    assert objects(cluster) == before


def readme_report():
    """The no-op report docs/usage.md shows ("A run prints a short report ..."), line by line."""
    text = open(os.path.join(REPO, "docs", "usage.md")).read()
    block = text.split("A run prints a short report", 1)[1].split("```", 2)[1]
    return block.strip("\n").split("\n")


def assert_report_as_in_readme(lines, cluster):
    """The report of a no-op run on the 1-node test cluster is docs/usage.md's example, but for the helm
    cache path, which names this machine."""
    want = readme_report()
    assert len(lines) == len(want), (lines, want)
    for got, line in zip(lines, want):
        if line.startswith("helm: "):
            assert got.startswith("helm: v3."), (got, line)
        else:
            assert got == line, (got, line)


def plain_install(cluster):
    """install.yml with the default callback, as a user runs it: its output lines."""
    plain = run_playbook(cluster, "install", callback="ansible.builtin.default")
    assert plain.returncode == 0, plain.stdout[-3000:]
    # issue 38: nothing before the play (the locked cryptography: no CryptographyDeprecationWarning)
    assert not re.search(r"Warning|\[WARNING\]", plain.stderr), plain.stderr
    out = plain.stdout.splitlines()
    named = [line for line in out if line.startswith(
        "TASK [kubevirtci.dra_cpu.dra_cpu : Install or upgrade release dra-driver-cpu on https://")]
    assert len(named) == 1 and "(context " in named[0] and ", kubeconfig %s)" % cluster.kubeconfig in named[0], out
    # no task of another path: a skipped task would print 3 lines
    assert not any(line.startswith("skipping:") for line in out), plain.stdout
    return out


def assert_short_noop_output(cluster):
    """A no-op run with the default callback: the release task names the cluster before it changes
    anything, and the whole output stays short (issue 16: at most 40 lines; 198 before the stages,
    43 with a gate task of its own; 41 since the report's last line gives the largest VM in vCPUs
    too, issue 29, and the YAML result format wraps it at 80 columns); the helm stage's second call
    (fitting helm to the chart's values schema, issue 45) is a ninth task of three lines: at most 43.
    Issue 38: ansible-core's blank line before the play, then the play and its report (seen: 1 + 43),
    and no warning before them (plain_install reads stderr)."""
    out = plain_install(cluster)
    assert out[0] == "" and out[1].startswith("PLAY [") and len(out[1:]) <= 43, "\n".join(out)


def test_a_first_install_prints_at_most_60_lines(cluster):
    """issue 16: a first install with the default callback prints at most 60 lines (the namespace
    line joins the report; nothing else is added)."""
    remove_driver(cluster)
    out = plain_install(cluster)
    assert len(out) <= 60, "\n".join(out)


def test_install_defaults_reports_the_sizing_rule_and_is_idempotent(cluster):
    remove_driver(cluster)
    r = install(cluster)
    topo = r.fact("dra_cpu_topology")
    assert topo is not None, r
    assert topo["driver"] == "dra.cpu"
    assert topo["mode"] == "grouped" and topo["group_by"] == "numanode"
    assert cells(topo) == [(0, 4), (1, 6)]
    assert topo["nodes"]["real01"]["allocatable_cpus"] == 10
    assert topo["max_vm_host_cpus"] == 6
    assert topo["largest_cell"] == {"node": "real01", "id": 1, "allocatable_cpus": 6}
    assert topo["smallest_cell"] == {"node": "real01", "id": 0, "allocatable_cpus": 4}
    # the first run read the chart (mapping onto driverConfig) and created the namespace itself
    assert r.result("Map the settings onto the values of chart")["layout"]["values_key"] == "driverConfig", r
    first = r.result("Install or upgrade release")
    assert first["modules"] == ["kubernetes.core.k8s", "kubernetes.core.helm"], first
    assert first["report"][0].startswith("namespace dra-driver-cpu: created with "), first["report"]
    assert first["report"][1] == "release dra-driver-cpu (namespace dra-driver-cpu): installed, revision 1", first["report"]
    again = install(cluster)
    assert again.changed == 0, again.changed_tasks()
    # the re-run knows from preflight what is installed: the release stage starts no module at all
    # (no lookup, no relabel, no helm; the chart is read on every run: the values are mapped onto
    # the chart at hand, issue 11)
    release = again.result("Install or upgrade release")
    assert release["modules"] == [] and release["plan"]["helm"] == "skip", release
    assert release["report"][0] == "release dra-driver-cpu (namespace dra-driver-cpu): unchanged, revision 1"
    assert again.result("Check the cluster's prerequisites")["installed"]["release"]["status"] == "deployed"
    assert_report_as_in_readme(again.result("Report")["msg"], cluster)
    assert_short_noop_output(cluster)
    checked = run_playbook(cluster, "install", check=True)
    assert checked.rc == 0 and checked.changed == 0, checked


def test_namespace_labels_are_restored_when_changed(cluster):
    from kubernetes import client
    install(cluster)
    core = client.CoreV1Api(cluster.api_client)
    core.patch_namespace(NS, {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "baseline"}}})
    r = install(cluster)
    labels = core.read_namespace(NS).metadata.labels
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert r.changed >= 1


@pytest.mark.parametrize("extra, env, expected", [
    ({"dra_cpu_group_by": "socket"}, None, {"group_by": "socket", "cells": [(0, 10)]}),
    # the seed's variable, any case (machine grouping, which this row installed before, is refused:
    # test_machine_grouping_is_refused_before_any_change)
    ({}, {"DRA_CPU_GROUP_BY": "Socket"}, {"group_by": "socket", "cells": [(0, 10)]}),
    ({"dra_cpu_cpu_device_mode": "individual"}, None, {"mode": "individual", "cells": [(0, 4), (1, 6)]}),
    ({"dra_cpu_reserved_cpus": "0-1,6"}, None, {"group_by": "numanode", "cells": [(0, 4), (1, 5)]}),
])
def test_variants_publish_the_expected_cells(cluster, extra, env, expected):
    r = run_playbook(cluster, "install", extra_vars=extra, env=env)
    assert r.rc == 0, r
    topo = r.fact("dra_cpu_topology")
    assert cells(topo) == expected["cells"]
    for key in ("group_by", "mode"):
        if key in expected:
            assert topo[key] == expected[key]
    if extra.get("dra_cpu_cpu_device_mode") == "individual":
        # the devices are in the table (the fact has the counts): one per CPU, the first cell's 4
        rows = [line for line in r.result("Report")["msg"] if line.startswith("real01  ")]
        assert rows[0].split()[:2] == ["real01", "0"] and rows[0].split()[2].startswith("cpudev000,cpudev0"), rows


@pytest.mark.parametrize("extra, env, value", [
    ({"dra_cpu_group_by": "machine"}, None, "machine"),
    ({}, {"DRA_CPU_GROUP_BY": "MACHINE"}, "MACHINE"),
])
def test_machine_grouping_is_refused_before_any_change(cluster, extra, env, value):
    """Machine grouping serves no KubeVirt claim (upstream prepares a claim on the machine device only
    with an opaque cpuset config per request that an external scheduler adds; without it the kubelet
    fails the pod at NodePrepareResources). The validate stage refuses it, through the role variable
    and the seed's DRA_CPU_GROUP_BY, naming the variable, the value and why; nothing changes."""
    before = objects(cluster)
    r = run_playbook(cluster, "install", extra_vars=extra, env=env)
    assert r.rc == 2, r
    msg = " ".join(r.failure_messages())
    assert "dra_cpu_group_by: '%s' cannot serve a KubeVirt claim" % value in msg, msg
    assert "is targeted by 0 configurations, must be targeted by exactly 1" in msg, msg
    assert "expected one of numanode, socket (dra_cpu_group_by or DRA_CPU_GROUP_BY)" in msg, msg
    # the validate task, the first after the gate, is the one that failed
    failed = [name for name, result in r.tasks() if result.get("failed")]
    assert len(failed) == 1 and "Validate the role's variables" in failed[0], failed
    assert objects(cluster) == before


def test_uppercase_group_by_keeps_the_per_cell_sizing_check(cluster):
    """DRA_CPU_GROUP_BY=NUMANODE is accepted and normalised once (validate); the topology step reads the
    normalised setting, so the per-cell rule still runs: 3 cells expected, the node publishes 2 (the
    node total, 10 CPUs, matches either way, so a check of the total alone would pass)."""
    r = run_playbook(cluster, "install", env={"DRA_CPU_GROUP_BY": "NUMANODE"},
                     extra_vars={"dra_cpu_num_vcpu": 12, "dra_cpu_num_numa_nodes": 3})
    assert r.rc == 2, r
    assert any("node real01 publishes cells [0, 1], expected cells [0, 1, 2]" in m
               for m in r.failure_messages()), r


def test_upgrade_from_chart_02_with_new_reserved_cpus_reports_the_updated_pool(cluster):
    """The new driver's ResourceSlice controller (k8s.io/dynamic-resource-allocation syncPool)
    updates the one slice of the pool in place and keeps its generation (no slice added, one
    changed), so the generation says nothing about freshness: the answer must still be the new one."""
    remove_driver(cluster)
    old = install(cluster, dra_cpu_chart_version="0.2.0").fact("dra_cpu_topology")
    assert cells(old) == [(0, 4), (1, 6)]
    gen = old["nodes"]["real01"]["pool_generation"]
    new = install(cluster, dra_cpu_chart_version="0.3.0", dra_cpu_reserved_cpus="0-3").fact("dra_cpu_topology")
    assert cells(new) == [(0, 2), (1, 6)], "stale answer from the driver before the upgrade"
    assert new["nodes"]["real01"]["pool_generation"] == gen


def _serve(directory):
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=directory, **k)  # noqa: E731
    server = socketserver.TCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_helm_is_downloaded_verified_and_cached(cluster, tmp_path):
    remove_driver(cluster)
    cache = tmp_path / "helm-cache"
    first = install(cluster, dra_cpu_helm_cache_dir=str(cache))
    downloads = [n for n in first.changed_tasks() if "ownload" in n]
    assert downloads, first.changed_tasks()
    version = cluster.env["CLUSTER_HELM_VERSION"]
    assert (cache / version / "helm").exists() or list(cache.rglob("helm")), list(cache.rglob("*"))
    second = install(cluster, dra_cpu_helm_cache_dir=str(cache))
    assert second.changed == 0, second.changed_tasks()


def test_tampered_helm_tarball_is_refused_and_nothing_installed(cluster, tmp_path):
    remove_driver(cluster)
    version = cluster.env["CLUSTER_HELM_VERSION"]
    name = f"helm-{version}-linux-amd64.tar.gz"
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    real_sum = (cluster.env["CLUSTER_HELM_MIRROR"] + "/" + name + ".sha256sum")
    import urllib.request
    (mirror / (name + ".sha256sum")).write_bytes(urllib.request.urlopen(real_sum).read())
    payload = tmp_path / "linux-amd64"
    payload.mkdir()
    fake = payload / "helm"
    fake.write_text("#!/bin/sh\necho tampered\n")
    fake.chmod(0o755)
    with tarfile.open(mirror / name, "w:gz") as tar:
        tar.add(payload, arcname="linux-amd64")
    server = _serve(str(mirror))
    try:
        before = objects(cluster)
        cache = tmp_path / "cache"
        r = run_playbook(cluster, "install", extra_vars={
            "dra_cpu_helm_mirror": f"http://127.0.0.1:{server.server_address[1]}",
            "dra_cpu_helm_cache_dir": str(cache)})
        assert r.rc != 0, r
        assert any("checksum" in m.lower() or "sha256" in m.lower() for m in r.failure_messages()), r
        assert not [p for p in cache.rglob("helm") if p.is_file()], "tampered helm was installed"
        assert objects(cluster)["namespaces"] == before["namespaces"]
    finally:
        server.shutdown()


def test_uninstall_is_idempotent_and_spares_other_drivers(cluster):
    from kubernetes import client
    install(cluster)
    custom = client.CustomObjectsApi(cluster.api_client)
    foreign = custom.create_cluster_custom_object("resource.k8s.io", "v1", "resourceslices", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"generateName": "foreign-"},
        "spec": {"driver": FOREIGN_DRIVER, "nodeName": "real01",
                 "pool": {"name": "real01", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "dev0"}]}})
    try:
        first = uninstall(cluster)
        assert first.changed >= 1
        assert slices(cluster) == []
        assert NS not in objects(cluster)["namespaces"]
        assert [s["metadata"]["name"] for s in slices(cluster, FOREIGN_DRIVER)] == [foreign["metadata"]["name"]]
        second = uninstall(cluster)
        assert second.changed == 0, second.changed_tasks()
    finally:
        custom.delete_cluster_custom_object("resource.k8s.io", "v1", "resourceslices", foreign["metadata"]["name"])


def test_uninstall_keeps_a_namespace_it_did_not_create(cluster):
    from kubernetes import client
    remove_driver(cluster)
    core = client.CoreV1Api(cluster.api_client)
    core.create_namespace({"metadata": {"name": NS}})
    try:
        install(cluster)
        uninstall(cluster)
        assert core.read_namespace(NS).status.phase == "Active"
    finally:
        core.delete_namespace(NS)


def test_install_right_after_the_namespace_was_deleted_waits_and_recreates_it(cluster):
    import threading
    from kubernetes import client
    install(cluster)
    core = client.CoreV1Api(cluster.api_client)
    # a ConfigMap with a finalizer keeps the namespace Terminating until the test lets go (25 s after
    # the install starts, well after its preflight): on an idle machine the namespace is otherwise
    # gone before the run reads it (a fresh-clone run saw terminating False)
    hold = "dra-cpu.kubevirtci.io/test-hold"
    core.create_namespaced_config_map(NS, {"metadata": {"name": "hold", "finalizers": [hold]}})
    core.delete_namespace(NS)   # returns at once; the namespace is Terminating while its objects go
    assert core.read_namespace(NS).status.phase == "Terminating"
    release = threading.Timer(25, lambda: core.patch_namespaced_config_map(
        "hold", NS, {"metadata": {"finalizers": None}}))
    release.start()
    try:
        r = install(cluster)
    finally:
        release.join()
    assert r.result("Check the cluster's prerequisites")["installed"]["namespace"]["terminating"] is True
    assert r.result("Install or upgrade release")["plan"]["namespace"]["wait"] is True, r
    ns = core.read_namespace(NS)
    assert ns.status.phase == "Active"
    assert ns.metadata.labels["app.kubernetes.io/managed-by"] == "kubevirtci.dra_cpu"
    assert r.fact("dra_cpu_topology")["max_vm_host_cpus"] == 6


VERIFY_TASK = "Verify that the claim KubeVirt synthesizes"


def test_verify_allocates_a_claim_of_max_vm_host_cpus(cluster):
    install(cluster)
    r = run_playbook(cluster, "verify")
    assert r.rc == 0, r
    text = " ".join(str(res.get("msg", "")) for _, res in r.tasks())
    assert "real01" in text and "cpudevnuma001" in text, text
    v = r.result(VERIFY_TASK)
    assert v["passed"] is True and v["cpus"] == 6 and "the largest VM that fits" in v["sizing"], v
    assert v["vmi"]["cores"] == 6 and v["sizing"].endswith("hostCPUs = 6 vCPUs (cores 6 x sockets 1 x threads 1) = 6"), v
    # the test objects are gone
    from kubernetes import client
    assert not client.CoreV1Api(cluster.api_client).list_namespaced_pod(
        "default", field_selector="metadata.name=virt-launcher-dra-cpu-verify").items
    assert not client.CustomObjectsApi(cluster.api_client).list_namespaced_custom_object(
        "resource.k8s.io", "v1", "default", "resourceclaims")["items"]


def test_verify_pod_is_shaped_like_a_launcher_pod(cluster):
    """What virt-controller renders for a VMI (KubeVirt VEP 152 as merged): pod virt-launcher-<vmi> whose
    container compute holds claim <vmi>-cpu as pod claim cpu-dra, CPU requests = limits = hostCPUs
    (Guaranteed QoS, alpha), no tolerations unless configured; the claim's one request `cpu` asks for
    dra.cpu/cpu capacity with no count (the API server defaults it to ExactCount 1)."""
    install(cluster)
    r = run_playbook(cluster, "verify", extra_vars={"dra_cpu_verify_cpus": 3})
    assert r.rc == 0, r
    v = r.result(VERIFY_TASK)
    pod = v["pod"]
    assert pod["status"]["qosClass"] == "Guaranteed", pod["status"]
    container = pod["spec"]["containers"][0]
    assert container["name"] == "compute"
    assert container["resources"]["claims"] == [{"name": "cpu-dra", "request": "cpu"}], container
    assert container["resources"]["requests"]["cpu"] == "3" == container["resources"]["limits"]["cpu"], container
    assert pod["metadata"]["name"] == "virt-launcher-dra-cpu-verify"
    assert pod["spec"]["resourceClaims"] == [{"name": "cpu-dra", "resourceClaimName": "dra-cpu-verify-cpu"}]
    # only the API server's default NoExecute tolerations (not-ready/unreachable), nothing for NoSchedule
    assert all(t.get("effect") == "NoExecute" for t in pod["spec"].get("tolerations") or []), pod["spec"]
    request = v["claim"]["spec"]["devices"]["requests"][0]
    assert request["name"] == "cpu" and v["claim"]["metadata"]["name"] == "dra-cpu-verify-cpu"
    assert request["exactly"]["capacity"]["requests"] == {"dra.cpu/cpu": "3"}, request
    assert "selectors" not in request["exactly"] and "count" not in v["claim_manifest"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request["exactly"]["count"] == 1 and request["exactly"]["allocationMode"] == "ExactCount", request
    text = " ".join(str(res.get("msg", "")) for _, res in r.tasks())
    assert "claim dra-cpu-verify-cpu for 3 CPUs allocated" in text and "QoS Guaranteed" in text, text


def test_verify_reads_what_virt_launcher_reads_from_inside_the_container(cluster):
    """The main flavour of the driver writes KEP-5304 metadata: the container reads it at KubeVirt's path,
    with the device, its NUMA node and the allocated CPUs, and DRA_CPUSET_<claim uid>; the cpuset the
    kernel confines it to is the machine's (the node's runc maps the fake CPU ids), so it is reported and
    not compared, and the report says why."""
    install(cluster)
    r = run_playbook(cluster, "verify", extra_vars={"dra_cpu_verify_vm_cores": 2, "dra_cpu_verify_vm_sockets": 2,
                                                    "dra_cpu_verify_vm_isolate_emulator_thread": True})
    assert r.rc == 0, r
    v = r.result(VERIFY_TASK)
    assert v["cpus"] == 5 and ("hostCPUs = 4 vCPUs (cores 2 x sockets 2 x threads 1) + 1 for the isolated emulator "
                               "thread = 5") in v["sizing"], v
    out = v["readout"]
    assert out["problems"] == [], out
    meta = out["metadata"]
    assert meta["kind"] == "DeviceMetadata" and meta["api_version"] == "metadata.resource.k8s.io/v1beta1", meta
    assert meta["allocated_cpus"] == 5 and len(meta["numa_nodes"]) == 1, meta
    assert meta["devices"][0]["numa_attribute"] == "resource.kubernetes.io/numaNode", meta
    uid = v["claim"]["metadata"]["uid"]
    assert out["dra_cpuset_lines"] == [f"DRA_CPUSET_{uid}={out['dra_cpuset']}"], out
    assert out["pinned"] == out["dra_cpuset"], out
    assert out["cpuset_compared"] is False and "not CPUs of this kernel" in out["notes"][0], out
    text = " ".join(str(res.get("msg", "")) for _, res in r.tasks())
    assert "VMI default/dra-cpu-verify (dedicatedCpuPlacement), as given (dra_cpu_verify_vm_cores)" in text and \
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/dra-cpu-verify-cpu/cpu/dra.cpu-metadata.json" in text, text


def test_verify_bad_input_fails_before_any_change_naming_the_variable(cluster):
    install(cluster)
    r = run_playbook(cluster, "verify", extra_vars={"dra_cpu_verify_cpus": 2, "dra_cpu_verify_vm_cores": 2})
    assert r.rc != 0
    msg = " ".join(r.failure_messages())
    assert "dra_cpu_verify_cpus" in msg and "dra_cpu_verify_vm_cores" in msg and ": 2" in msg, msg
    r = run_playbook(cluster, "verify", extra_vars={"dra_cpu_verify_vm_sockets": "many"})
    assert r.rc != 0
    msg = " ".join(r.failure_messages())
    assert "dra_cpu_verify_vm_sockets" in msg and "many" in msg, msg
    r = run_playbook(cluster, "verify", extra_vars={"dra_cpu_verify_vm_threads": 0})
    assert r.rc != 0
    msg = " ".join(r.failure_messages())
    assert "vm_threads (dra_cpu_verify_vm_threads): 0 is below 1" in msg, msg


def test_verify_in_check_mode_creates_nothing(cluster):
    install(cluster)
    r = run_playbook(cluster, "verify", check=True)
    assert r.rc == 0, r
    text = " ".join(str(res.get("msg", "")) for _, res in r.tasks())
    assert "check mode: would create ResourceClaim default/dra-cpu-verify-cpu (request cpu, device class dra.cpu, " \
        "dra.cpu/cpu: 6, one device) and pod virt-launcher-dra-cpu-verify" in text, text


def test_name_overrides_do_not_hide_the_driver_pods(cluster):
    """nameOverride changes the pods' app.kubernetes.io/name, fullnameOverride the DaemonSet's name:
    the driver pods are still found through the release's DaemonSet and its selector."""
    from kubernetes import client
    values = {"nameOverride": "cpudrv", "fullnameOverride": "my-cpu-driver"}
    remove_driver(cluster)
    try:
        r = install(cluster, dra_cpu_chart_values=values)
        ds = client.AppsV1Api(cluster.api_client).read_namespaced_daemon_set("my-cpu-driver", NS)
        assert ds.spec.selector.match_labels["app.kubernetes.io/name"] == "cpudrv", ds.spec.selector
        topo = r.fact("dra_cpu_topology")
        assert sorted(topo["nodes"]) == ["real01"] and topo["max_vm_host_cpus"] == 6, topo
        v = run_playbook(cluster, "verify", extra_vars={"dra_cpu_chart_values": values})
        assert v.rc == 0, v
    finally:
        remove_driver(cluster)
