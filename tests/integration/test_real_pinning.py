"""Real pinning, proven in the suite (issue 37 item 4): a real node whose CPU hardware is the machine's
own, on containerd and on CRI-O.

real01 is a real kubelet with containerd v2.4.2 or CRI-O v1.36.3 and `hardware: machine`
(tests/cluster/cluster_node_hw.py): no simulated topology, no CPU-id mapping in the runc wrapper, the
driver reads the machine's own sysfs (the project's driver at its HOST_ROOT, upstream's own v0.2.0, which
chart 0.2.0 runs, at /sys). So a container's own Cpus_allowed_list is what
the driver pinned it to through NRI, and nothing here is the harness's mapping. The role installs the
chart with nothing reserved (`dra_cpu_reserved_cpus: ''`: on a 2-CPU machine a 1-CPU claim leaves one
CPU to the shared pool), grouped by NUMA node. Asserted, from the real API, the containers' own
/proc/self/status and verify's registered result:
- the node is the machine: its capacity is the machine's online CPUs, the driver publishes one device
  per cell holding the cell's CPUs (nothing reserved);
- verify (`dra_cpu_verify_cpus=1`) compares the container's CPUs with DRA_CPUSET_<claim uid> and they
  match: the container runs on exactly the claimed CPU;
- a claim-less container on the same node, judged from its own Cpus_allowed_list (printed every
  second to its log), runs off the claimed CPUs while the claim's pod runs and gets them back after
  it is gone, when upstream's driver gives them back (per driver flavour; test_shared_pool).
One cluster per runtime (a module-scoped fixture, its runtime the parameter), down after the module's
tests on it; the CRI-O one runs after `build.sh cri-o` (late_builds.py), both in the real-node lane.
"""
import glob
import os
import time

import pytest

from ansible_run import run_playbook
from real_nodes_lib import (DRIVER_NS, NODE, apis, cdi_specs_naming, cpuset_fmt, cpuset_ids, driver_pods,
                            process_with_env, ready_driver_pod, real_slices, runs_upstreams_binary, wait)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="real nodes need root (mount/UTS namespaces, cgroups)"),
    pytest.mark.timeout(900),
]

RUNTIMES = [pytest.param("containerd", marks=pytest.mark.late_build("real-node"), id="containerd"),
            pytest.param("cri-o", marks=pytest.mark.late_build("cri-o"), id="cri-o")]
BUSYBOX = "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"


def machine_cpus():
    with open("/sys/devices/system/cpu/online") as f:
        return cpuset_ids(f.read().strip())


def machine_cells():
    """The machine's NUMA cells that hold an online CPU (one when the kernel shows none)."""
    cells = 0
    for d in glob.glob("/sys/devices/system/node/node[0-9]*"):
        with open(os.path.join(d, "cpulist")) as f:
            text = f.read().strip()
        cells += bool(text and cpuset_ids(text) & machine_cpus())
    return cells or 1


# nothing reserved (on a 2-CPU machine a 1-CPU claim leaves one CPU to the shared pool), and the
# machine's own size for the role's topology check (the cluster's env says the 12-CPU demo's)
NOTHING_RESERVED = {"dra_cpu_reserved_cpus": "", "dra_cpu_num_vcpu": len(machine_cpus()),
                    "dra_cpu_num_numa_nodes": machine_cells()}


@pytest.fixture(scope="module", params=RUNTIMES)
def machine_node(request, cluster_factory):
    """A cluster of one real node on the machine's CPU hardware and the given runtime, the driver
    installed by the role (chart 0.3.0, upstream main's flavour) with nothing reserved."""
    c = cluster_factory(f"pin-{request.param}", CLUSTER_NODES=0, CLUSTER_REAL_NODES=1,
                        CLUSTER_REAL_NODE_OVERRIDES={NODE: {"runtime": request.param, "hardware": "machine"}})
    r = run_playbook(c, "install", extra_vars=NOTHING_RESERVED)
    assert r.rc == 0, r.failure_messages() or r
    yield c
    c.down()


