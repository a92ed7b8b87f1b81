"""Put a test cluster back to "dra-driver-cpu is not installed" without running the role.

Owns `helm()` (the cluster's own helm binary, with its config, cache and data under the cluster's
state dir) and `remove_driver()`, the set-up step of tests that need an empty cluster but do not
test the uninstall itself. The role's uninstall (playbooks/uninstall.yml) waits, as it must, until
the kubelet wipes the driver's ResourceSlices, about 30 s after the plugin unregisters (the
kubelet's wiping delay), polling with `kubernetes.core.k8s_info`: about 45 s and 25 CPU-seconds per
uninstall, measured. Here the same end state takes about 7 s (two helm calls and a few API calls): `helm
uninstall`, the driver pods gone (the kubelet has stopped the plugin), then the slices deleted
(what the kubelet's wipe would do later) and the namespace deleted and gone. The uninstall playbook
keeps its own tests (test_role_install.py's uninstall tests, the molecule scenarios' cleanup, the
least-privilege and -vvv runs of test_reliability_security.py, test_artifact_install.py).
"""
import os
import subprocess
import time

RELEASE = "dra-driver-cpu"
NAMESPACE = "dra-driver-cpu"
DRIVER = "dra.cpu"


def helm(cluster, *args, check=True, timeout=300):
    """The cluster's helm binary with `args` (and --kubeconfig); fails naming the command unless check=False."""
    env = cluster.run_env(HELM_CONFIG_HOME=os.path.join(cluster.state_dir, "helm", "config"),
                          HELM_CACHE_HOME=os.path.join(cluster.state_dir, "helm", "cache"),
                          HELM_DATA_HOME=os.path.join(cluster.state_dir, "helm", "data"))
    cmd = [cluster.env["CLUSTER_HELM_BINARY"], "--kubeconfig", cluster.kubeconfig, *args]
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if check and r.returncode:
        raise AssertionError(f"helm {' '.join(args)} failed: {r.stderr}")
    return r


def _until(what, done, timeout):
    deadline = time.time() + timeout
    while not done():
        if time.time() > deadline:
            raise AssertionError(f"remove_driver: {what} after {timeout} s")
        time.sleep(0.5)


def remove_driver(cluster, release=RELEASE, namespace=NAMESPACE, driver=DRIVER, timeout=120):
    """Uninstall `release` with helm if it is there, wait until no pod is left in `namespace`, delete
    the ResourceSlices of `driver` and the namespace, and wait until the namespace is gone."""
    from kubernetes import client
    core = client.CoreV1Api(cluster.api_client)
    custom = client.CustomObjectsApi(cluster.api_client)
    if helm(cluster, "status", release, "-n", namespace, check=False).returncode == 0:
        helm(cluster, "uninstall", release, "-n", namespace, "--wait", "--timeout", f"{timeout}s")
    namespaces = [n.metadata.name for n in core.list_namespace().items]
    if namespace in namespaces:
        _until(f"pods still in namespace {namespace}",
               lambda: not core.list_namespaced_pod(namespace).items, timeout)
    for s in custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices",
                                               field_selector=f"spec.driver={driver}")["items"]:
        try:
            custom.delete_cluster_custom_object("resource.k8s.io", "v1", "resourceslices", s["metadata"]["name"])
        except client.ApiException as e:
            if e.status != 404:
                raise
    if namespace in namespaces:
        try:
            core.delete_namespace(namespace)
        except client.ApiException as e:
            if e.status != 404:
                raise
        _until(f"namespace {namespace} still there",
               lambda: namespace not in [n.metadata.name for n in core.list_namespace().items], timeout)
