"""The simulator against upstream dra-driver-cpu, point by point (issue 11, "the simulator differs").

Each test names the upstream file and function whose behaviour it mirrors (kubernetes-sigs/
dra-driver-cpu at tag v0.2.0 and at main of 2026-08-20). Which of the two applies follows the image
of the simulated driver pod (sim_config.image_flavor: v0.2.x -> "v0.2", v0.3.0/untagged -> "main").
"""
import pytest

from sim_config import DriverConfig, DriverConfigError, parse_config_file, resolve
from sim_slices import build_devices, build_slices
from sim_node_specs import build_node_specs
from sim_topology import Cpu, Topology, build_topology

IMAGE_V02 = "registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.2.0"
IMAGE_MAIN = "registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.3.0"
CONFIG = "/etc/dracpu/config.yaml"


def cfg(**kw):
    c = DriverConfig()
    for k, v in kw.items():
        setattr(c, k, v)
    return c


def pod(args, image=IMAGE_MAIN):
    return {"metadata": {"namespace": "dra-driver-cpu", "name": "d-x"},
            "spec": {"containers": [{"name": "dracpu", "image": image, "args": args,
                                     "volumeMounts": [{"name": "config", "mountPath": "/etc/dracpu"}]}],
                     "volumes": [{"name": "config", "configMap": {"name": "dra-driver-cpu-config"}}]}}


def configmap(text):
    return lambda ns, name: {"data": {"config.yaml": text}} if name == "dra-driver-cpu-config" else None


def cpu_ids(devices):
    return [d["attributes"]["dra.cpu/cpuID"]["int"] for d in devices]


# ---------------------------------------------------------------- grouped devices

@pytest.mark.parametrize("flavor", ["v0.2", "main"])
def test_machine_group_published_with_capacity_0_when_every_cpu_is_reserved(flavor):
    """v0.2.0 pkg/driver/dra_hooks.go groupedCPUDeviceInfos / main pkg/device/builder.go
    groupedCPUDeviceInfos: GROUP_BY_MACHINE appends cpudevmachine without the size check the NUMA and
    socket cases have, so it is published with capacity 0; those two publish nothing."""
    t = build_topology(cpus=12, numa_nodes=2)
    everything = list(range(12))
    (s,) = build_slices(t, cfg(group_by="machine", reserved_cpus=everything, flavor=flavor), "n", "u", 1)
    assert s["spec"]["pool"]["resourceSliceCount"] == 1
    assert s["spec"]["devices"] == [{
        "name": "cpudevmachine", "allowMultipleAllocations": True,
        "capacity": {"dra.cpu/cpu": {"value": "0"}},
        "attributes": {"dra.cpu/smtEnabled": {"bool": False}, "dra.cpu/numCPUs": {"int": 0}}}]
    for group_by in ("numanode", "socket"):
        assert build_slices(t, cfg(group_by=group_by, reserved_cpus=everything, flavor=flavor), "n", "u", 1) == []


def test_main_chunks_grouped_devices_past_128_and_v020_does_not():
    """main pkg/driver/driver.go New: slices.Chunk(devices, devicesPerResourceSlice) for every mode;
    v0.2.0 pkg/driver/dra_hooks.go createGroupedCPUDeviceSlices returns all grouped devices as one slice."""
    t = build_topology(cpus=260, numa_nodes=130)
    main = build_slices(t, cfg(flavor="main"), "big", "u", 1)
    assert [len(s["spec"]["devices"]) for s in main] == [128, 2]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in main} == {2}
    assert main[1]["spec"]["devices"][0]["name"] == "cpudevnuma128"
    v02 = build_slices(t, cfg(flavor="v0.2"), "big", "u", 1)
    assert [len(s["spec"]["devices"]) for s in v02] == [130]


