"""Fixtures for tests against the hermetic test cluster (tests/cluster/cluster.py).

- `cluster` (session): the cluster every test shares: one real node, `real01` (a real kubelet +
  containerd; the driver a real kubelet plugin) and no simulated one (`SESSION_NODES`, whatever the
  environment says: the tests name real01). Uses an existing one when `KUBECONFIG_EXISTING` is set
  (then nothing is started or stopped) or when the state dir already holds a healthy cluster of that
  shape (left running afterwards); otherwise `cluster.py up` with the current environment's other
  knobs, and `cluster.py down` at the end unless `CLUSTER_KEEP=true`. Its real-node binaries are
  built (or waited for) before the first test that uses it, outside that test's timeout.
- `cluster_factory` (session): start extra clusters with their own state dir and knobs; each one
  is torn down at the end of the test module that started it (`_clusters_of_the_module`), or with
  `shared=True` (several modules use it: reliability_lib) at the end of the session, or earlier with
  `.down()`. An idle cluster with one real node costs about 6.5 % of a core (kube-apiserver 2.3,
  controller-manager 1.6, kubelet 1.0, etcd 0.9, containerd 0.4: measured over 60 s, 2026-12-05),
  and a session's worth of them left up took that from the other lane of `make test`.
- the `late_build(what)` mark (late_builds.py): such tests run last, in the Makefile's build order,
  after their binary is built or waited for, outside their timeout.
- the `needs_build(what)` mark: the same wait outside the timeout, but the test keeps its place and
  its lane (the reliability suite's 'driver' cluster of real nodes: the suite's figures need its
  three files in one session).
- `--real-nodes=all|only|skip`: the tests on real nodes (late_build("real-node") or "cri-o") with the others,
  alone, or not (deselected, and pytest says how many). `make test` runs them alone in its first
  lane, before molecule, and the others in the second (clusters with real nodes run side by side;
  upstream's e2e suite, late_build("upstream"), is in the first: REAL_NODE_BUILDS).
- `--third-lane=all|only|skip`: the files of THIRD_LANE_FILES with the others, alone, or not: with
  every binary cached `make test` runs them in a third lane, after molecule (the Makefile's `test`).
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

import late_builds

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the harness's modules (chart_sources: which chart each version is) for the tests that read them
if os.path.join(REPO, "tests", "cluster") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "tests", "cluster"))
CLUSTER_PY = os.path.join(REPO, "tests", "cluster", "cluster.py")
DEFAULT_STATE = os.path.join(REPO, ".cluster")
# the session cluster's nodes: one real node (real01), no simulated one
SESSION_NODES = {"CLUSTER_NODES": "0", "CLUSTER_REAL_NODES": "1"}
# the late builds whose tests are the real-node lane's (--real-nodes): containerd's and CRI-O's nodes,
# and upstream's e2e suite (late_build("upstream"), test_upstream_e2e.py, on real nodes too, about
# 160 s). The suite moved to the other lane when the real-node lane decided the cached `make test`
# (ae07e63: 2,082 s of the 35-min budget, the other lane 1,851 s) and back when the other lane did
# (46d1063's run: 2,170 s against 1,933 s, once the install waited for the real driver pod's
# readiness probe); the two lanes run clusters with real nodes side by side
REAL_NODE_BUILDS = ("real-node", "cri-o", "upstream")
# `make test`'s third lane (--third-lane), after molecule, when every binary is cached (the Makefile's `test`):
# one lane of this suite keeps about a third of the 2 CPUs busy (31 %, /proc/stat every 5 s over
# 240 s of integration-others alone, 2026-12-06), so two lanes left the machine idle a third of the
# time and the cached run took 2,134 s (lane 1: unit 85, integration-real-nodes 1,464, molecule 585;
# lane 2: 228 s of checks, integration-others 1,722). These files take about 830 s of it: the role's
# install suite (about 460 s alone), the benchmark's smoke run (140 s) and upstream's e2e suite
# (about 214 s with its clusters). On a new machine the build behind is the critical path and takes
# every idle cycle, so there the two lanes stay (the third lane's files run in the first two). Three
# lanes, cached: 1,801 s, the lanes ending at 1,705, 1,703 and 1,801 s (54c6ef6, tests/cluster/test-cluster.md).
THIRD_LANE_FILES = ("test_role_install.py", "test_bench_smoke.py", "test_upstream_e2e.py", "test_aligned_claim.py")


def pytest_addoption(parser):
    parser.addoption("--real-nodes", choices=("all", "only", "skip"), default="all",
                     help="run the real-node tests (late_build('real-node')) with the others (all), alone (only) "
                          "or not (skip)")
    parser.addoption("--third-lane", choices=("all", "only", "skip"), default="all",
                     help="run the files of make test's third lane (THIRD_LANE_FILES) with the others (all), "
                          "alone (only) or not (skip)")


def pytest_configure(config):
    config.addinivalue_line("markers", "late_build(what): needs a binary of the Makefile's build-binaries "
                                       "built after the first cluster's; runs last, after it is built")
    config.addinivalue_line("markers", "needs_build(what): needs a binary of a later build before its timeout "
                                       "starts; keeps its place in the order")


def _late(item):
    mark = item.get_closest_marker("late_build")
    return mark.args[0] if mark else None


def _needs(item):
    """The later build `item` waits for: its late_build or needs_build mark's, else "real-node" when it
    uses the session cluster (a real node), else None."""
    mark = item.get_closest_marker("needs_build")
    return _late(item) or (mark.args[0] if mark else None) or \
        ("real-node" if "cluster" in getattr(item, "fixturenames", ()) else None)


def pytest_collection_modifyitems(config, items):
    """Tests with late_build last, in the build order; the others keep theirs (a stable sort). With
    --real-nodes=only|skip, the others or the real-node tests are deselected."""
    for option, chosen in (("--real-nodes", lambda i: _late(i) in REAL_NODE_BUILDS),
                           ("--third-lane", lambda i: os.path.basename(str(i.fspath)) in THIRD_LANE_FILES)):
        want = config.getoption(option)
        if want != "all":
            keep = [i for i in items if chosen(i) == (want == "only")]
            config.hook.pytest_deselected(items=[i for i in items if i not in keep])
            items[:] = keep
    steps = late_builds.recipe()
    items[:] = sorted(items, key=lambda i: -1 if _late(i) is None else late_builds.order(_late(i), steps))


_BUILT = {}   # what -> None (there) or the error text of its build


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Before the timeout of a test that needs a later build starts (late_build, or the session
    cluster's real node): its binary, built or waited for once a session."""
    what = _needs(item)
    if what is not None and what not in _BUILT:
        reporter = item.config.pluginmanager.get_plugin("terminalreporter")
        if reporter:
            reporter.write_line(f"[late build] {what}: asking tests/cluster/build.sh (waits for the build behind)")
        took, _BUILT[what] = late_builds.ensure(what)
        if reporter:
            reporter.write_line(f"[late build] {what}: {'ready' if _BUILT[what] is None else 'FAILED'} "
                                f"after {took:.0f} s")
    yield


