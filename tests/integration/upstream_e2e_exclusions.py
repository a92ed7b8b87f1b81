"""The specs of upstream's e2e suite (dra-driver-cpu v0.2.0, test/e2e) that are not run here, each with
its reason, and the facts each reason rests on; the one list of them (test_upstream_e2e.py passes it to
the suite as --ginkgo.skip and checks every fact before it runs the suite).

Here is a one-real-node cluster whose CPU hardware is the machine's own (2 CPUs on the test machine),
CPU 0 reserved, grouped by NUMA node, on cgroup v1 hierarchies (the real nodes need them). A spec is
excluded only when one of these facts, read from the suite's own source or from this machine and
cluster, means it cannot pass here whatever the driver does:
- ("source", path, regex): the suite's source (path inside the module) says so (a CPU need, a skip
  message, the cgroup v2 read);
- ("available_cpus_below", n): the machine's online CPUs minus the reserved ones are fewer than n;
- ("allocatable_millicpu_below", m): the node's allocatable CPU minus the chart's 100m request is
  below m millicpus (the pods of the spec cannot all be scheduled);
- ("cgroup_v1",): the host's /sys/fs/cgroup is not cgroup2, where upstream's dracputester reads
  /sys/fs/cgroup/cpuset.cpus.effective only (test/image/dracputester/app.go).
Every other spec runs and must pass (or skip itself with the message RUN names).
"""

# the dracputester's cgroup v2 read (every spec that reads a container's CPUs through it)
TESTER_READS_CGROUP_V2 = [("source", "test/image/dracputester/app.go", r'cpusetFile\s*=\s*"cpuset\.cpus\.effective"'),
                          ("cgroup_v1",)]
_CA = "CPU Allocation when setting resource claims for exclusive CPU allocation "
_CA_NEEDS_3 = [("source", "test/e2e/cpu_assignment_test.go", r"minCPUsAvailableForPodAllocation\s*=\s*3"),
               ("source", "test/e2e/cpu_assignment_test.go",
                r"exclusive allocation tests require at least %d cpus in the worker node"),
               ("available_cpus_below", 3)]
_SHARING = [("source", "test/e2e/sharing_test.go",
             r"(?s)(v1\.ResourceCPU:\s+\*resource\.NewQuantity\(1, resource\.DecimalSI\).*){2}"),
            ("allocatable_millicpu_below", 2000)]

EXCLUDED = {
    _CA + "should allocate exclusive CPUs and remove from the shared pool":
        ("skips itself below 3 available CPUs (its context's BeforeEach); reads CPUs through dracputester",
         _CA_NEEDS_3 + TESTER_READS_CGROUP_V2),
    _CA + "should allocate non-overlapping CPUs for multiple requests in the same grouped claim":
        ("skips itself below 3 available CPUs (its context's BeforeEach); reads CPUs through dracputester",
         _CA_NEEDS_3 + TESTER_READS_CGROUP_V2),
    _CA + "should allocate exclusive CPUs using opaque config for machine grouping mode":
        ("skips itself below 3 available CPUs (its context's BeforeEach) and outside machine grouping",
         _CA_NEEDS_3 + [("source", "test/e2e/cpu_assignment_test.go",
                         r"this test only applies to grouped CPU device mode with machine grouping")]),
    "Claim sharing when sharing a CPU claim should fail to run pods which share a claim":
        ("two 1-CPU pods beside the driver's 100m: the second is never scheduled, so never fails to be created",
         _SHARING),
    "Claim sharing when sharing a CPU claim should fail to run a pod with multiple containers which share a claim":
        ("two 1-CPU containers in one pod beside the driver's 100m: the pod is never scheduled",
         _SHARING),
    "NRI Reconciliation on Restart should recover shared pool mask and preserve exclusive mask after restart":
        ("a 2-CPU claim (one CPU is available here), read through dracputester",
         [("source", "test/e2e/nri_reconciliation_test.go",
           r"makeTesterPodWithExclusiveCPUClaim\([^)]*createdClaimTemplate\.Name, 2, targetNode\.Name\)"),
          ("available_cpus_below", 2)] + TESTER_READS_CGROUP_V2),
}

# the specs that run: each must pass, or skip itself with the given message (upstream's own skip)
RUN = {
    "Resource Attributes should have devices in ResourceSlices": None,
    "Resource Attributes should have correct base attributes on every device": None,
    "Resource Attributes should have valid PCIe root attributes when present": "No PCIe roots reported on this system",
    "dra-driver-cpu HTTP health endpoints when the driver DaemonSet is deployed and running "
    "should return HTTP 200 from /healthz on each driver pod": None,
    "dra-driver-cpu HTTP health endpoints when the driver DaemonSet is deployed and running "
    "should mark every driver container as Ready (readiness probe passes)": None,
    "dracpu-gatherinfo when the driver DaemonSet is deployed and running should run from each driver pod": None,
}

# specs of RUN that upstream's v0.2.0 passes here and the project's driver (tests/cluster/driver, main
# flavour) fails: bugs in the port, each with what is missing; test_upstream_e2e.py asserts each still
# fails (a fixed one must leave the list) and runs the suite once more without them. Empty: none known
# (the last one, gatherinfo, is ported: tests/cluster/driver/internal/gatherinfo)
PORT_BUGS: dict[str, str] = {}
