"""What the real-node test modules share: the binaries they need, the node, its taint, and small reads.

test_real_node.py, test_real_driver.py and test_real_faults.py each bring up a cluster with one real
node (CLUSTER_REAL_NODES=1: a real kubelet + containerd, tests/cluster/cluster_real_node.py) named
NODE, tainted TAINT_KEY:NoExecute so only pods that ask for it run there. `skip_marks()` runs a
module last, after the real-node binaries are built (late_builds.py), and skips it, saying why, only
when the run is not root; `wait` polls; the rest read the driver's
ResourceSlices, pods and the nodes' taints from the real API.
"""
import os
import time
from contextlib import contextmanager

import pytest

NODE = "real01"
TAINT_KEY = "dra-cpu.kubevirtci.io/real-node"
DRIVER_NS = "dra-driver-cpu"


def skip_marks():
    """The marks every real-node module carries: run last, after the real-node build; skipped, saying
    why, when not root."""
    return [
        pytest.mark.late_build("real-node"),
        pytest.mark.skipif(os.geteuid() != 0, reason="real nodes need root (mount/UTS namespaces, cgroups)"),
    ]


def wait(what, fn, timeout=120, interval=0.5):
    """fn()'s first truthy value within timeout seconds, else an AssertionError naming what and the last value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def apis(c):
    from kubernetes import client
    return client.CoreV1Api(c.api_client), client.CustomObjectsApi(c.api_client)


def real_slices(c):
    """The dra.cpu ResourceSlices of the real node."""
    _, custom = apis(c)
    return custom.list_cluster_custom_object(
        "resource.k8s.io", "v1", "resourceslices",
        field_selector=f"spec.driver=dra.cpu,spec.nodeName={NODE}")["items"]


def driver_pods(c):
    """The chart's driver pods on the real node."""
    core, _ = apis(c)
    return core.list_namespaced_pod(DRIVER_NS, field_selector=f"spec.nodeName={NODE}",
                                    label_selector="app.kubernetes.io/name=dra-driver-cpu").items


def is_ready(obj):
    return any(x.type == "Ready" and x.status == "True" for x in obj.status.conditions or [])


def ready_driver_pod(c):
    pods = [p for p in driver_pods(c) if not p.metadata.deletion_timestamp and is_ready(p)]
    return pods[0] if pods else None


def node_taints(c, name):
    core, _ = apis(c)
    return [c.api_client.sanitize_for_serialization(t) for t in core.read_node(name).spec.taints or []]


def set_taints(c, name, taints):
    core, _ = apis(c)
    core.patch_node(name, {"spec": {"taints": taints or None}})


@contextmanager
def only_real_node_schedulable(c, simulated="node01"):
    """The simulated node tainted NoSchedule meanwhile: a new pod (verify's) can only go to the real node."""
    taints = node_taints(c, simulated)
    set_taints(c, simulated, taints + [{"key": "dra-cpu.kubevirtci.io/test-only-real", "value": "true",
                                        "effect": "NoSchedule"}])
    try:
        yield
    finally:
        set_taints(c, simulated, taints)