def pytest_runtest_setup(item):
    what = _needs(item)
    if what is not None and _BUILT.get(what):
        pytest.fail(f"{what} could not be built: {_BUILT[what]}", pytrace=False)


def parse_env(text):
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("export "):
            continue
        key, _, value = line[len("export "):].partition("=")
        parts = shlex.split(value) if value else [""]
        env[key] = parts[0] if parts else ""
    return env


class Cluster:
    """A running test cluster: `kubeconfig`, `env` (the variables of <state>/env), `api_client`."""

    def __init__(self, state_dir, env, owned):
        self.state_dir = state_dir
        self.env = env
        self.owned = owned
        self._api_client = None

    @property
    def kubeconfig(self):
        return self.env["KUBECONFIG"]

    @property
    def chart(self):
        return self.env.get("DRA_CPU_CHART")

    @property
    def api_client(self):
        if self._api_client is None:
            from kubernetes import client, config
            cfg = client.Configuration()
            config.load_kube_config(config_file=self.kubeconfig, client_configuration=cfg)
            self._api_client = client.ApiClient(cfg)
        return self._api_client

    def run_env(self, **extra):
        """os.environ + the cluster's variables (+ extra): for subprocesses (helm, ansible-playbook)."""
        env = dict(os.environ)
        env.update(self.env)
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def cluster_py(self, *args, env=None, check=True, timeout=900):
        return cluster_py(self.state_dir, *args, env=env, check=check, timeout=timeout)

    def down(self):
        if self.owned:
            self.cluster_py("down")
            self.owned = False