def test_main_adds_the_standard_numa_node_attribute():
    """main pkg/device/builder.go createGroupedCPUDeviceSlices (GROUP_BY_NUMA_NODE) and
    createCPUDeviceSlices set deviceattribute.StandardDeviceAttributeNUMANode
    (resource.kubernetes.io/numaNode); v0.2.0 pkg/device/attributes.go SetCompatibilityAttributes only
    adds dra.net/numaNode. Socket and machine groups carry no NUMA attribute in either."""
    t = build_topology(cpus=12, numa_nodes=2)
    std = "resource.kubernetes.io/numaNode"
    for mode in ("grouped", "individual"):
        main = build_devices(t, cfg(cpu_device_mode=mode, flavor="main"))
        assert [d["attributes"][std] for d in main][-1] == {"int": 1}
        assert all(d["attributes"]["dra.net/numaNode"] == d["attributes"][std] for d in main)
        assert all(std not in d["attributes"] for d in build_devices(t, cfg(cpu_device_mode=mode, flavor="v0.2")))
    for group_by in ("socket", "machine"):
        assert all(std not in d["attributes"] for d in build_devices(t, cfg(group_by=group_by, flavor="main")))


# ---------------------------------------------------------------- individual devices

def split_siblings_topology(smt_control=None):
    """8 CPUs, 4 cores, siblings numbered like most Intel servers: core k = CPUs k and k+4."""
    cpus = [Cpu(id=i, core=i % 4, core_id=i % 4, socket=0, numa=0, l3=0) for i in range(8)]
    return Topology(cpus=cpus, cells={0: list(range(8))}, sockets=1, threads_per_core=2, smt_control=smt_control)


def test_individual_order_follows_lowest_available_cpu_of_each_core():
    """v0.2.0 pkg/driver/dra_hooks.go and main pkg/device/builder.go cpuDeviceInfos: core groups are
    sorted by their first *available* CPU; a CPU whose sibling is reserved stands alone. With CPU 0
    reserved, CPU 4 (core 0) comes after cores 1-3, not first."""
    t = split_siblings_topology()
    devs = build_devices(t, cfg(cpu_device_mode="individual", reserved_cpus=[0]))
    assert cpu_ids(devs) == [1, 5, 2, 6, 3, 7, 4]
    assert [d["name"] for d in devs] == [f"cpudev{i:03d}" for i in range(7)]
    assert cpu_ids(build_devices(t, cfg(cpu_device_mode="individual"))) == [0, 4, 1, 5, 2, 6, 3, 7]


def test_individual_order_pairs_only_2_way_smt_siblings():
    """main pkg/cpuinfo/cpuinfo.go populateCpuSiblings sets SiblingCPUID only on cores of exactly two
    CPUs: with 4 threads per core every CPU is its own group, in CPU id order."""
    cpus = [Cpu(id=i, core=i % 2, core_id=i % 2, socket=0, numa=0, l3=0) for i in range(8)]
    t = Topology(cpus=cpus, cells={0: list(range(8))}, sockets=1, threads_per_core=4)
    assert cpu_ids(build_devices(t, cfg(cpu_device_mode="individual", reserved_cpus=[0]))) == list(range(1, 8))


@pytest.mark.parametrize("control, expected", [
    ("on", True), ("off", False), ("forceoff", False), ("notsupported", False), ("notimplemented", False),
    ("", True), ("garbage", True)])
def test_smt_enabled_comes_from_sysfs_smt_control(control, expected):
    """main and v0.2.0 pkg/cpuinfo/cpuinfo.go IsSMTEnabled reads devices/system/cpu/smt/control; when
    it is missing or unknown, GetCPUTopology falls back to "more logical CPUs than cores"."""
    t = split_siblings_topology(smt_control=control)
    for mode in ("grouped", "individual"):
        devs = build_devices(t, cfg(cpu_device_mode=mode))
        assert {d["attributes"]["dra.cpu/smtEnabled"]["bool"] for d in devs} == {expected}


