"""Preflight on a real kubelet started with cpuManagerPolicy static (CLUSTER_REAL_NODES=1,
CLUSTER_REAL_NODE_OVERRIDES: real01 static, reservedSystemCPUs 0 as the static policy needs).

The driver would run there (the chart's tolerations are widened to the real node's NoExecute taint),
so preflight must read the policy from that kubelet's own /configz (through the API server's node
proxy) and stop the install before anything is written, naming the node, the check and the fix.
Upstream: a static CPU manager and the driver conflict (docs/upstream.md,
"Prerequisites and limits"). Runs last, after the real-node binaries are built.
"""
import json

import pytest
from kubernetes import client

from ansible_run import run_playbook
from real_nodes_lib import NODE, TAINT_KEY, apis, skip_marks

pytestmark = skip_marks() + [pytest.mark.timeout(900)]

EVERY_NODE = {"dra_cpu_chart_values": {"tolerations": [{"key": TAINT_KEY, "operator": "Exists"},
                                                       {"operator": "Exists", "effect": "NoSchedule"}]}}


@pytest.fixture(scope="module")
def static(cluster_factory):
    # real01 beside a simulated node01 (not the default: one real node alone), the shape this module
    # was written for: real01 carries the real-node NoExecute taint, so the driver reaches it only
    # through the widened tolerations
    c = cluster_factory("real-static", CLUSTER_NODES=1, CLUSTER_REAL_NODES=1,
                        CLUSTER_REAL_NODE_OVERRIDES=json.dumps({NODE: {"cpu_manager_policy": "static"}}))
    yield c
    c.down()   # at the module's end: its kubelet, containerd and pods leave the CPUs to the next modules


def test_the_real_kubelet_says_static(static):
    core, _ = apis(static)
    raw = core.connect_get_node_proxy_with_path(NODE, "configz", _preload_content=False).data
    config = json.loads(raw)["kubeletconfig"]
    assert config["cpuManagerPolicy"] == "static" and config["reservedSystemCPUs"] == "0", config


def test_preflight_stops_the_install_naming_the_static_real_node(static):
    r = run_playbook(static, "install", extra_vars=EVERY_NODE)
    assert r.rc != 0, r
    pre = r.result("Check the cluster's prerequisites")
    findings = [f for f in pre["findings"] if f["check"] == "cpu_manager_policy" and f["node"] == NODE]
    assert [f["severity"] for f in findings] == ["error"], pre["findings"]
    assert findings[0]["message"] == (f"node {NODE}: kubelet cpuManagerPolicy is static; the CPU manager and "
                                      "the CPU DRA driver cannot share a node"), findings
    assert "cpuManagerPolicy none" in findings[0]["fix"], findings
    msg = " ".join(r.failure_messages())
    assert NODE in msg and "cpu_manager_policy" in msg and "static" in msg, msg
    names = [n.metadata.name for n in client.CoreV1Api(static.api_client).list_namespace().items]
    assert "dra-driver-cpu" not in names   # nothing written