def cluster_py(state_dir, *args, env=None, check=True, timeout=900):
    full = dict(os.environ if env is None else env)
    full["CLUSTER_STATE_DIR"] = state_dir
    r = subprocess.run([sys.executable, CLUSTER_PY, *args], env=full, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"cluster.py {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-4000:]}")
    return r


def start_cluster(state_dir, env=None):
    """Bring a cluster up in state_dir (idempotent). Returns (Cluster, was_already_up)."""
    already = cluster_py(state_dir, "status", env=env, check=False).returncode == 0
    r = cluster_py(state_dir, "up", env=env)
    return Cluster(state_dir, parse_env(r.stdout), owned=not already), already


@pytest.fixture(scope="session")
def cluster_cli():
    """Helpers for tests that drive cluster.py themselves: .run(state_dir, *args, env=), .parse_env(text)."""
    class CLI:
        run = staticmethod(cluster_py)
        parse_env = staticmethod(parse_env)
        path = CLUSTER_PY
    return CLI


@pytest.fixture(scope="session")
def cluster():
    existing = os.environ.get("KUBECONFIG_EXISTING")
    if existing:
        state = os.environ.get("CLUSTER_STATE_DIR", DEFAULT_STATE)
        env = {}
        if os.path.exists(os.path.join(state, "env")):
            with open(os.path.join(state, "env")) as f:
                env = parse_env(f.read())
        env["KUBECONFIG"] = existing
        yield Cluster(state, env, owned=False)
        return
    state = os.path.abspath(os.environ.get("CLUSTER_STATE_DIR", DEFAULT_STATE))
    c, _ = start_cluster(state, env={**os.environ, **SESSION_NODES})
    yield c
    if os.environ.get("CLUSTER_KEEP") != "true":
        c.down()


_FACTORY = {"started": [], "failed": False}   # cluster_factory's clusters still up: (Cluster, shared)


def _down_all(clusters):
    """`down` for each of `clusters` at once (each has its own processes, network namespaces and
    ports); a failure is printed and keeps the session's cluster logs, the others go down all the same."""
    def down(c):
        try:
            c.down()
            return None
        except Exception as e:  # noqa: BLE001 -- tear the others down all the same
            return f"cluster down failed for {c.state_dir}: {e}"

    if not clusters:
        return
    with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
        errors = [e for e in pool.map(down, clusters) if e]
    for e in errors:
        print(e, file=sys.stderr)
    _FACTORY["failed"] |= bool(errors)


@pytest.fixture(scope="session")
def cluster_factory():
    """cluster_factory(name, shared=False, **knobs) -> Cluster in its own state dir (a temp dir), down
    at the end of its test module (shared=True: of the session)."""
    base = tempfile.mkdtemp(prefix="dracpu-clusters-")

    def make(name, shared=False, **knobs):
        env = dict(os.environ)
        env.pop("CLUSTER_NODE_CIDR", None)
        env.update({k: (json.dumps(v) if isinstance(v, (dict, list)) else str(v)) for k, v in knobs.items()})
        c, _ = start_cluster(os.path.join(base, name), env=env)
        _FACTORY["started"].append((c, shared))
        return c

    yield make

    _down_all([c for c, _ in _FACTORY["started"]])
    _FACTORY["started"].clear()
    if not _FACTORY["failed"] and os.environ.get("CLUSTER_KEEP") != "true":
        shutil.rmtree(base, ignore_errors=True)   # logs of clusters that went down cleanly


@pytest.fixture(scope="module", autouse=True)
def _clusters_of_the_module():
    """Takes down, when a test module ends, the clusters cluster_factory started during it (not the
    shared ones). Autouse, so set up before and torn down after the module's own fixtures, which may
    still use their cluster in their teardown. A module whose tests the late builds split (some run
    last) gets its cluster again from its fixture: cluster.py up in the same state dir."""
    before = len(_FACTORY["started"])
    yield
    mine = [(c, shared) for c, shared in _FACTORY["started"][before:] if not shared]
    _FACTORY["started"][:] = [e for e in _FACTORY["started"] if e not in mine]
    _down_all([c for c, _ in mine])
