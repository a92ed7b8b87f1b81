"""PCIe roots (`dra_cpu_expose_pcie_roots`, issue 46) on real nodes with upstream's own v0.2.0 driver,
and the preflight refusal on a cluster without the `DRAListTypeAttributes` gate.

- 'pcie-roots': the test cluster's control plane at its default (1.36.3, `DRAListTypeAttributes=true`,
  tests/cluster/cluster_feature_gates.py) and two real nodes (a real kubelet + containerd each): real01
  on simulated CPU hardware (12 CPUs, cells 0-5 and 6-11: a fake sysfs tree), real02 on the machine's
  own (`hardware: machine`). Chart 0.2.0 runs upstream's v0.2.0 binary on both. Upstream v0.2.0 reads
  the PCIe roots from its container's own /sys (pkg/device/pciescan_amd64.go, docs/upstream.md
  "PCIe roots"), and the node's runc wrapper replaces only /sys/devices/system/{cpu,node} there, so on
  both nodes the driver sees this machine's real PCI roots and their `cpulistaffinity`; on real01 it
  reads those CPU ids as the fake node's. What each cell must carry is computed here from the same
  files (the machine's /sys/devices/pci*, the node's cells from the sysfs its driver reads): the
  sorted roots local to any of the cell's CPUs, none when no root is. Asserted from the real API: the
  slices' devices carry exactly that as the list attribute `resource.kubernetes.io/pcieRoot`
  (`{strings: [...]}`: the API server kept the list), the role's `dra_cpu_topology` fact and report
  table give each cell's roots, and preflight found the gate enabled. Negative control: the same
  cluster reinstalled with the setting off, no device carries the attribute and the fact has no roots.
  With every CPU a root is local to reserved, no device carries one and the install fails at the
  topology wait's timeout saying so. Last, chart 0.3.0 (the project's driver, which reads the roots
  from $HOST_ROOT/sys/devices) publishes the same roots per cell.
- 'pcie-gate-off' (`CLUSTER_FEATURE_GATES=DRAListTypeAttributes=false`, one simulated node): the
  real API server drops a ResourceSlice's list value and refuses the slice (what preflight's message
  says; the same slice without it is accepted); the install
  with the setting on is refused by preflight before any change (no namespace, no helm release),
  naming the gate, what breaks and the fix. Negative control: the same cluster with the setting off
  installs.
The 'pcie-roots' tests run in the real-node lane after the real-node build (late_builds.py); the
gate-off ones need no real node and run in the other lane.
"""
import glob
import json
import os
import re

import pytest

from ansible_run import run_playbook
from cluster_images import HOST_ROOT
from cluster_node_hw import machine_hw
from cluster_reset import helm
from real_nodes_lib import cpuset_ids, node_dir, runs_upstreams_binary, skip_marks

pytestmark = [pytest.mark.timeout(1200)]

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
GATE = "DRAListTypeAttributes"
SIMULATED, MACHINE = "real01", "real02"
PRE_TASK = "Check the cluster's prerequisites"
TOPOLOGY_TASK = "Wait until every driver node has published its CPU topology"
# upstream's own v0.2.0 (its chart's args.exposePCIeRoots), nothing reserved: every cell's CPUs are in
# its device, so the roots a cell carries are those local to any of its CPUs. No sizing check: the
# two nodes differ (the cluster's env gives the 12-CPU demo's sizing).
V02 = {"dra_cpu_chart_version": "0.2.0", "dra_cpu_reserved_cpus": ""}
NO_SIZING = {"KUBEVIRT_NUM_VCPU": "", "KUBEVIRT_NUM_NUMA_NODES": ""}
# the kernel's root bus names under /sys/devices (upstream's IsPCIeRootName: "pci%04x:%02x")
ROOT_NAME = re.compile(r"pci[0-9a-f]{4}:[0-9a-f]{2}")


def machine_pcie_roots(sys_root="/sys"):
    """{root name: the CPU ids local to it} as upstream v0.2.0 reads them (PCIeDomainsFromFS): each
    /sys/devices entry named like a PCIe root, its pci_bus/<domain:bus>/cpulistaffinity."""
    roots = {}
    for path in sorted(glob.glob(os.path.join(sys_root, "devices", "pci*"))):
        name = os.path.basename(path)
        if ROOT_NAME.fullmatch(name):
            with open(os.path.join(path, "pci_bus", name[3:], "cpulistaffinity")) as f:
                roots[name] = cpuset_ids(f.read().strip())
    return roots