def test_verify_sees_the_container_on_exactly_the_claimed_cpus(machine_node):
    core, _ = apis(machine_node)
    cpus = machine_cpus()
    assert core.read_node(NODE).status.capacity["cpu"] == str(len(cpus))
    devices = [d for s in real_slices(machine_node) for d in s["spec"]["devices"]]
    # grouped by numanode, nothing reserved: one device per cell, every online CPU in one (dra.cpu/cpu capacity)
    assert len(devices) == machine_cells(), devices
    assert sum(int(d["capacity"]["dra.cpu/cpu"]["value"]) for d in devices) == len(cpus), devices
    r = run_playbook(machine_node, "verify", extra_vars={"dra_cpu_verify_cpus": 1})
    assert r.rc == 0, r.failure_messages() or r
    [res] = [res for _, res in r.tasks() if "readout" in res]
    out = res["readout"]
    assert out["problems"] == [] and out["cpuset_compared"] is True, out
    assert len(cpuset_ids(out["dra_cpuset"])) == 1 and cpuset_ids(out["dra_cpuset"]) <= cpus, out
    assert out["container_cpus"] == out["dra_cpuset"] == out["cgroup_cpus"], out
    # the claim's CPU lies in the allocated device's NUMA node as the container's own sysfs groups it
    assert out["placement"]["group"] == "numanode" and \
        cpuset_ids(out["dra_cpuset"]) <= cpuset_ids(out["placement"]["kernel_cpus"]), out
    text = " ".join(str(line) for line in res["report"])
    assert f"in compute: runs on exactly the claimed CPUs {out['dra_cpuset']} (Cpus_allowed_list; cgroup " \
        f"{out['dra_cpuset']}) inside NUMA node {out['placement']['id']}" in text, text


def shared_pod(name):
    """A claim-less pod on NODE that prints its own Cpus_allowed_list every second."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE}, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "shared", "image": BUSYBOX, "command": [
                         "sh", "-c", "while :; do grep Cpus_allowed_list /proc/self/status; sleep 1; done"]}]}}


def claim_pod(name):
    """A Guaranteed pod on NODE whose one container holds the 1-CPU claim `name` and sleeps."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE}, "terminationGracePeriodSeconds": 1,
                     "resourceClaims": [{"name": "cpu", "resourceClaimName": name}],
                     "containers": [{"name": "sleep", "image": BUSYBOX, "command": ["sleep", "3600"],
                                     "resources": {"requests": {"cpu": "1", "memory": "32Mi"},
                                                   "limits": {"cpu": "1", "memory": "32Mi"},
                                                   "claims": [{"name": "cpu"}]}}]}}


def allowed_since(c, pod, t0):
    """The Cpus_allowed_list lines the pod printed after time t0 (epoch seconds), as CPU id sets."""
    from kubernetes.client.exceptions import ApiException
    core, _ = apis(c)
    try:
        log = core.read_namespaced_pod_log(pod, "default", timestamps=True, tail_lines=30)
    except ApiException as e:   # 400 while the container is still being created, 404 before the pod is seen
        if e.status not in (400, 404):
            raise
        return []
    out = []
    # the client gives None for an empty log (a container that printed nothing yet)
    for line in (log or "").splitlines():
        stamp, _, text = line.partition(" ")
        if text.startswith("Cpus_allowed_list:") and _epoch(stamp) > t0:
            out.append(cpuset_ids(text.split()[1]))
    return out


def _epoch(stamp):
    """An RFC 3339 log timestamp (2026-12-06T07:30:01.123456789Z) as epoch seconds."""
    from datetime import datetime, timezone
    whole, _, frac = stamp.rstrip("Z").partition(".")
    return datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp() + \
        float("0." + (frac or "0"))


def latest_is(c, pod, want, t0):
    """The pod's newest line printed after t0, when it is the CPU set `want`."""
    lines = allowed_since(c, pod, t0)
    return lines[-1] if lines and lines[-1] == want else None


