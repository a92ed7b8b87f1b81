import pytest

from sim_config import (ConfigMapMissing, DriverConfigError, driver_container, image_flavor, missing_configmaps,
                        parse_config_file, parse_flags, resolve)


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
    assert image_flavor("localhost:5000/dra-driver-cpu:v0.1.0") == "v0.1"
    assert image_flavor("x/dra-driver-cpu:v0.3.0") == "main"
    assert image_flavor("x/dra-driver-cpu") == "main"
    assert image_flavor("localhost:5000/dra-driver-cpu@sha256:abc") == "main"


def test_driver_container_detection():
    assert driver_container(pod([]))["name"] == "dracpu"
    assert driver_container(pod([], name="other"))["name"] == "other"
    assert driver_container(pod([], name="other", image="nginx")) is None


def test_parse_flags_forms():
    f, rest = parse_flags(["--v=4", "--reserved-cpus", "0-1", "-group-by=socket", "--expose-pcie-roots", "x"])
    assert f == {"v": "4", "reserved-cpus": "0-1", "group-by": "socket", "expose-pcie-roots": "true"}
    assert rest == ["x"]


def test_defaults():
    c = resolve(pod(["--v=4"]), cms(""))
    assert (c.cpu_device_mode, c.group_by, c.reserved_cpus, c.hostname_override) == ("grouped", "numanode", [], "")
    assert c.flavor == "main"


def test_v02_flags():
    p = pod(["--v=4", "--cpu-device-mode=individual", "--group-by=numanode", "--bind-address=:8080",
             "--reserved-cpus=0-1"], image="x/dra-driver-cpu:v0.2.0")
    c = resolve(p, cms(""))
    assert c.cpu_device_mode == "individual" and c.reserved_cpus == [0, 1] and c.flavor == "v0.2"


def test_v02_rejects_config_flag():
    p = pod(["--config=/etc/dracpu/config.yaml"], image="x/dra-driver-cpu:v0.2.0")
    with pytest.raises(DriverConfigError, match="flag provided but not defined: -config"):
        resolve(p, cms("reservedCPUs: 0-1\n"))


def test_file_and_precedence():
    text = "groupBy: socket\nreservedCPUs: 0-3\ncpuDeviceMode: grouped\n"
    c = resolve(pod(["--config=/etc/dracpu/config.yaml"]), cms(text))
    assert c.group_by == "socket" and c.reserved_cpus == [0, 1, 2, 3]
    assert c.sources == {"cpu_device_mode": "file", "group_by": "file", "reserved_cpus": "file",
                         "hostname_override": "default"}
    assert c.config_source == "ConfigMap dra-driver-cpu/dra-driver-cpu-config key config.yaml"
    c = resolve(pod(["--config=/etc/dracpu/config.yaml", "--reserved-cpus=0-1"]), cms(text))
    assert c.reserved_cpus == [0, 1] and c.sources["reserved_cpus"] == "flag"


def test_config_file_key_spellings_and_strictness():
    # exact spellings only (main cfgfile.go rejectNonCanonicalKeys; more in test_sim_upstream.py)
    assert parse_config_file("reservedCPUs: 0-1\ngroupBy: machine\napiVersion: v1alpha1\n") == {
        "reserved_cpus": "0-1", "group_by": "machine"}
    with pytest.raises(DriverConfigError, match='"reservedCpus" is spelled differently'):
        parse_config_file("reservedCpus: 0-1\n")
    with pytest.raises(DriverConfigError, match='unknown field "kind"'):
        parse_config_file("kind: DriverConfig\n")
    with pytest.raises(DriverConfigError, match="apiVersion"):
        parse_config_file("apiVersion: v2\n")
    with pytest.raises(DriverConfigError):
        parse_config_file("- a\n")


def test_bad_values():
    with pytest.raises(DriverConfigError, match="group-by"):
        resolve(pod(["--group-by=rack"]), cms(""))
    with pytest.raises(DriverConfigError, match="reserved"):
        resolve(pod(["--config=/etc/dracpu/config.yaml"]), cms("reservedCPUs: 3-1\n"))


def test_missing_configmap_and_items():
    p = pod(["--config=/etc/dracpu/config.yaml"])
    with pytest.raises(ConfigMapMissing):
        resolve(p, lambda ns, n: None)
    assert missing_configmaps(p, lambda ns, n: None) == ["dra-driver-cpu-config"]
    assert missing_configmaps(p, cms("")) == []
    p["spec"]["volumes"][0]["configMap"]["items"] = [{"key": "cfg", "path": "config.yaml"}]
    c = resolve(p, lambda ns, n: {"data": {"cfg": "groupBy: machine\n"}})
    assert c.group_by == "machine"


def test_subpath_mount():
    p = pod(["--config=/etc/dracpu/config.yaml"], mount="/etc/dracpu/config.yaml")
    p["spec"]["containers"][0]["volumeMounts"][0]["subPath"] = "config.yaml"
    assert resolve(p, cms("groupBy: machine\n")).group_by == "machine"