def expected_roots(cells, roots):
    """{cell id (str): sorted roots local to any of its CPUs} for the cells some root is local to
    (upstream's setPCIeRootsAttribute: a device none of whose CPUs a root is local to carries none)."""
    out = {}
    for cell, cpus in cells.items():
        local = sorted(name for name, affinity in roots.items() if affinity & set(cpus))
        if local:
            out[str(cell)] = local
    return out


def node_cells(c, node):
    """The node's cells {id: CPU ids} from the sysfs its driver reads: the simulated node's fake tree
    (its HOST_ROOT under the node's directory), the machine's own for `hardware: machine`."""
    if node == MACHINE:
        return machine_hw().cells
    fake = os.path.join(node_dir(c, node), "mnt/var/lib/kubelet", os.path.relpath(HOST_ROOT, "/var/lib/kubelet"),
                        "sys/devices/system")
    return machine_hw(fake).cells


def published_roots(c, node):
    """{cell id (str): the device's pcieRoot value} for the node's grouped devices (cpudevnuma<id>)."""
    out = {}
    for s in node_slices(c, node):
        for d in s["spec"]["devices"]:
            value = (d.get("attributes") or {}).get(PCIE_ROOT)
            if value is not None:
                out[str(int(d["name"][len("cpudevnuma"):]))] = value
    return out


def node_slices(c, node):
    from kubernetes import client
    return client.CustomObjectsApi(c.api_client).list_cluster_custom_object(
        "resource.k8s.io", "v1", "resourceslices", field_selector=f"spec.driver=dra.cpu,spec.nodeName={node}")["items"]


def on_real_nodes(fn):
    """skip_marks(): after the real-node build (its lane), skipped when not root."""
    for mark in skip_marks():
        fn = mark(fn)
    return fn


def namespaces(c):
    from kubernetes import client
    return [n.metadata.name for n in client.CoreV1Api(c.api_client).list_namespace().items]


def gate_finding(r):
    [f] = [f for f in r.result(PRE_TASK).get("findings", []) if f["check"] == "list_attributes_gate"]
    return f


@pytest.fixture(scope="module")
def roots():
    found = machine_pcie_roots()
    if not any(found.values()):
        pytest.skip("this machine shows no PCIe root with CPUs local to it (/sys/devices/pci*/pci_bus/*/"
                    "cpulistaffinity): nothing for the driver to publish")
    return found


@pytest.fixture(scope="module")
def pcie_cluster(cluster_factory):
    c = cluster_factory("pcie-roots", CLUSTER_NODES=0, CLUSTER_REAL_NODES=2,
                        CLUSTER_REAL_NODE_OVERRIDES={MACHINE: {"hardware": "machine"}})
    yield c
    c.down()


@pytest.fixture(scope="module")
def installed_on(pcie_cluster, roots):
    r = run_playbook(pcie_cluster, "install", extra_vars=dict(V02, dra_cpu_expose_pcie_roots=True), env=NO_SIZING)
    assert r.rc == 0, r.failure_messages() or r
    return r


@pytest.mark.parametrize("node", [SIMULATED, MACHINE])
@on_real_nodes
def test_each_cell_carries_the_roots_local_to_its_cpus(pcie_cluster, installed_on, roots, node):
    cells = node_cells(pcie_cluster, node)
    want = expected_roots(cells, roots)
    assert want, (cells, roots)   # some root is local to some CPU of the node's (the machine's CPU ids)
    # the slices as the API server stores them: the list attribute kept (the gate on), exactly the
    # roots local to each cell's CPUs, none on a cell no root is local to
    got = published_roots(pcie_cluster, node)
    assert got == {cell: {"strings": names} for cell, names in want.items()}, (got, want, cells, roots)
    # the role's fact and report give each cell's roots as published
    fact = installed_on.fact("dra_cpu_topology")["nodes"][node]
    assert fact["cells"] == {str(i): len(cpus) for i, cpus in cells.items()}, fact
    assert fact["pcie_roots"] == want, (fact, want)
    rows = {line.split()[1]: line for line in installed_on.result(TOPOLOGY_TASK)["report"]
            if line.split()[:1] == [node] and line.split()[1] != "total"}
    assert sorted(rows) == sorted(str(i) for i in cells), rows
    for cell, line in rows.items():
        names = want.get(cell)
        if names:
            assert ("PCIe roots " if len(names) > 1 else "PCIe root ") + ",".join(names) in line, (line, names)
        else:
            assert "PCIe root" not in line, line


