"""Upstream's own e2e suite (dra-driver-cpu v0.2.0, test/e2e, compiled by tests/cluster/build.sh upstream)
against a cluster this collection installed (issue 39 item 3; issue 46 item 5).

real01 is one real kubelet (containerd v2.4.2, or CRI-O v1.36.3) whose CPU hardware is the machine's
own (`hardware: machine`, cluster_node_hw.py). playbooks/install.yml installs the 0.2.0 chart the way
the suite expects upstream's own manifests (e2e_suite_test.go: DaemonSet `dracpu` in `kube-system`,
pods labelled `app=dracpu`, its first container's args carrying `--reserved-cpus`,
`--cpu-device-mode`, `--group-by`): through the role's `dra_cpu_namespace` and `dra_cpu_chart_values`
(`fullnameOverride: dracpu`, `podLabels: {app: dracpu}`), the registry's 0.2.0 chart (upstream's own
release, chart_sources.py), reserved CPUs equal to `DRACPU_E2E_RESERVED_CPUS`, grouped mode, PCIe roots
exposed (`dra_cpu_expose_pcie_roots: true`, the chart's `args.exposePCIeRoots`), the chart's default
image (upstream's v0.2.0 binary as upstream's Dockerfile lays it out, cluster_images.push_driver) and the
suite's test image upstream's (UPSTREAM_TEST_IMAGE). `DRACPU_E2E_TARGET_NODE` names real01 (else the
suite looks for kind's `node-role.kubernetes.io/worker` label).

After each install, every exclusion of upstream_e2e_exclusions.EXCLUDED is checked against the suite's
source, this machine and the installed release (upstream_e2e_facts.verdict: it stands while one of its
reasons holds in full; every fact is written to exclusions.txt beside the suite's output), then those
specs are skipped (--ginkgo.skip). Of the others (RUN) exactly `expected_passes` must pass: all of them,
but the PCIe spec when its own skip is expected (the install does not ask for PCIe roots, or the machine
has no PCIe root with CPUs affine to it; upstream's driver reads
/sys/devices/pciDDDD:BB/pci_bus/DDDD:BB/cpulistaffinity, pkg/device/pciescan_amd64.go). The suite then
succeeds, so its ReportAfterSuite "contextual logging" check runs over the driver's log: it must pass
and must have examined at least one operation ("detected operations" count > 0). The suite's output
and JSON report are kept under $ARTIFACTS/upstream-e2e/<runtime>-<driver>/ (tests/output/ when
ARTIFACTS is unset). One cluster per runtime (module-scoped fixture), down after its tests.
"""
import json
import os
import re
import subprocess
import sys

import pytest

from ansible_run import run_playbook
from real_nodes_lib import NODE, apis, cpuset_ids, wait
from cluster_reset import RELEASE, helm
from upstream_e2e_exclusions import EXCLUDED, PCIE, PORT_BUGS, RUN
from upstream_e2e_facts import Installed, Machine, expected_passes, milli, operations_examined, verdict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "cluster"))
from chart_sources import chart_file, chart_sources, upstream_module_dir  # noqa: E402
from cluster_images import (PROJECT_E2E_DRIVER_IMAGE, UPSTREAM_TEST_IMAGE,  # noqa: E402
                            push_project_main, push_upstream_test_image)

BUILD_SH = os.path.join(REPO, "tests", "cluster", "build.sh")
RESERVED = "0"
EXPOSE_PCIE_ROOTS = True   # what the install asks for (dra_cpu_expose_pcie_roots)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="real nodes need root (mount/UTS namespaces, cgroups)"),
    pytest.mark.timeout(1200),
]

RUNTIMES = [pytest.param("containerd", marks=pytest.mark.late_build("upstream"), id="containerd"),
            pytest.param("cri-o", marks=pytest.mark.late_build("upstream"), id="cri-o")]


