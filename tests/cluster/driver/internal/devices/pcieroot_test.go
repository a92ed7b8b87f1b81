// The resource.kubernetes.io/pcieRoot attribute (--expose-pcie-roots). Mirrors upstream dra-driver-cpu
// main pkg/device/builder.go addPCIeRootsAttribute (called by createGroupedCPUDeviceSlices for every
// grouping and by createCPUDeviceSlices) and v0.2.0 pkg/driver/dra_hooks.go setPCIeRootsAttribute, the
// mapping from pkg/store/pcieroot_mapper.go (ours: internal/pcie), the probe from pkg/driver/driver.go New.
package devices

import (
	"io/fs"
	"reflect"
	"testing"
	"testing/fstest"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
)

// sysfsWithRoots: pci0000:00 local to CPUs 0-3 (NUMA 0 of topo(8, 1, 1, 2)), pci0000:80 to 4-7
// (NUMA 1), pci0000:ae to every CPU.
func sysfsWithRoots() fstest.MapFS {
	return fstest.MapFS{
		"devices/system/cpu/online":                          {Data: []byte("0-7\n")},
		"devices/pci0000:00/pci_bus/0000:00/cpulistaffinity": {Data: []byte("0-3\n")},
		"devices/pci0000:80/pci_bus/0000:80/cpulistaffinity": {Data: []byte("4-7\n")},
		"devices/pci0000:ae/pci_bus/0000:ae/cpulistaffinity": {Data: []byte("0-7\n")},
		"devices/virtual/net/lo/mtu":                         {Data: []byte("65536\n")},
	}
}

func roots(t *testing.T, s Set, dev string) []string {
	t.Helper()
	for _, d := range s.Devices {
		if d.Name == dev {
			a, ok := d.Attributes[AttrPCIeRoot]
			if !ok {
				return nil
			}
			if a.StringValues == nil || a.StringValue != nil || a.IntValue != nil {
				t.Fatalf("%s: pcieRoot is not a list attribute: %+v", dev, a)
			}
			return a.StringValues
		}
	}
	t.Fatalf("no device %s", dev)
	return nil
}

func build(t *testing.T, flavor, mode, groupBy, reserved string, expose bool, sfs fs.FS) Set {
	t.Helper()
	tp := topo(8, 1, 1, 2, false)
	o := opts(flavor, mode, groupBy, reserved)
	o.ExposePCIeRoots = expose
	if err := ProbePCIe(klog.Background(), sfs, tp, &o); err != nil {
		t.Fatal(err)
	}
	return Build(tp, o)
}

func TestPCIeRootsGrouped(t *testing.T) {
	for _, flavor := range []string{config.FlavorMain, config.FlavorV02} {
		s := build(t, flavor, config.ModeGrouped, config.GroupByNUMA, "", true, sysfsWithRoots())
		if got, want := roots(t, s, "cpudevnuma000"), []string{"pci0000:00", "pci0000:ae"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s numa000: %v, want %v", flavor, got, want)
		}
		if got, want := roots(t, s, "cpudevnuma001"), []string{"pci0000:80", "pci0000:ae"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s numa001: %v, want %v", flavor, got, want)
		}
		s = build(t, flavor, config.ModeGrouped, config.GroupBySocket, "", true, sysfsWithRoots())
		if got, want := roots(t, s, "cpudevsocket000"), []string{"pci0000:00", "pci0000:80", "pci0000:ae"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s socket000: %v, want %v", flavor, got, want)
		}
		// machine: the online CPUs minus the reserved ones; reserving NUMA 1 leaves pci0000:80 out
		s = build(t, flavor, config.ModeGrouped, config.GroupByMachine, "4-7", true, sysfsWithRoots())
		if got, want := roots(t, s, "cpudevmachine"), []string{"pci0000:00", "pci0000:ae"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s machine: %v, want %v", flavor, got, want)
		}
	}
}

func TestPCIeRootsIndividual(t *testing.T) {
	s := build(t, config.FlavorMain, config.ModeIndividual, "", "", true, sysfsWithRoots())
	if got, want := roots(t, s, "cpudev005"), []string{"pci0000:80", "pci0000:ae"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cpudev005: %v, want %v", got, want)
	}
	// chunks of 64 with the flag (ResourceSliceMaxDevicesWithAdvancedFeatures)
	if got := len(Chunk(make([]resourceapi.Device, 100), Options{Flavor: config.FlavorMain, Mode: config.ModeIndividual, ExposePCIeRoots: true})); got != 2 {
		t.Errorf("100 devices with PCIe roots: %d chunks, want 2", got)
	}
}

// Negative controls: without the flag no device has the attribute even where the sysfs has roots;
// with the flag and no roots in the sysfs, none either (upstream: "PCIe domains: none detected");
// a root whose CPUs are all reserved gives no attribute to a device without its CPUs.
func TestPCIeRootsAbsent(t *testing.T) {
	off := build(t, config.FlavorMain, config.ModeGrouped, config.GroupByNUMA, "", false, sysfsWithRoots())
	none := build(t, config.FlavorMain, config.ModeGrouped, config.GroupByNUMA, "", true,
		fstest.MapFS{"devices/system/cpu/online": {Data: []byte("0-7\n")}})
	for _, s := range []Set{off, none} {
		for _, d := range s.Devices {
			if _, ok := d.Attributes[AttrPCIeRoot]; ok {
				t.Errorf("%s has %s", d.Name, AttrPCIeRoot)
			}
		}
	}
	only := fstest.MapFS{"devices/pci0000:80/pci_bus/0000:80/cpulistaffinity": {Data: []byte("4-7\n")}}
	s := build(t, config.FlavorMain, config.ModeGrouped, config.GroupByNUMA, "", true, only)
	if got := roots(t, s, "cpudevnuma000"); got != nil {
		t.Errorf("numa000 has roots %v, its CPUs are local to none", got)
	}
	// a broken root stops the driver, as upstream's New ("failed to list PCIe domains")
	o := opts(config.FlavorMain, config.ModeGrouped, config.GroupByNUMA, "")
	o.ExposePCIeRoots = true
	bad := fstest.MapFS{"devices/pci0000:00/power/control": {Data: []byte("auto\n")}}
	if err := ProbePCIe(klog.Background(), bad, topo(8, 1, 1, 2, false), &o); err == nil {
		t.Error("a root without cpulistaffinity was accepted")
	}
}