@on_real_nodes
def test_the_simulated_node_gives_the_root_only_to_the_cells_holding_its_cpus(pcie_cluster, installed_on, roots):
    """real01's cells are 0-5 and 6-11; a root local to the machine's CPUs 0-1 (this machine's
    pci0000:00) is local to cell 0 only, so cell 1 carries nothing: the assertion above tells cells
    apart here. Computed, so a machine whose roots reach every cell only loses this contrast."""
    want = expected_roots(node_cells(pcie_cluster, SIMULATED), roots)
    if set(want) == {"0", "1"}:
        pytest.skip(f"this machine's PCIe roots are local to CPUs of both of real01's cells: {roots}")
    assert len(want) == 1 and published_roots(pcie_cluster, SIMULATED).keys() == want.keys(), want


@on_real_nodes
def test_preflight_found_the_gate_on(installed_on):
    f = gate_finding(installed_on)
    assert (f["severity"], f["observed"]) == ("ok", "enabled (ALPHA)"), f


@on_real_nodes
def test_turned_off_no_device_carries_roots(pcie_cluster, installed_on):
    """The negative control: the same cluster, the setting off; the install waits until the new
    driver's slices carry no root (the topology stage's pool check), and the fact has none."""
    r = run_playbook(pcie_cluster, "install", extra_vars=dict(V02, dra_cpu_expose_pcie_roots=False), env=NO_SIZING)
    assert r.rc == 0, r.failure_messages() or r
    for node in (SIMULATED, MACHINE):
        assert published_roots(pcie_cluster, node) == {}, node
        fact = r.fact("dra_cpu_topology")["nodes"][node]
        assert "pcie_roots" not in fact, fact
    assert not [f for f in r.result(PRE_TASK).get("findings", []) if f["check"] == "list_attributes_gate"]


@on_real_nodes
def test_no_root_local_to_an_unreserved_cpu_the_wait_says_so(pcie_cluster, installed_on, roots):
    """The roots local only to reserved CPUs: on real01 (the driver there only: the chart's nodeSelector)
    with every CPU a root is local to reserved, no device carries one (upstream's setPCIeRootsAttribute
    sees the device's CPUs, the reserved ones left out), so the topology wait, asked for roots, never
    counts the pool and ends at its timeout saying why. Runs after the setting was turned off (the
    pool before carries none either, so the wait cannot take it)."""
    cells = node_cells(pcie_cluster, SIMULATED)
    local = set().union(*roots.values()) & set().union(*cells.values())
    if local >= set().union(*cells.values()):
        pytest.skip(f"this machine's PCIe roots are local to every CPU of real01: {roots}")
    r = run_playbook(pcie_cluster, "install", env=NO_SIZING, extra_vars=dict(
        V02, dra_cpu_expose_pcie_roots=True, dra_cpu_reserved_cpus=",".join(str(i) for i in sorted(local)),
        dra_cpu_topology_timeout=30, dra_cpu_chart_values={"nodeSelector": {"kubernetes.io/hostname": SIMULATED}},
        # real02's 2 CPUs all reserved: preflight checks every node against the one cpuset
        dra_cpu_preflight_ignore=["reserved_cpus"]))
    assert r.rc != 0, r
    msg = " ".join(r.failure_messages())
    assert SIMULATED in msg and f"no device carries {PCIE_ROOT} yet (dra_cpu_expose_pcie_roots: true)" in msg, msg
    assert "found no PCIe root local to its CPUs" in msg, msg
    assert published_roots(pcie_cluster, SIMULATED) == {}


