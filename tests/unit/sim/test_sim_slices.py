from sim_config import DriverConfig
from sim_slices import build_devices, build_slices, chunk, dropped_fields, fingerprint
from sim_topology import build_topology

NODE_A = build_topology(cpus=12, numa_nodes=2)


def cfg(**kw):
    c = DriverConfig()
    for k, v in kw.items():
        setattr(c, k, v)
    return c


def test_reference_example_grouped_numanode():
    slices = build_slices(NODE_A, cfg(reserved_cpus=[0, 1], flavor="v0.2"), "node-a", "uid-1", 1)
    assert len(slices) == 1
    s = slices[0]
    assert s["apiVersion"] == "resource.k8s.io/v1" and s["kind"] == "ResourceSlice"
    assert s["metadata"]["generateName"] == "00000-dra.cpu-node-a-"
    assert s["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "uid-1", "controller": True}]
    assert s["spec"]["driver"] == "dra.cpu" and s["spec"]["nodeName"] == "node-a"
    assert s["spec"]["pool"] == {"name": "node-a", "generation": 1, "resourceSliceCount": 1}
    assert s["spec"]["devices"] == [
        {"name": "cpudevnuma000", "allowMultipleAllocations": True,
         "capacity": {"dra.cpu/cpu": {"value": "4"}},
         "attributes": {"dra.cpu/numaNodeID": {"int": 0}, "dra.cpu/socketID": {"int": 0},
                        "dra.cpu/smtEnabled": {"bool": False}, "dra.cpu/numCPUs": {"int": 4},
                        "dra.net/numaNode": {"int": 0}}},
        {"name": "cpudevnuma001", "allowMultipleAllocations": True,
         "capacity": {"dra.cpu/cpu": {"value": "6"}},
         "attributes": {"dra.cpu/numaNodeID": {"int": 1}, "dra.cpu/socketID": {"int": 0},
                        "dra.cpu/smtEnabled": {"bool": False}, "dra.cpu/numCPUs": {"int": 6},
                        "dra.net/numaNode": {"int": 1}}},
    ]


def test_main_flavor_adds_standard_numa_attribute():
    devs = build_devices(NODE_A, cfg(reserved_cpus=[0, 1], flavor="main"))
    assert devs[1]["attributes"]["resource.kubernetes.io/numaNode"] == {"int": 1}
    assert "resource.kubernetes.io/numaNode" not in build_devices(NODE_A, cfg(flavor="v0.2"))[0]["attributes"]


def test_reference_example_individual():
    devs = build_devices(NODE_A, cfg(reserved_cpus=[0, 1], cpu_device_mode="individual", flavor="v0.2"))
    assert [d["name"] for d in devs] == [f"cpudev{i:03d}" for i in range(10)]
    assert [d["attributes"]["dra.cpu/cpuID"]["int"] for d in devs] == list(range(2, 12))
    d0 = devs[0]
    assert "capacity" not in d0 and "allowMultipleAllocations" not in d0
    assert d0["attributes"] == {
        "dra.cpu/numaNodeID": {"int": 0}, "dra.cpu/socketID": {"int": 0}, "dra.cpu/smtEnabled": {"bool": False},
        "dra.cpu/cacheL3ID": {"int": 0}, "dra.cpu/coreType": {"string": "standard"},
        "dra.cpu/coreID": {"int": 2}, "dra.cpu/cpuID": {"int": 2}, "dra.net/numaNode": {"int": 0}}
    assert devs[9]["attributes"]["dra.cpu/numaNodeID"] == {"int": 1}


def test_empty_group_not_published_and_all_reserved_publishes_nothing():
    devs = build_devices(NODE_A, cfg(reserved_cpus=list(range(6))))
    assert [d["name"] for d in devs] == ["cpudevnuma001"]
    assert build_slices(NODE_A, cfg(reserved_cpus=list(range(12))), "n", "u", 1) == []
    assert build_slices(NODE_A, cfg(reserved_cpus=list(range(12)), cpu_device_mode="individual"), "n", "u", 1) == []


def test_socket_and_machine_grouping():
    t = build_topology(cpus=16, numa_nodes=2, sockets=2, threads_per_core=2)
    devs = build_devices(t, cfg(group_by="socket", reserved_cpus=[0, 1]))
    assert [(d["name"], d["capacity"]["dra.cpu/cpu"]["value"]) for d in devs] == [
        ("cpudevsocket000", "6"), ("cpudevsocket001", "8")]
    assert devs[1]["attributes"] == {"dra.cpu/socketID": {"int": 1}, "dra.cpu/smtEnabled": {"bool": True},
                                     "dra.cpu/numCPUs": {"int": 8}}
    m = build_devices(t, cfg(group_by="machine", reserved_cpus=[0, 1]))
    assert m == [{"name": "cpudevmachine", "allowMultipleAllocations": True,
                  "capacity": {"dra.cpu/cpu": {"value": "14"}},
                  "attributes": {"dra.cpu/smtEnabled": {"bool": True}, "dra.cpu/numCPUs": {"int": 14}}}]


def test_smt_individual_order_and_core_ids():
    t = build_topology(cpus=8, numa_nodes=1, threads_per_core=2)
    devs = build_devices(t, cfg(cpu_device_mode="individual", reserved_cpus=[1]))
    ids = [(d["attributes"]["dra.cpu/cpuID"]["int"], d["attributes"]["dra.cpu/coreID"]["int"]) for d in devs]
    assert ids == [(0, 0), (2, 1), (3, 1), (4, 2), (5, 2), (6, 3), (7, 3)]
    assert devs[0]["attributes"]["dra.cpu/smtEnabled"] == {"bool": True}


def test_chunking_at_128():
    t = build_topology(cpus=300, numa_nodes=2)
    sl = build_slices(t, cfg(cpu_device_mode="individual", reserved_cpus=[0, 1], flavor="v0.2"), "big", "u", 3)
    assert [len(s["spec"]["devices"]) for s in sl] == [128, 128, 42]
    assert all(s["spec"]["pool"] == {"name": "big", "generation": 3, "resourceSliceCount": 3} for s in sl)
    assert sl[1]["spec"]["devices"][0]["name"] == "cpudev128"
    pcie = build_slices(t, cfg(cpu_device_mode="individual", expose_pcie_roots=True), "big", "u", 1)
    assert [len(s["spec"]["devices"]) for s in pcie] == [64, 64, 64, 64, 44]


def test_partial_forces_chunks():
    assert chunk([1, 2], 128, min_chunks=2) == [[1], [2]]
    assert chunk([1], 128, min_chunks=2) == [[1], []]
    assert chunk(list(range(5)), 2) == [[0, 1], [2, 3], [4]]
    sl = build_slices(NODE_A, cfg(flavor="v0.2"), "n", "u", 1, min_chunks=2)
    assert [s["spec"]["pool"]["resourceSliceCount"] for s in sl] == [2, 2]
    assert [len(s["spec"]["devices"]) for s in sl] == [1, 1]


def test_v01_names():
    sl = build_slices(NODE_A, cfg(flavor="v0.1"), "node01", "u", 1)
    assert sl[0]["metadata"]["generateName"] == "node01-dra.cpu-"


def test_dropped_fields_and_fingerprint():
    devs = build_devices(NODE_A, cfg(reserved_cpus=[0, 1]))
    stored = [{k: v for k, v in d.items() if k != "allowMultipleAllocations"} for d in devs]
    assert dropped_fields(devs, stored) == ["allowMultipleAllocations"]
    assert dropped_fields(devs, devs) == []
    assert fingerprint([devs]) == fingerprint([stored])
    assert fingerprint([devs]) != fingerprint([devs[:1]])


def test_each_slice_gets_its_own_index_prefix():
    """resourceslice controller: GenerateName = <index as %0*x, at least 5 digits>-<driver>-<owner>-
    (encodeIndex/getIndexLength), so the second chunk of a pool is 00001-, not 00000-."""
    big = build_topology(cpus=200, numa_nodes=1)
    slices = build_slices(big, cfg(cpu_device_mode="individual", flavor="main"), "big", "uid-1", 1)
    assert [s["metadata"]["generateName"] for s in slices] == ["00000-dra.cpu-big-", "00001-dra.cpu-big-"]
    from sim_slices import decode_index, index_length
    assert index_length(1) == 5 and index_length(0x100000 + 1) == 6
    assert decode_index("00001-dra.cpu-big-abcde", 5) == 1
    assert decode_index("big-dra.cpu-abcde", 5) is None       # v0.1 names match no index: obsolete
