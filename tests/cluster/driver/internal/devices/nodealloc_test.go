// Tests of KEP-5517 nodeAllocatableResources, each naming the upstream behaviour it mirrors:
// upstream main pkg/device/builder_test.go TestDeviceBuilderNodeAllocatableResourceMapping (ported
// case by case), test/e2e/resource_slice_test.go "should publish node allocatable cpu mappings only
// when enabled" (the JSON a slice carries), and cmd/dracpu/app.go passing
// cfg.PublishNodeAllocatableResourceMapping to the builder (main's config file only).
package devices

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
)

// Upstream builder_test.go fakeTopology: 4 CPUs, 2 sockets, 2 NUMA nodes, no SMT; reserved {0}.
func TestNodeAllocatableResourceMapping(t *testing.T) {
	one := resource.MustParse("1")
	cases := []struct {
		name, mode, groupBy string
		enabled             bool
	}{
		{"grouped/enabled", config.ModeGrouped, config.GroupByNUMA, true},
		{"grouped/disabled", config.ModeGrouped, config.GroupByNUMA, false},
		{"individual/enabled", config.ModeIndividual, "", true},
		{"individual/disabled", config.ModeIndividual, "", false},
		// not in upstream's table, same builder function (groupedCPUNodeAllocatable) for every grouping
		{"grouped-socket/enabled", config.ModeGrouped, config.GroupBySocket, true},
		{"grouped-machine/enabled", config.ModeGrouped, config.GroupByMachine, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(config.FlavorMain, tc.mode, tc.groupBy, "0")
			o.NodeAllocatable = tc.enabled
			s := Build(topo(4, 1, 2, 2, false), o)
			if len(s.Devices) == 0 {
				t.Fatal("no devices")
			}
			for _, dev := range s.Devices {
				if !tc.enabled {
					if dev.NodeAllocatableResources != nil {
						t.Fatalf("device %q must not expose nodeAllocatableResources when publishing is disabled", dev.Name)
					}
					continue
				}
				nar, ok := dev.NodeAllocatableResources[v1.ResourceCPU]
				if !ok || len(dev.NodeAllocatableResources) != 1 {
					t.Fatalf("device %q must expose exactly a cpu mapping: %v", dev.Name, dev.NodeAllocatableResources)
				}
				if nar.Mapping == nil || nar.Overhead != nil {
					t.Fatalf("device %q: mapping must be set, overhead not: %+v", dev.Name, nar)
				}
				m := nar.Mapping
				if tc.mode == config.ModeGrouped {
					// the capacityKey must reference an existing capacity entry or the apiserver rejects the slice
					if m.CapacityKey == nil || *m.CapacityKey != CPUResource || m.CapacityMultiplier == nil ||
						m.CapacityMultiplier.Cmp(one) != 0 || m.DeviceMultiplier != nil {
						t.Fatalf("device %q: grouped mapping must be capacityKey dra.cpu/cpu x 1: %+v", dev.Name, m)
					}
					if _, ok := dev.Capacity[CPUResource]; !ok {
						t.Fatalf("device %q: capacityKey must reference a defined capacity", dev.Name)
					}
				} else if m.DeviceMultiplier == nil || m.DeviceMultiplier.Cmp(one) != 0 ||
					m.CapacityKey != nil || m.CapacityMultiplier != nil {
					t.Fatalf("device %q: individual mapping must be deviceMultiplier 1 alone: %+v", dev.Name, m)
				}
			}
		})
	}
}

// The e2e test reads the slices' JSON: grouped {"cpu":{"mapping":{"capacityKey":"dra.cpu/cpu",
// "capacityMultiplier":"1"}}}, individual {"cpu":{"mapping":{"deviceMultiplier":"1"}}}; off: no key.
func TestNodeAllocatableJSON(t *testing.T) {
	want := map[string]string{
		config.ModeGrouped:    `{"cpu":{"mapping":{"capacityKey":"dra.cpu/cpu","capacityMultiplier":"1"}}}`,
		config.ModeIndividual: `{"cpu":{"mapping":{"deviceMultiplier":"1"}}}`,
	}
	for mode, w := range want {
		for _, on := range []bool{true, false} {
			o := opts(config.FlavorMain, mode, config.GroupByNUMA, "")
			o.NodeAllocatable = on
			dev := Build(topo(4, 1, 1, 1, false), o).Devices[0]
			raw, err := json.Marshal(dev)
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			got, has := obj["nodeAllocatableResources"]
			if !on {
				if has {
					t.Fatalf("%s off: nodeAllocatableResources present: %s", mode, got)
				}
				continue
			}
			if string(got) != w {
				t.Fatalf("%s: nodeAllocatableResources = %s, want %s", mode, got, w)
			}
		}
	}
}

// app.go: the builder gets cfg.PublishNodeAllocatableResourceMapping; the key exists only in main's
// config file, so the v0.2 flavour never publishes the mapping.
func TestOptionsFromNodeAllocatable(t *testing.T) {
	for _, tc := range []struct {
		flavor string
		set    bool
		want   bool
	}{
		{config.FlavorMain, true, true},
		{config.FlavorMain, false, false},
		{config.FlavorV02, true, false},
	} {
		cfg := config.Default()
		cfg.PublishNodeAllocatableResourceMapping = tc.set
		o, err := OptionsFrom(cfg, tc.flavor)
		if err != nil {
			t.Fatal(err)
		}
		if o.NodeAllocatable != tc.want {
			t.Fatalf("%s with the key %t: NodeAllocatable %t, want %t", tc.flavor, tc.set, o.NodeAllocatable, tc.want)
		}
		s := Build(topo(4, 1, 1, 1, false), o)
		for _, d := range s.Devices {
			if (d.NodeAllocatableResources != nil) != tc.want {
				t.Fatalf("%s: device %s nodeAllocatableResources %v", tc.flavor, d.Name, d.NodeAllocatableResources)
			}
		}
	}
}