def build(what):
    r = subprocess.run([BUILD_SH, what], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.split()


def available_cpus():
    with open("/sys/devices/system/cpu/online") as f:
        return cpuset_ids(f.read().strip()) - cpuset_ids(RESERVED)


def cgroup_v2_at_root():
    with open("/proc/self/mounts") as f:
        return any(line.split()[1:3] == ["/sys/fs/cgroup", "cgroup2"] for line in f)


def artifacts(*parts):
    base = os.environ.get("ARTIFACTS") or os.path.join(REPO, "tests", "output")
    d = os.path.join(base, "upstream-e2e", *parts)
    os.makedirs(d, exist_ok=True)
    return d


@pytest.fixture(scope="module", params=RUNTIMES)
def e2e_node(request, cluster_factory):
    """(cluster, runtime): one real node on the machine's CPU hardware and the runtime, upstream's
    images and chart pushed into its registry."""
    upstream = build("upstream")[0]
    real_node = build("real-node")
    crane, driver = real_node[4], real_node[7]
    c = cluster_factory(f"e2e-{request.param}", CLUSTER_NODES=0, CLUSTER_REAL_NODES=1,
                        CLUSTER_REAL_NODE_OVERRIDES={NODE: {"runtime": request.param, "hardware": "machine"}})
    with open(os.path.join(c.state_dir, "cluster.json")) as f:
        registry = json.load(f)["registry"]
    push_upstream_test_image(crane, registry, upstream, c.state_dir)
    push_project_main(crane, registry, driver, c.state_dir)
    yield c, request.param


def default_image():
    """The 0.2.0 chart's default image (values.yaml), upstream's binary on every real node."""
    chart = chart_sources()["0.2.0"]
    image = chart_file(chart, "values.yaml")["image"]
    return f"{image['repository']}:{image.get('tag') or chart_file(chart, 'Chart.yaml')['appVersion']}"


def install(c, image=""):
    """playbooks/install.yml as the suite expects the driver (module docstring); the sizing the
    role checks the published topology against is the machine's (its online CPUs and NUMA nodes)."""
    nodes = [d for d in os.listdir("/sys/devices/system/node") if re.fullmatch(r"node\d+", d)]
    with open("/sys/devices/system/cpu/online") as f:
        cpus = len(cpuset_ids(f.read().strip()))
    r = run_playbook(c, "install", extra_vars={
        "dra_cpu_num_vcpu": cpus, "dra_cpu_num_numa_nodes": max(len(nodes), 1),
        "dra_cpu_namespace": "kube-system", "dra_cpu_chart_version": "0.2.0", "dra_cpu_image": image,
        "dra_cpu_reserved_cpus": RESERVED, "dra_cpu_cpu_device_mode": "grouped",
        "dra_cpu_expose_pcie_roots": EXPOSE_PCIE_ROOTS,
        "dra_cpu_chart_values": {"fullnameOverride": "dracpu", "podLabels": {"app": "dracpu"}}})
    assert r.rc == 0, r.failure_messages()
    core, _ = apis(c)
    want = image or default_image()
    wait("the dracpu pod Ready with " + want, lambda: [
        p for p in core.list_namespaced_pod("kube-system", label_selector="app=dracpu").items
        if p.spec.containers[0].image == want and not p.metadata.deletion_timestamp
        and any(x.type == "Ready" and x.status == "True" for x in p.status.conditions or [])], timeout=180)


def run_suite(c, runtime, driver, also_skip=()):
    """Checks the exclusions against this install (check_exclusions), runs the compiled suite skipping
    EXCLUDED and also_skip; returns (exit code, the JSON report, output dir, the own skips expected)."""
    out = artifacts(f"{runtime}-{driver}" + ("-without-port-bugs" if also_skip else ""))
    own_skips = check_exclusions(c, out)
    suite = os.path.join(build("upstream")[0], "e2e", "e2e.test")
    skip = "|".join(re.escape(s) for s in list(EXCLUDED) + list(also_skip))
    env = dict(os.environ, KUBECONFIG=c.kubeconfig, DRACPU_E2E_TEST_IMAGE=UPSTREAM_TEST_IMAGE,
               DRACPU_E2E_RESERVED_CPUS=RESERVED, DRACPU_E2E_CPU_DEVICE_MODE="grouped",
               DRACPU_E2E_TARGET_NODE=NODE)
    with open(os.path.join(out, "suite.log"), "w") as log:
        r = subprocess.run([suite, "-test.v", "-test.timeout=15m", "--ginkgo.v", f"--ginkgo.skip={skip}",
                            f"--ginkgo.json-report={os.path.join(out, 'report.json')}"],
                           cwd=out, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=1100, check=False)
    with open(os.path.join(out, "report.json")) as f:
        [report] = json.load(f)
    return r.returncode, report, out, own_skips


def spec_name(s):
    return " ".join(list(s.get("ContainerHierarchyTexts") or []) + [s.get("LeafNodeText", "")]).strip()


def machine_pcie_roots():
    """{root: its CPUs that are available here} of the machine's PCIe roots with such CPUs, read as
    upstream's driver reads them (pkg/device/pciescan_amd64.go)."""
    roots = {}
    for name in sorted(os.listdir("/sys/devices")):
        if not re.fullmatch(r"pci[0-9a-f]{4}:[0-9a-f]{2}", name):
            continue
        try:
            with open(os.path.join("/sys/devices", name, "pci_bus", name[3:], "cpulistaffinity")) as f:
                cpus = cpuset_ids(f.read().strip()) & available_cpus()
        except OSError:
            continue
        if cpus:
            roots[name] = cpus
    return roots


def observe(c):
    """(Machine, Installed): this machine and node; the installed release's DaemonSet and values."""
    from kubernetes import client   # pylint: disable=import-outside-toplevel
    core, _ = apis(c)
    machine = Machine(len(available_cpus()), cgroup_v2_at_root(),
                      milli(core.read_node(NODE).status.allocatable["cpu"]))
    ds = client.AppsV1Api(c.api_client).read_namespaced_daemon_set("dracpu", "kube-system")
    container = ds.spec.template.spec.containers[0]
    args = dict(a[2:].split("=", 1) if "=" in a else (a[2:], "") for a in container.args or [] if a.startswith("--"))
    values = json.loads(helm(c, "get", "values", "--all", "-o", "json", "-n", "kube-system", RELEASE).stdout or "{}")
    requests = (container.resources.requests or {}) if container.resources else {}
    vargs = values.get("args") or {}
    installed = Installed(milli(requests.get("cpu")),
                          milli(((values.get("resources") or {}).get("requests") or {}).get("cpu")),
                          args.get("group-by"), vargs.get("groupBy"), "expose-pcie-roots" in args,
                          vargs.get("exposePCIeRoots"))
    return machine, installed


def check_exclusions(c, out):
    """Every exclusion's facts against the suite's source, this machine and the installed release,
    written to out/exclusions.txt; fails naming the exclusions no reason holds for. Returns what the
    install and machine say of the PCIe spec's own skip (for expected_passes)."""
    machine, installed = observe(c)
    src = upstream_module_dir()
    lines, unproven = [f"{machine}", f"{installed}"], []
    for spec, reasons in EXCLUDED.items():
        stands, said = verdict(spec, reasons, src, machine, installed)
        lines += said
        if not stands:
            unproven.append(spec)
    roots = machine_pcie_roots()
    pcie = not (EXPOSE_PCIE_ROOTS and roots), (
        f"the install asks for PCIe roots: {EXPOSE_PCIE_ROOTS} (installed --expose-pcie-roots: "
        f"{installed.expose_pcie_roots}, values args.exposePCIeRoots: {installed.values_expose_pcie_roots}); "
        f"the machine's PCIe roots with available CPUs: {roots or 'none'}")
    lines.append(f"{PCIE}: {pcie[1]}")
    with open(os.path.join(out, "exclusions.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    assert not unproven, "no reason holds for %s:\n%s" % (unproven, "\n".join(lines))
    return {PCIE: pcie}


def test_the_run_and_excluded_lists_are_the_suites_specs(e2e_node):
    """The RUN and EXCLUDED lists together are exactly the suite's specs (its dry run)."""
    suite = os.path.join(build("upstream")[0], "e2e", "e2e.test")
    out = artifacts("dry-run")
    # no cluster for the dry run: with one, its ReportAfterSuite polls a minute for a kind worker node
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG" and not k.startswith("DRACPU_E2E_")}
    subprocess.run([suite, "--ginkgo.dry-run", f"--ginkgo.json-report={out}/report.json"], cwd=out,
                   env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120, check=False)
    with open(os.path.join(out, "report.json")) as f:
        [report] = json.load(f)
    names = {spec_name(s) for s in report["SpecReports"] if s.get("LeafNodeType") == "It"}
    assert names == set(EXCLUDED) | set(RUN), names ^ (set(EXCLUDED) | set(RUN))


def states_of(report):
    return {spec_name(s): (s["State"], (s.get("Failure") or {}).get("Message", ""))
            for s in report["SpecReports"] if s.get("LeafNodeType") == "It"}


def assert_succeeded(rc, report, out, own_skips, skipped=()):
    """Exactly the expected number of RUN specs passed (expected_passes, less those of `skipped`, which
    are filtered out), a RUN spec skipped itself only with its own message where that skip is expected,
    EXCLUDED were skipped, the after-suite contextual-logging check passed having examined at least one
    operation, the suite succeeded."""
    states = states_of(report)
    run = {spec: own for spec, own in RUN.items() if spec not in skipped}
    expected, why = expected_passes(run, own_skips)
    with open(os.path.join(out, "expected.txt"), "w") as f:
        f.write("%d specs must pass:\n%s\n" % (expected, "\n".join(why)))
    for spec in skipped:
        assert states.get(spec, ("missing",))[0] == "skipped", f"{spec}: {states.get(spec)}"
    for spec, own_skip in run.items():
        state, msg = states.get(spec, ("missing", ""))
        allowed = own_skip and own_skips.get(spec, (False,))[0]
        assert state == "passed" or (allowed and state == "skipped" and own_skip in msg), \
            f"{spec}: {state} {msg} (see {out}/suite.log); {expected} must pass: {why}"
    passed = sorted(spec for spec in run if states.get(spec, ("missing",))[0] == "passed")
    assert len(passed) == expected, f"{len(passed)} passed, {expected} must: {why}; passed: {passed}"
    for spec in EXCLUDED:
        assert states.get(spec, ("missing",))[0] == "skipped", f"{spec}: {states.get(spec)}"
    after = [s for s in report["SpecReports"] if s.get("LeafNodeType") == "ReportAfterSuite"]
    assert [(s["LeafNodeText"], s["State"]) for s in after] == [("contextual logging", "passed")], after
    examined = operations_examined(after[0].get("CapturedGinkgoWriterOutput") or "")
    assert examined and examined > 0, \
        f"the contextual-logging check examined {examined} operations (none: it proved nothing; see {out}/suite.log)"
    assert report["SuiteSucceeded"] and rc == 0, f"exit {rc}, see {out}/suite.log"
    return expected, examined


def test_upstream_e2e_suite_upstreams_driver(e2e_node):
    """Upstream's v0.2.0 binary: exactly expected_passes RUN specs pass (six: PCIe roots asked for, the
    machine has one), the EXCLUDED ones are skipped by the filter, the suite succeeds and its after-suite
    contextual-logging check passes over at least one operation."""
    c, runtime = e2e_node
    install(c)   # the chart's default image: upstream's own
    assert_succeeded(*run_suite(c, runtime, "upstream"))


def test_upstream_e2e_suite_projects_driver(e2e_node):
    """The project's driver (main flavour) as the image of the 0.2.0 chart: the RUN specs as for
    upstream's binary but PORT_BUGS, each of which fails (a spec upstream's v0.2.0 passes and the port
    fails: a bug in the port, listed until fixed; one that passes must leave the list); then, with
    PORT_BUGS filtered out too, the suite succeeds and its contextual-logging check passes over at least
    one operation. With no PORT_BUGS the first run is that run."""
    c, runtime = e2e_node
    install(c, PROJECT_E2E_DRIVER_IMAGE)
    rc, report, out, own_skips = run_suite(c, runtime, "project")
    if not PORT_BUGS:
        assert_succeeded(rc, report, out, own_skips)
        return
    states = states_of(report)
    for spec, why in PORT_BUGS.items():
        assert states.get(spec, ("missing",))[0] == "failed", \
            f"{spec}: {states.get(spec)}; listed as a port bug ({why}): fixed? take it off PORT_BUGS"
    assert rc != 0 or not PORT_BUGS
    assert_succeeded(*run_suite(c, runtime, "project", also_skip=PORT_BUGS), skipped=PORT_BUGS)
