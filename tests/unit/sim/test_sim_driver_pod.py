"""What the kubelet gives a simulated driver container (sim_driver_pod.py): which container, its
image's flavour, its argv and the files its ConfigMap volumes mount. What the driver makes of them
(flags, config.yaml, refusals) is the Go driver's, tested in tests/cluster/driver."""
from sim_driver_pod import container_argv, driver_container, image_flavor, missing_configmaps, mounted_files


def pod(args, image="registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.3.0", cm=None, mount="/etc/dracpu",
        name="dracpu"):
    p = {"metadata": {"namespace": "dra-driver-cpu", "name": "d-x"},
         "spec": {"containers": [{"name": name, "image": image, "args": args,
                                  "volumeMounts": [{"name": "config", "mountPath": mount, "readOnly": True}]}],
                  "volumes": [{"name": "config", "configMap": {"name": cm or "dra-driver-cpu-config"}}]}}
    return p


def cms(text):
    store = {("dra-driver-cpu", "dra-driver-cpu-config"): {"data": {"config.yaml": text}}}
    return lambda ns, n: store.get((ns, n))


def test_flavors():
    assert image_flavor("registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.2.0") == "v0.2"
    assert image_flavor("localhost:5000/dra-driver-cpu:v0.1.0") == "v0.2"   # no v0.1 flavour
    assert image_flavor("x/dra-driver-cpu:v0.3.0") == "main"
    assert image_flavor("x/dra-driver-cpu") == "main"
    assert image_flavor("localhost:5000/dra-driver-cpu@sha256:abc") == "main"


def test_driver_container_detection():
    assert driver_container(pod([]))["name"] == "dracpu"
    assert driver_container(pod([], name="other"))["name"] == "other"
    assert driver_container(pod([], name="other", image="nginx")) is None


def test_argv_without_an_entrypoint_drops_the_binary():
    assert container_argv({"args": ["/dracpu", "--v=4"]}) == ["--v=4"]     # the charts' form
    assert container_argv({"args": ["--v=4"]}) == ["--v=4"]
    assert container_argv({"command": ["/dracpu", "--a"], "args": ["--b"]}) == ["--a", "--b"]


def test_mounted_files_items_subpath_and_missing():
    p = pod([])
    c = p["spec"]["containers"][0]
    assert mounted_files(p, c, cms("groupBy: socket\n")) == {"/etc/dracpu/config.yaml": "groupBy: socket\n"}
    assert mounted_files(p, c, lambda ns, n: None) == {}
    assert missing_configmaps(p, lambda ns, n: None) == ["dra-driver-cpu-config"]
    assert missing_configmaps(p, cms("")) == []
    p["spec"]["volumes"][0]["configMap"]["items"] = [{"key": "cfg", "path": "config.yaml"}]
    assert mounted_files(p, c, lambda ns, n: {"data": {"cfg": "x", "other": "y"}}) == {"/etc/dracpu/config.yaml": "x"}
    p = pod([], mount="/etc/dracpu/config.yaml")
    c = p["spec"]["containers"][0]
    c["volumeMounts"][0]["subPath"] = "config.yaml"
    assert mounted_files(p, c, cms("a: b\n")) == {"/etc/dracpu/config.yaml": "a: b\n"}