def test_smt_control_node_spec_key():
    """The node spec key smt_control is the text of sysfs smt/control (IsSMTEnabled's input); the
    default is "on" with SMT threads and "notsupported" without."""
    specs = build_node_specs({"CLUSTER_NODES": "3", "KUBEVIRT_NUM_VCPU": "8", "KUBEVIRT_NUM_NUMA_NODES": "1",
                              "CLUSTER_NODE_OVERRIDES": '{"node01": {"threads_per_core": 2},'
                                                        ' "node02": {"threads_per_core": 2, "smt_control": "off"}}'})
    assert [(s.topology.smt_control_text, s.topology.smt) for s in specs] == [
        ("on", True), ("off", False), ("notsupported", False)]
    no_file = build_topology(cpus=8, threads_per_core=2, smt_control="")
    assert no_file.smt and not build_topology(cpus=8, smt_control="").smt


# ---------------------------------------------------------------- the config file (main only)

@pytest.mark.parametrize("text, message", [
    ("reservedCpus: 0-1\n", 'field "reservedCpus" is spelled differently from the schema; use "reservedCPUs"'),
    ("GroupBy: machine\ncpudevicemode: grouped\n",
     'field "GroupBy" is spelled differently from the schema; use "groupBy"; field "cpudevicemode" is spelled '
     'differently from the schema; use "cpuDeviceMode"'),
    ("apiversion: v1alpha1\n", 'field "apiversion" is spelled differently from the schema; use "apiVersion"'),
])
def test_config_file_keys_must_be_spelled_exactly(text, message):
    """main internal/driverconfig/cfgfile.go rejectNonCanonicalKeys: a key that matches a Config json
    tag only case-insensitively is refused (all of them, sorted, in one message)."""
    with pytest.raises(DriverConfigError) as e:
        parse_config_file(text, CONFIG)
    assert str(e.value) == f"failed to load configuration: cannot apply {CONFIG}: {message}"


@pytest.mark.parametrize("key, alternative", [
    ("bindAddress", "use helm chart's healthzPort instead"),
    ("exposePCIeRoots", "use args.exposePCIeRoots instead"),
    ("kubeletRootDir", "use the chart's top-level kubeletRootDir value, or --kubelet-root-dir when running "
                       "the binary directly"),
])
def test_config_file_refuses_bind_address_expose_pcie_roots_kubelet_root_dir(key, alternative):
    """main internal/driverconfig/cfgfile.go rejectExcludedFields (schema.go schemaExcludedFields), also
    for a case variant of the key (rejectNonCanonicalKeys)."""
    value = "true" if key == "exposePCIeRoots" else "/x"
    for spelled in (key, key.upper()):
        with pytest.raises(DriverConfigError, match=f'field "{spelled}" is not configurable via the config file; '):
            parse_config_file(f"{spelled}: {value}\n", CONFIG)
    with pytest.raises(DriverConfigError) as e:
        parse_config_file(f"{key}: {value}\n", CONFIG)
    assert str(e.value).endswith(alternative)


def test_config_file_strict_decoding():
    """main internal/driverconfig/cfgfile.go loadFile (yaml.UnmarshalStrict: duplicate keys),
    validateAPIVersion, and load.go applyMap (DisallowUnknownFields, JSON types of the Config fields)."""
    ok = parse_config_file("apiVersion: v1alpha1\nreservedCPUs: 0-1\ngroupBy: socket\nhostnameOverride: ''\n"
                           "kubeconfig: /k\nsysfsOverlay: ''\npublishNodeAllocatableResourceMapping: true\n", CONFIG)
    assert ok == {"reserved_cpus": "0-1", "group_by": "socket", "hostname_override": ""}
    bad = {
        "kind: DriverConfig\n": 'applying config map: json: unknown field "kind"',
        "apiVersion: v2\n": 'unsupported apiVersion "v2", want "v1alpha1"',
        "reservedCPUs: 1\n": "applying config map: json: cannot unmarshal number into Go struct field "
                             "Config.reservedCPUs of type string",
        "publishNodeAllocatableResourceMapping: 'yes please'\n":
            "applying config map: json: cannot unmarshal string into Go struct field "
            "Config.publishNodeAllocatableResourceMapping of type bool",
        "groupBy: socket\ngroupBy: machine\n": 'line 2: key "groupBy" already set in map',
    }
    for text, message in bad.items():
        with pytest.raises(DriverConfigError) as e:
            parse_config_file(text, CONFIG)
        assert message in str(e.value), text