@pytest.mark.parametrize("flavour", ["main", "v0.2"])
def test_shared_pool(machine_node, flavour):
    """A claim-less container is kept off a claim's CPUs while the claim's pod runs and gets them
    back afterwards, seen from its own Cpus_allowed_list, when upstream's driver gives them back:
    - both flavours: a claim container's CreateContainer re-pins every shared container to the
      available CPUs minus the prepared ones (upstream nri_hooks.go CreateContainer ->
      getSharedContainerUpdates, main and v0.2.0);
    - main (chart 0.3.0): StopContainer "removes runtime container state without changing DRA-owned
      allocations" and UnprepareResourceClaims releases the CPUs but updates no running container
      (dra_hooks.go unprepareResourceClaim: "TODO(#279): Update existing shared containers here ...
      each container picks up the expanded cpuset on its next CreateContainer or Synchronize"): the
      container stays off them after the pod and claim are gone, and a driver restart (its NRI
      Synchronize re-pins every shared container to the shared CPUs, nri_hooks.go Synchronize) gives
      them back;
    - v0.2 (chart 0.2.0, upstream's own v0.2.0 binary): StopContainer releases the claim's CPUs at once and updates the shared
      containers (v0.2.0 nri_hooks.go StopContainer: "This early release in StopContainer is a
      workaround ..."): back as soon as the claim's container stops, before the claim is deleted.
    The v0.2 case runs last and reinstalls chart 0.2.0 (the cluster goes down after it)."""
    core, custom = apis(machine_node)
    cpus = machine_cpus()
    if len(cpus) < 2:
        pytest.skip("one online CPU: a 1-CPU claim would take the whole shared pool, nothing left to watch")
    if flavour == "v0.2":
        r = run_playbook(machine_node, "install", extra_vars=dict(NOTHING_RESERVED, dra_cpu_chart_version="0.2.0"))
        assert r.rc == 0, r.failure_messages() or r
        wait("the v0.2.0 driver pod Ready (and no other)", lambda: [
            p.spec.containers[0].image.rsplit(":", 1)[1] for p in driver_pods(machine_node)] == ["v0.2.0"]
            and ready_driver_pod(machine_node), timeout=120)
        assert runs_upstreams_binary(machine_node)   # upstream's own, not a stand-in (issue 39)
    shared, name = f"pin-shared-{flavour.replace('.', '')}", f"pin-claim-{flavour.replace('.', '')}"
    t0 = time.time()
    core.create_namespaced_pod("default", shared_pod(shared))
    # nothing claimed: the shared pool is every available CPU (nothing reserved)
    wait(f"{shared} on CPUs {cpuset_fmt(cpus)}", lambda: latest_is(machine_node, shared, cpus, t0), timeout=90)

    custom.create_namespaced_custom_object("resource.k8s.io", "v1", "default", "resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "cpu", "exactly": {
            "deviceClassName": "dra.cpu", "capacity": {"requests": {"dra.cpu/cpu": "1"}}}}]}}})
    core.create_namespaced_pod("default", claim_pod(name))
    wait(f"{name} Running", lambda: core.read_namespaced_pod(name, "default").status.phase == "Running", timeout=120)
    uid = custom.get_namespaced_custom_object("resource.k8s.io", "v1", "default", "resourceclaims",
                                              name)["metadata"]["uid"]
    pid, value = process_with_env(f"DRA_CPUSET_{uid}=")
    claimed = cpuset_ids(value)
    assert len(claimed) == 1 and claimed < cpus, value
    with open(f"/proc/{pid}/status") as f:   # the claim's container runs on the claimed CPU
        assert [line.split()[1] for line in f if line.startswith("Cpus_allowed_list:")] == [value]
    t1 = time.time()
    wait(f"{shared} off the claimed CPU {value}", lambda: latest_is(machine_node, shared, cpus - claimed, t1), timeout=30)

    core.delete_namespaced_pod(name, "default")
    wait(f"{name} gone", lambda: not core.list_namespaced_pod(
        "default", field_selector=f"metadata.name={name}").items, timeout=60)
    if flavour == "v0.2":
        t2 = time.time()
        wait(f"{shared} back on {cpuset_fmt(cpus)} (StopContainer)", lambda: latest_is(machine_node, shared, cpus, t2),
             timeout=30)
    wait("the claim's CDI specs removed (NodeUnprepareResources)", lambda: not cdi_specs_naming(machine_node, uid),
         timeout=30)
    custom.delete_namespaced_custom_object("resource.k8s.io", "v1", "default", "resourceclaims", name)
    if flavour == "main":
        t2 = time.time()
        time.sleep(8)
        kept = allowed_since(machine_node, shared, t2)
        # still printing, every line still off the claimed CPU: nothing updated it at Unprepare
        assert len(kept) >= 3 and all(s == cpus - claimed for s in kept), (kept, value)
        old = ready_driver_pod(machine_node)
        core.delete_namespaced_pod(old.metadata.name, DRIVER_NS)
        wait("a new driver pod Ready", lambda: (lambda p: p and p.metadata.uid != old.metadata.uid)(
            ready_driver_pod(machine_node)), timeout=120)
        t3 = time.time()
        wait(f"{shared} back on {cpuset_fmt(cpus)} (Synchronize)", lambda: latest_is(machine_node, shared, cpus, t3),
             timeout=60)
    core.delete_namespaced_pod(shared, "default")
