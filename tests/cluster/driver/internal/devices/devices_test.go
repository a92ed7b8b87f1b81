// Tests of device building and chunking, each naming the upstream behaviour it mirrors
// (pkg/device/builder.go, pkg/driver/driver.go New, v0.2.0 dra_hooks.go) or the section of
// docs/upstream.md ("What the driver publishes", "Example: node node-a").
package devices

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/cpuset"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/topology"
)

// topo builds v CPUs, t threads per core (siblings adjacent), s sockets, n even cells (sim_topology numbering).
func topo(v, threads, sockets, cells int, smt bool) *topology.Topology {
	tp := &topology.Topology{CPUs: map[int]topology.CPU{}, SMTEnabled: smt}
	coresPerSocket := v / (sockets * threads)
	var ids []int
	for c := 0; c < v; c++ {
		core := c / threads
		sock := core / coresPerSocket
		tp.CPUs[c] = topology.CPU{ID: c, CoreID: core % coresPerSocket, SocketID: sock, ClusterID: core,
			NUMA: c / (v / cells), L3: sock, Sibling: -1, CoreType: "standard"}
		ids = append(ids, c)
	}
	if threads == 2 {
		for c := 0; c < v; c += 2 {
			a, b := tp.CPUs[c], tp.CPUs[c+1]
			a.Sibling, b.Sibling = c+1, c
			tp.CPUs[c], tp.CPUs[c+1] = a, b
		}
	}
	tp.Online = cpuset.New(ids...)
	return tp
}

func opts(flavor, mode, groupBy, reserved string) Options {
	r, err := cpuset.Parse(reserved)
	if err != nil {
		panic(err)
	}
	return Options{Flavor: flavor, Mode: mode, GroupBy: groupBy, Reserved: r}
}

func intOf(t *testing.T, s Set, dev, attr string) int64 {
	t.Helper()
	for _, d := range s.Devices {
		if d.Name == dev {
			a, ok := d.Attributes[resourceQN(attr)]
			if !ok || a.IntValue == nil {
				t.Fatalf("%s has no int attribute %s", dev, attr)
			}
			return *a.IntValue
		}
	}
	t.Fatalf("no device %s", dev)
	return 0
}

// Reference "Example: node node-a": 12 CPUs, NUMA 0 = 0-5, NUMA 1 = 6-11, reserved 0-1:
// cpudevnuma000 capacity 4, cpudevnuma001 capacity 6, one slice.
func TestReferenceExampleGrouped(t *testing.T) {
	s := Build(topo(12, 1, 1, 2, false), opts(config.FlavorMain, config.ModeGrouped, config.GroupByNUMA, "0-1"))
	if len(s.Devices) != 2 || len(s.Chunks) != 1 {
		t.Fatalf("devices %d chunks %d", len(s.Devices), len(s.Chunks))
	}
	for i, want := range []int64{4, 6} {
		d := s.Devices[i]
		name := fmt.Sprintf("cpudevnuma%03d", i)
		q := d.Capacity[CPUResource].Value
		if d.Name != name || q.Value() != want || d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
			t.Fatalf("device %d = %s cap %s", i, d.Name, q.String())
		}
		if intOf(t, s, name, "dra.cpu/numCPUs") != want || intOf(t, s, name, "dra.cpu/numaNodeID") != int64(i) ||
			intOf(t, s, name, "dra.net/numaNode") != int64(i) || intOf(t, s, name, "resource.kubernetes.io/numaNode") != int64(i) ||
			intOf(t, s, name, "dra.cpu/socketID") != 0 || *d.Attributes["dra.cpu/smtEnabled"].BoolValue {
			t.Fatalf("attributes of %s: %v", name, d.Attributes)
		}
	}
	if s.CPUs["cpudevnuma000"].String() != "2-5" {
		t.Fatalf("cpus %s", s.CPUs["cpudevnuma000"].String())
	}
}

// Reference example, individual mode: cpudev000 (cpuID 2) ... cpudev009 (cpuID 11), no capacity.
func TestReferenceExampleIndividual(t *testing.T) {
	s := Build(topo(12, 1, 1, 2, false), opts(config.FlavorMain, config.ModeIndividual, "", "0-1"))
	if len(s.Devices) != 10 {
		t.Fatalf("%d devices", len(s.Devices))
	}
	for i, d := range s.Devices {
		if d.Name != fmt.Sprintf("cpudev%03d", i) || intOf(t, s, d.Name, "dra.cpu/cpuID") != int64(i+2) ||
			len(d.Capacity) != 0 || d.AllowMultipleAllocations != nil || *d.Attributes["dra.cpu/coreType"].StringValue != "standard" {
			t.Fatalf("device %d: %+v", i, d)
		}
	}
	if len(s.Devices[0].Attributes) != 9 {
		t.Fatalf("main individual attributes: %v", s.Devices[0].Attributes)
	}
}

// builder.go cpuDeviceInfos: SMT siblings adjacent, groups ordered by their lowest *available* CPU;
// a CPU whose sibling is reserved stands alone.
func TestIndividualSMTOrder(t *testing.T) {
	s := Build(topo(8, 2, 1, 1, true), opts(config.FlavorMain, config.ModeIndividual, "", "0"))
	var got []int64
	for _, d := range s.Devices {
		got = append(got, intOf(t, s, d.Name, "dra.cpu/cpuID"))
	}
	if fmt.Sprint(got) != "[1 2 3 4 5 6 7]" {
		t.Fatalf("order %v", got)
	}
	if intOf(t, s, "cpudev001", "dra.cpu/coreID") != 1 {
		t.Fatal("coreID of cpu 2 must be 1")
	}
}