def test_file_values_are_validated_after_merging():
    """main internal/driverconfig/load.go Resolve -> flags.go Config.Validate: a bad cpuDeviceMode, or
    a bad groupBy in grouped mode, fails after defaults, file and flags are merged."""
    with pytest.raises(DriverConfigError, match='cannot validate config: invalid groupBy "rack"'):
        resolve(pod([f"--config={CONFIG}"]), configmap("groupBy: rack\n"))
    with pytest.raises(DriverConfigError, match='cannot validate config: invalid cpuDeviceMode ""'):
        resolve(pod([f"--config={CONFIG}"]), configmap("cpuDeviceMode: ''\n"))
    c = resolve(pod([f"--config={CONFIG}"]), configmap("cpuDeviceMode: individual\ngroupBy: rack\n"))
    assert c.cpu_device_mode == "individual"


# ---------------------------------------------------------------- flags over the file

def test_a_flag_set_explicitly_wins_over_the_file_even_when_empty():
    """main internal/driverconfig/flags.go FromFlags collects flagset.Visit (every flag set on the
    command line, whatever its value) and load.go Resolve applies defaults -> file -> flags."""
    text = "reservedCPUs: 0-3\nhostnameOverride: other\ngroupBy: socket\n"
    c = resolve(pod([f"--config={CONFIG}", "--reserved-cpus=", "--hostname-override="]), configmap(text))
    assert (c.reserved_cpus, c.hostname_override, c.group_by) == ([], "", "socket")
    assert c.sources == {"reserved_cpus": "flag", "hostname_override": "flag", "group_by": "file",
                         "cpu_device_mode": "default"}
    c = resolve(pod([f"--config={CONFIG}", "--group-by", "machine"]), configmap(text))
    assert (c.group_by, c.reserved_cpus, c.hostname_override) == ("machine", [0, 1, 2, 3], "other")


@pytest.mark.parametrize("image", [IMAGE_V02, IMAGE_MAIN])
def test_empty_group_by_or_mode_flag_is_a_flag_error(image):
    """v0.2.0 and main internal/driverconfig/config.go|flags.go groupByValue.Set / cpuDeviceModeValue.Set
    refuse any other value, "" included; flag.Parse reports it as `invalid value ... for flag`."""
    args = [] if image == IMAGE_V02 else [f"--config={CONFIG}"]
    with pytest.raises(DriverConfigError) as e:
        resolve(pod(args + ["--group-by="], image=image), configmap("groupBy: socket\n"))
    assert str(e.value) == 'invalid value "" for flag -group-by: invalid value: "", must be socket, numanode or machine'
    with pytest.raises(DriverConfigError, match='flag -cpu-device-mode: invalid value: "x", must be grouped or individual'):
        resolve(pod(args + ["--cpu-device-mode=x"], image=image), configmap(""))


# ---------------------------------------------------------------- which release applies

def test_the_driver_image_picks_the_release_behaviour():
    """The simulated driver behaves like the release its image names: v0.2.0 (pkg/driver/dra_hooks.go:
    grouped devices in one slice, no resource.kubernetes.io/numaNode, no --config flag) or main
    (pkg/device/builder.go + driver.go, --config); the same pod spec, two images."""
    t = build_topology(cpus=260, numa_nodes=130)
    args = ["--reserved-cpus=0-1"]
    v02 = resolve(pod(args, image=IMAGE_V02), configmap(""))
    main = resolve(pod(args, image=IMAGE_MAIN), configmap(""))
    assert (v02.flavor, main.flavor) == ("v0.2", "main")
    assert len(build_slices(t, v02, "n", "u", 1)) == 1 and len(build_slices(t, main, "n", "u", 1)) == 2
    with pytest.raises(DriverConfigError, match="flag provided but not defined: -config"):
        resolve(pod([f"--config={CONFIG}"], image=IMAGE_V02), configmap(""))
