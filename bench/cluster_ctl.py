"""Test clusters for the benchmark: `tests/cluster/cluster.py up|down` with a private state dir,
per-waiter identities (ServiceAccount + FlowSchema, so the API server attributes requests), metrics,
ResourceSlice cleanup, and a fallback for missing simulated nodes."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CLUSTER_PY = os.path.join(REPO, "tests", "cluster", "cluster.py")
VENV_PY = os.path.join(REPO, ".venv", "bin", "python")
SIM = os.path.join(REPO, "tests", "cluster", "sim")
if SIM not in sys.path:
    sys.path.insert(0, SIM)

import sim_api  # noqa: E402  (the simulator's small urllib3 client: reused for raw JSON calls)
from sim_faults import POD_FAULT_ANNOTATION  # noqa: E402  (the simulator's fault annotation)

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
BENCH_NS = "dracpu-bench"
PRIORITY_LEVEL = "dracpu-bench"
WAITER_IDS = ("rule1", "rule2", "module", "module_pods", "playbook", "publisher")
DRIVER_NS = "dra-driver-cpu"
DRIVER_DS = "dra-driver-cpu"
DRIVER_LABELS = {"app.kubernetes.io/name": "dra-driver-cpu", "app.kubernetes.io/instance": "dra-driver-cpu"}


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_env(text):
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("export "):
            k, _, v = line[7:].partition("=")
            parts = shlex.split(v) if v else [""]
            env[k] = parts[0] if parts else ""
    return env


class Cluster:
    def __init__(self, state_dir, nodes, simulate_driver=False, vcpu=48, numa=8, extra=None):
        self.state_dir = state_dir
        self.nodes = nodes
        self.knobs = {
            "CLUSTER_STATE_DIR": state_dir,
            # simulated nodes only (not the default, one real node): 1,000 nodes are more than this
            # machine can run as real kubelets
            "CLUSTER_NODES": str(nodes),
            "CLUSTER_REAL_NODES": "0",
            "CLUSTER_SIMULATE_DRIVER": "true" if simulate_driver else "false",
            "KUBEVIRT_NUM_VCPU": str(vcpu),
            "KUBEVIRT_NUM_NUMA_NODES": str(numa),
        }
        self.knobs.update(extra or {})
        self.env = {}
        self.api = None
        self.up_seconds = None
        self.notes = []            # workarounds applied, for the report
        self.kubeconfigs = {}      # waiter id -> kubeconfig path
        self.node_uids = {}

    # ------------------------------------------------------------ lifecycle
    def run_env(self):
        env = dict(os.environ)
        env.update(self.knobs)
        return env

    def up(self, timeout=1800):
        log(f"cluster up: {self.knobs}")
        t = time.monotonic()
        r = subprocess.run([VENV_PY, CLUSTER_PY, "up"], env=self.run_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=timeout)
        self.up_seconds = time.monotonic() - t
        if r.returncode != 0:
            raise RuntimeError(f"cluster.py up failed ({r.returncode}) after {self.up_seconds:.0f}s:\n"
                               + r.stderr[-4000:])
        self.env = parse_env(r.stdout)
        if not self.env.get("KUBECONFIG"):
            with open(os.path.join(self.state_dir, "env")) as f:
                self.env = parse_env(f.read())
        log(f"cluster up in {self.up_seconds:.1f}s ({self.nodes} nodes)")
        if "WARNING" in r.stderr and "sim/main.py does not exist" in r.stderr:
            self.notes.append("tests/cluster/sim/main.py did not exist: the bench created the Node objects itself")
        self.api = sim_api.Api(self.env["KUBECONFIG"], qps=0, burst=0, pool_size=32)
        return self

    def down(self):
        log(f"cluster down: {self.state_dir}")
        env = dict(os.environ)
        env["CLUSTER_STATE_DIR"] = self.state_dir
        r = subprocess.run([VENV_PY, CLUSTER_PY, "down"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=600)
        if r.returncode != 0:
            log(f"WARNING: cluster.py down exited {r.returncode}: {r.stderr[-1000:]}")

    # ------------------------------------------------------------ nodes
    def list_nodes(self):
        items, _ = self.api.list_all("/api/v1/nodes")
        return items

    def ensure_nodes(self, timeout=None):
        """Wait for N Node objects; create missing ones (without leases) when no simulator runs."""
        want = [f"node{i:02d}" for i in range(1, self.nodes + 1)]
        deadline = time.monotonic() + (timeout if timeout is not None else 60 + 0.3 * self.nodes)
        sim_running = os.path.exists(os.path.join(SIM, "main.py"))
        while True:
            have = {n["metadata"]["name"]: n for n in self.list_nodes()}
            missing = [n for n in want if n not in have]
            if not missing or not sim_running or time.monotonic() > deadline:
                break
            time.sleep(2)
        if missing:
            self.notes.append(f"{len(missing)} of {self.nodes} Node objects were missing (simulator absent or "
                              "slow): the bench created them itself (no kubelet, no Lease)")
            log(f"creating {len(missing)} Node objects myself")
            for n in missing:
                self.api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                  "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
                                                  "spec": {}})
            have = {n["metadata"]["name"]: n for n in self.list_nodes()}
        extra = sorted(set(have) - set(want))
        if extra:
            self.notes.append(f"unexpected extra nodes: {extra[:5]}")
        self.node_uids = {n: have[n]["metadata"]["uid"] for n in want}
        return self.node_uids

    # ------------------------------------------------------------ the driver's DaemonSet
    def ensure_driver_daemonset(self, timeout=None):
        """The chart's DaemonSet shape (namespace, name, labels, NoSchedule toleration, container
        dracpu) without its publishing: the simulator runs the pods, the bench publishes the slices.
        The role's path (cpu_topology without `nodes`) finds its targets from these pods; rule 2 ends
        with `kubectl rollout status` on it. Returns the seconds until every pod was ready."""
        t = time.monotonic()
        self._apply("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": DRIVER_NS, "labels": {f"pod-security.kubernetes.io/{m}": "privileged"
                                          for m in ("enforce", "warn", "audit")}}})
        self._apply(f"/apis/apps/v1/namespaces/{DRIVER_NS}/daemonsets", {
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": DRIVER_DS, "namespace": DRIVER_NS, "labels": dict(DRIVER_LABELS)},
            "spec": {"selector": {"matchLabels": dict(DRIVER_LABELS)},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
                     "template": {"metadata": {"labels": dict(DRIVER_LABELS)}, "spec": {
                         "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
                         "containers": [{"name": "dracpu", "image": "registry.k8s.io/dra-driver-cpu/dra-driver-cpu:bench",
                                         "args": ["--bench-no-publishing"]}]}}}})
        self.wait_rollout(timeout if timeout is not None else 120 + 0.5 * self.nodes)
        return round(time.monotonic() - t, 1)

    def wait_rollout(self, timeout):
        """Until the DaemonSet has a ready pod on every node (numberReady == desired == N)."""
        deadline = time.monotonic() + timeout
        st = {}
        while time.monotonic() < deadline:
            ds = self.api.get(f"/apis/apps/v1/namespaces/{DRIVER_NS}/daemonsets/{DRIVER_DS}")
            st = ds.get("status") or {}
            if st.get("desiredNumberScheduled") == self.nodes and st.get("numberReady") == self.nodes \
                    and st.get("observedGeneration") == ds["metadata"].get("generation"):
                return
            time.sleep(1)
        raise RuntimeError(f"the driver DaemonSet did not become ready on {self.nodes} nodes: {st}")

    def driver_pod_never_starts(self, node, never=True):
        """Simulator fault: `node`'s driver pod stays ContainerCreating (never=True), or runs again.
        The node's current pod is deleted so that the DaemonSet's replacement gets the fault."""
        self.api.patch(f"/api/v1/nodes/{node}",
                       {"metadata": {"annotations": {POD_FAULT_ANNOTATION: "never" if never else None}}})
        if not never:
            return
        sel = ",".join(f"{k}={v}" for k, v in DRIVER_LABELS.items())
        pods, _ = self.api.list_all(f"/api/v1/namespaces/{DRIVER_NS}/pods",
                                    query=[("labelSelector", sel), ("fieldSelector", f"spec.nodeName={node}")])
        for pod in pods:
            self.api.delete(f"/api/v1/namespaces/{DRIVER_NS}/pods/{pod['metadata']['name']}",
                            body={"gracePeriodSeconds": 0})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pods, _ = self.api.list_all(f"/api/v1/namespaces/{DRIVER_NS}/pods",
                                        query=[("labelSelector", sel), ("fieldSelector", f"spec.nodeName={node}")])
            if [p for p in pods if not (p["metadata"].get("deletionTimestamp"))]:
                return
            time.sleep(0.5)
        raise RuntimeError(f"no replacement driver pod on {node}")

    # ------------------------------------------------------------ identities
    def setup_identities(self, workdir):
        """A ServiceAccount per waiter (cluster-admin), a kubeconfig with its token, and a FlowSchema
        matching it, so apiserver_flowcontrol_dispatched_requests_total{flow_schema=...} counts its
        requests (apiserver_request_total has no identity label)."""
        api = self.api
        os.makedirs(workdir, exist_ok=True)
        try:
            api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": BENCH_NS}})
        except sim_api.ApiError as e:
            if e.status != 409:
                raise
        plc = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
               "metadata": {"name": PRIORITY_LEVEL},
               "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 100, "lendablePercent": 0,
                                                       "limitResponse": {"type": "Queue", "queuing": {
                                                           "queues": 16, "handSize": 4, "queueLengthLimit": 100}}}}}
        self._apply("/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", plc)
        with open(self.env["KUBECONFIG"]) as f:
            import yaml
            admin_kc = yaml.safe_load(f)
        cluster = admin_kc["clusters"][0]["cluster"]
        for wid in WAITER_IDS:
            sa = f"bench-{wid.replace('_', '-')}"        # object names: no underscores
            self._apply(f"/api/v1/namespaces/{BENCH_NS}/serviceaccounts",
                        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": BENCH_NS}})
            self._apply("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                         "metadata": {"name": flow_name(wid)},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                         "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": BENCH_NS}]})
            self._apply("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
                        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                         "metadata": {"name": flow_name(wid)},
                         "spec": {"matchingPrecedence": 700, "priorityLevelConfiguration": {"name": PRIORITY_LEVEL},
                                  "distinguisherMethod": {"type": "ByUser"},
                                  "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {
                                      "name": sa, "namespace": BENCH_NS}}],
                                      "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                         "clusterScope": True, "namespaces": ["*"]}],
                                      "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}})
            tok = api.create(f"/api/v1/namespaces/{BENCH_NS}/serviceaccounts/{sa}/token",
                             {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                              "spec": {"expirationSeconds": 86400}})["status"]["token"]
            kc = {"apiVersion": "v1", "kind": "Config", "current-context": wid,
                  "clusters": [{"name": "bench", "cluster": cluster}],
                  "users": [{"name": sa, "user": {"token": tok}}],
                  "contexts": [{"name": wid, "context": {"cluster": "bench", "user": sa}}]}
            path = os.path.join(workdir, f"{wid}.kubeconfig")
            with open(path, "w") as f:
                import yaml
                yaml.safe_dump(kc, f)
            os.chmod(path, 0o600)
            self.kubeconfigs[wid] = path
        # the FlowSchemas take effect asynchronously: wait until a request shows up under ours
        pub = sim_api.Api(self.kubeconfigs["publisher"], qps=0, burst=0)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pub.get("/api/v1/nodes", query={"limit": "1"})
            if self.flow_counts().get("dracpu-bench-publisher", 0) > 0:
                return
            time.sleep(0.5)
        self.notes.append("FlowSchema attribution did not become visible within 30 s")

    def _apply(self, collection, obj):
        try:
            self.api.create(collection, obj)
        except sim_api.ApiError as e:
            if e.status != 409:
                raise

    # ------------------------------------------------------------ metrics
    def metrics_text(self):
        r = self.api.pool.request("GET", self.api.url("/metrics"), headers=dict(self.api.headers, Accept="text/plain"),
                                  preload_content=True)
        return r.data.decode()

    _LINE = re.compile(r'^(\w+)\{([^}]*)\}\s+([0-9.eE+-]+)$')
    _LBL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

    def parse_metric(self, text, name):
        out = []
        for line in text.splitlines():
            if not line.startswith(name + "{"):
                continue
            m = self._LINE.match(line)
            if m:
                out.append((dict(self._LBL.findall(m.group(2))), float(m.group(3))))
        return out

    def flow_counts(self, text=None):
        text = text or self.metrics_text()
        counts = {}
        for labels, v in self.parse_metric(text, "apiserver_flowcontrol_dispatched_requests_total"):
            fs = labels.get("flow_schema", "")
            counts[fs] = counts.get(fs, 0) + v
        return counts

    def request_totals(self, text=None):
        """apiserver_request_total summed per (verb, resource)."""
        text = text or self.metrics_text()
        out = {}
        for labels, v in self.parse_metric(text, "apiserver_request_total"):
            k = (labels.get("verb", ""), labels.get("resource", "") or "(non-resource)")
            out[k] = out.get(k, 0) + v
        return out

    def snapshot(self):
        text = self.metrics_text()
        return {"flows": self.flow_counts(text), "requests": self.request_totals(text)}

    # ------------------------------------------------------------ slices
    def delete_all_slices(self, driver="dra.cpu", timeout=600):
        """deletecollection, then (a loaded API server aborts a big deletecollection after its 60 s request
        timeout) delete whatever is left one by one, in parallel, until nothing is left."""
        from concurrent.futures import ThreadPoolExecutor
        sel = {"fieldSelector": f"spec.driver={driver}"}
        try:
            self.api.req("DELETE", SLICES, query=sel, timeout=120)
        except Exception as e:  # noqa: BLE001
            log(f"deletecollection: {str(e)[:200]}; deleting one by one")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            items, _ = self.api.list_all(SLICES, query=list(sel.items()))
            if not items:
                return
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda o: self.api.delete(f"{SLICES}/{o['metadata']['name']}"), items))
            time.sleep(0.5)
        raise RuntimeError(f"ResourceSlices still present {timeout} s after deletecollection")


def flow_name(wid):
    """The FlowSchema (and ClusterRoleBinding) of a waiter."""
    return "dracpu-bench-" + wid.replace("_", "-")


def delta(after, before):
    out = {}
    for k, v in after.items():
        d = v - before.get(k, 0)
        if d:
            out[k] = d
    return out


def read_requests(d):
    """Sum of the non-mutating requests (GET/LIST/WATCH) of a request_totals delta."""
    return sum(v for (verb, _), v in d.items() if verb in ("GET", "LIST", "WATCH"))


def dump(obj):
    return json.dumps(obj, sort_keys=True, default=str)