@on_real_nodes
def test_the_projects_driver_publishes_the_same_roots(pcie_cluster, installed_on, roots):
    """Chart 0.3.0 (the project's driver, standing in for upstream main; tests/cluster/driver reads the
    roots from $HOST_ROOT/sys/devices, where the real node shows the machine's) with the setting on:
    each cell carries exactly the roots upstream's v0.2.0 gave it above, and the fact says so. Runs
    last: after the timeout case its driver ran on real01 alone, so the wait takes only new pools."""
    r = run_playbook(pcie_cluster, "install", extra_vars={"dra_cpu_reserved_cpus": "", "dra_cpu_expose_pcie_roots": True},
                     env=NO_SIZING)
    assert r.rc == 0, r.failure_messages() or r
    assert not runs_upstreams_binary(pcie_cluster)
    for node in (SIMULATED, MACHINE):
        want = expected_roots(node_cells(pcie_cluster, node), roots)
        assert published_roots(pcie_cluster, node) == {cell: {"strings": names} for cell, names in want.items()}, node
        assert r.fact("dra_cpu_topology")["nodes"][node]["pcie_roots"] == want, node


# ---- the gate off: one simulated node is enough (preflight reads the API server) ----

@pytest.fixture(scope="module")
def gate_off(cluster_factory):
    c = cluster_factory("pcie-gate-off", CLUSTER_NODES=1, CLUSTER_REAL_NODES=0,
                        CLUSTER_FEATURE_GATES=f"{GATE}=false")
    yield c
    c.down()


def probe_slice(attributes):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "pcie-probe"},
            "spec": {"driver": "probe.example.com", "allNodes": True,
                     "pool": {"name": "probe", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "dev0", "attributes": attributes}]}}


def test_gate_off_the_api_server_refuses_a_slice_with_the_list_attribute(gate_off):
    """What preflight's message says, on the real API server (1.36.3): it drops the list value
    (`strings`) and then refuses the ResourceSlice, whose attribute is left without a value; the same
    slice without the list attribute (the control) is accepted."""
    from kubernetes import client
    api = client.CustomObjectsApi(gate_off.api_client)
    gvp = ("resource.k8s.io", "v1", "resourceslices")
    kept = {"probe.example.com/kept": {"string": "yes"}}
    with pytest.raises(client.ApiException) as refused:
        api.create_cluster_custom_object(*gvp, probe_slice({**kept, PCIE_ROOT: {"strings": ["pci0000:00"]}}))
    assert refused.value.status == 422, refused.value
    assert f"attributes[{PCIE_ROOT}]" in refused.value.body and "exactly one value must be specified" in \
        refused.value.body, refused.value.body
    api.create_cluster_custom_object(*gvp, probe_slice(kept))
    try:
        attrs = api.get_cluster_custom_object(*gvp, "pcie-probe")["spec"]["devices"][0]["attributes"]
    finally:
        api.delete_cluster_custom_object(*gvp, "pcie-probe")
    assert attrs == kept, attrs


def test_gate_off_the_setting_is_refused_before_any_change(gate_off):
    r = run_playbook(gate_off, "install", extra_vars={"dra_cpu_expose_pcie_roots": True})
    assert r.rc != 0, r
    f = gate_finding(r)
    assert (f["severity"], f["observed"]) == ("error", "disabled (ALPHA)"), f
    msg = " ".join(r.failure_messages())
    assert "cluster [list_attributes_gate]" in msg, msg
    assert f"dra_cpu_expose_pcie_roots: true, but {GATE} is disabled on the API server" in msg, msg
    assert "drops the list value of resource.kubernetes.io/pcieRoot" in msg, msg
    assert "refuses the driver's ResourceSlices" in msg, msg
    assert f"--feature-gates={GATE}=true" in msg and "dra_cpu_expose_pcie_roots: false" in msg, msg
    # nothing was changed: no namespace, no helm release, no chart task ran
    assert "dra-driver-cpu" not in namespaces(gate_off)
    assert json.loads(helm(gate_off, "list", "-A", "-o", "json").stdout) == []
    assert not r.results("Install or upgrade release"), [n for n, _ in r.tasks()]


def test_gate_off_without_the_setting_installs(gate_off):
    """The negative control: the same cluster, the setting off (the default): preflight asks nothing
    of the gate and the install goes through."""
    r = run_playbook(gate_off, "install")
    assert r.rc == 0, r.failure_messages() or r
    assert not [f for f in r.result(PRE_TASK).get("findings", []) if f["check"] == "list_attributes_gate"]
    assert [x["name"] for x in json.loads(helm(gate_off, "list", "-A", "-o", "json").stdout)] == ["dra-driver-cpu"]
    assert node_slices(gate_off, "node01"), "no slices on node01"