// builder.go groupedCPUDeviceInfos: socket devices by socket id, empty groups left out;
// cpudevmachine is online CPUs minus reserved, published even with capacity 0.
func TestSocketAndMachine(t *testing.T) {
	tp := topo(8, 1, 2, 2, false)
	s := Build(tp, opts(config.FlavorMain, config.ModeGrouped, config.GroupBySocket, "0-3"))
	if len(s.Devices) != 1 || s.Devices[0].Name != "cpudevsocket001" || len(s.Devices[0].Attributes) != 3 {
		t.Fatalf("%+v", s.Devices)
	}
	m := Build(tp, opts(config.FlavorMain, config.ModeGrouped, config.GroupByMachine, "0-7"))
	q := m.Devices[0].Capacity[CPUResource].Value
	if len(m.Devices) != 1 || m.Devices[0].Name != "cpudevmachine" || q.Value() != 0 || len(m.Chunks) != 1 {
		t.Fatalf("%+v", m.Devices)
	}
}

// driver.go New + dra_hooks.go PublishResources: every CPU reserved (not machine) -> no devices,
// nil chunks, PublishResources never called (reference "If every CPU is reserved").
func TestAllReserved(t *testing.T) {
	for _, o := range []Options{opts(config.FlavorMain, config.ModeGrouped, config.GroupByNUMA, "0-11"),
		opts(config.FlavorMain, config.ModeIndividual, "", "0-11"),
		opts(config.FlavorV02, config.ModeGrouped, config.GroupBySocket, "0-11")} {
		if s := Build(topo(12, 1, 1, 2, false), o); len(s.Devices) != 0 || s.Chunks != nil {
			t.Fatalf("%+v: %d devices", o, len(s.Devices))
		}
	}
}

// driver.go New slices.Chunk at DevicesPerResourceSlice (128, 64 with PCIe roots); v0.2.0 chunks
// only individual mode (reference "Chunks hold at most 128 devices").
func TestChunking(t *testing.T) {
	tp := topo(300, 1, 1, 1, false)
	s := Build(tp, opts(config.FlavorMain, config.ModeIndividual, "", ""))
	if len(s.Chunks) != 3 || len(s.Chunks[0]) != 128 || len(s.Chunks[2]) != 44 {
		t.Fatalf("chunks %d", len(s.Chunks))
	}
	o := opts(config.FlavorV02, config.ModeIndividual, "", "")
	o.ExposePCIeRoots = true
	if s := Build(tp, o); len(s.Chunks) != 5 || len(s.Chunks[4]) != 44 {
		t.Fatalf("pcie chunks %d", len(s.Chunks))
	}
	many := topo(200, 1, 1, 200, false) // 200 NUMA devices
	if s := Build(many, opts(config.FlavorMain, config.ModeGrouped, config.GroupByNUMA, "")); len(s.Chunks) != 2 {
		t.Fatalf("main grouped chunks %d", len(s.Chunks))
	}
	if s := Build(many, opts(config.FlavorV02, config.ModeGrouped, config.GroupByNUMA, "")); len(s.Chunks) != 1 || len(s.Chunks[0]) != 200 {
		t.Fatalf("v0.2 grouped chunks %d", len(s.Chunks))
	}
}

// v0.2.0 dra_hooks.go: no resource.kubernetes.io/numaNode attribute.
func TestV02Attributes(t *testing.T) {
	tp := topo(4, 1, 1, 1, false)
	for _, mode := range []string{config.ModeGrouped, config.ModeIndividual} {
		s := Build(tp, opts(config.FlavorV02, mode, config.GroupByNUMA, ""))
		if _, ok := s.Devices[0].Attributes["resource.kubernetes.io/numaNode"]; ok {
			t.Fatalf("%s: v0.2 must not publish resource.kubernetes.io/numaNode", mode)
		}
	}
}

// app.go run(): cpuset.Parse of reservedCPUs, "failed to parse reserved CPUs: ...".
func TestOptionsFromBadCpuset(t *testing.T) {
	c := config.Default()
	c.ReservedCPUs = "3-1"
	if _, err := OptionsFrom(c, config.FlavorMain); err == nil {
		t.Fatal("want an error")
	}
}

func resourceQN(s string) resourceapi.QualifiedName { return resourceapi.QualifiedName(s) }

// main pkg/driver/driver.go New: slices.Chunk(devices, devicesPerResourceSlice) for every mode;
// v0.2.0 pkg/driver/dra_hooks.go createGroupedCPUDeviceSlices returns all grouped devices as one
// slice (ported from the simulator's test_sim_upstream.py when its Python rules went, issue 31).
func TestGroupedChunkingPerFlavour(t *testing.T) {
	tp := topo(260, 1, 1, 130, false)
	m := Build(tp, opts(config.FlavorMain, config.ModeGrouped, config.GroupByNUMA, ""))
	if len(m.Chunks) != 2 || len(m.Chunks[0]) != 128 || len(m.Chunks[1]) != 2 || m.Chunks[1][0].Name != "cpudevnuma128" {
		t.Fatalf("main: %d chunks", len(m.Chunks))
	}
	if v := Build(tp, opts(config.FlavorV02, config.ModeGrouped, config.GroupByNUMA, "")); len(v.Chunks) != 1 || len(v.Chunks[0]) != 130 {
		t.Fatalf("v0.2: %d chunks", len(v.Chunks))
	}
}
