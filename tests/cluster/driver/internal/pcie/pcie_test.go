// Tests named after upstream dra-driver-cpu main pkg/pcie/pciescan_test.go (TestIsPCIeRootName,
// TestFindOrphanedCPUs), pkg/pcie/pciescan_amd64_test.go (TestPCIeDomainsFromFS) and
// pkg/store/pcieroot_mapper_test.go (TestGetPCIeRootsForCPU); the sysfs trees are this file's own.
package pcie

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"
)

// tree is a sysfs with the given roots (name -> cpulistaffinity) and a few entries that are not roots.
func tree(roots map[string]string) fstest.MapFS {
	m := fstest.MapFS{
		"devices/system/cpu/online":     {Data: []byte("0-7\n")},
		"devices/virtual/net/lo/mtu":    {Data: []byte("65536\n")},
		"devices/platform/serial8250":   {Mode: fs.ModeDir},
		"devices/pnp0/00:00/id":         {Data: []byte("PNP0b00\n")},
		"devices/LNXSYSTM:00/hid":       {Data: []byte("LNXSYSTM\n")},
		"devices/pci0000:0G/not-a-root": {Data: []byte("x")},
	}
	for name, cpus := range roots {
		bus := strings.TrimPrefix(name, "pci")
		m["devices/"+name+"/pci_bus/"+bus+"/cpulistaffinity"] = &fstest.MapFile{Data: []byte(cpus + "\n")}
	}
	return m
}

func TestIsPCIeRootName(t *testing.T) {
	for name, want := range map[string]bool{
		"pci0000:00": true, "pci0000:3a": true, "pci0001:ff": true, "pci10de:d7": true,
		"pci0000:0G": false, "pci0000:AB": false, "pci0000-00": false, "pci000:000": false,
		"pci0000:000": false, "pcix000:00": false, "pcie000:00": true, "0000:00": false, "": false, "system": false,
	} {
		if got := IsRootName(name); got != want {
			t.Errorf("IsRootName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestPCIeDomainsFromFS(t *testing.T) {
	logger := klog.Background()
	got, err := DomainsFromFS(logger, fstest.MapFS{"devices": {Mode: fs.ModeDir}})
	if err != nil || len(got) != 0 {
		t.Fatalf("no roots: %v, %v", got, err)
	}
	got, err = DomainsFromFS(logger, tree(map[string]string{"pci0000:00": "0-3", "pci0000:80": "4-7"}))
	want := []Domain{{"pci0000:00", cpuset.New(0, 1, 2, 3)}, {"pci0000:80", cpuset.New(4, 5, 6, 7)}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("two roots: got %v, %v; want %v", got, err, want)
	}
	// a root without its bus's cpulistaffinity is an error, as upstream (the driver does not start)
	bad := tree(map[string]string{"pci0000:00": "0-3"})
	bad["devices/pci0000:17/power/control"] = &fstest.MapFile{Data: []byte("auto\n")}
	if _, err := DomainsFromFS(logger, bad); err == nil {
		t.Fatal("a root without pci_bus/<bus>/cpulistaffinity was accepted")
	}
	if _, err := DomainsFromFS(logger, tree(map[string]string{"pci0000:00": "zero"})); err == nil {
		t.Fatal("an unparsable cpulistaffinity was accepted")
	}
	if _, err := DomainsFromFS(logger, fstest.MapFS{}); err == nil {
		t.Fatal("a sysfs without devices/ was accepted")
	}
}

func TestFindOrphanedCPUs(t *testing.T) {
	doms := []Domain{{"pci0000:00", cpuset.New(0, 1)}, {"pci0000:80", cpuset.New(4)}}
	if got := FindOrphanedCPUs(doms, cpuset.New(0, 1, 2, 3, 4)); !got.Equals(cpuset.New(2, 3)) {
		t.Fatalf("got %s, want 2-3", got)
	}
	if got := FindOrphanedCPUs(nil, cpuset.New(0, 1)); !got.Equals(cpuset.New(0, 1)) {
		t.Fatalf("no roots: got %s, want 0-1", got)
	}
}

func TestGetPCIeRootsForCPU(t *testing.T) {
	logger := klog.Background()
	// the machine this repository's tests run on has one root local to CPUs 0-1; a two-socket
	// machine has roots per socket; a root may be local to every CPU (cpulistaffinity collapses to NUMA)
	m, err := Probe(logger, tree(map[string]string{
		"pci0000:00": "0-3", "pci0000:17": "0-3", "pci0000:80": "4-7", "pci0000:ae": "0-7",
	}), cpuset.New(0, 1, 2, 3, 4, 5, 6, 7))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cpus []int
		want []string
	}{
		{[]int{1}, []string{"pci0000:00", "pci0000:17", "pci0000:ae"}},
		{[]int{5, 6}, []string{"pci0000:80", "pci0000:ae"}},
		{[]int{7, 0}, []string{"pci0000:00", "pci0000:17", "pci0000:80", "pci0000:ae"}},
		{[]int{9}, nil}, // not online: no root
	} {
		if got := m.RootsForCPUs(tc.cpus...); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("RootsForCPUs(%v) = %v, want %v", tc.cpus, got, tc.want)
		}
	}
	none, err := Probe(logger, tree(nil), cpuset.New(0, 1))
	if err != nil || none.RootsForCPUs(0, 1) != nil {
		t.Fatalf("no roots: %v, %v", none.RootsForCPUs(0, 1), err)
	}
	var off *Mapper // --expose-pcie-roots=false: no mapper, no roots
	if off.RootsForCPUs(0) != nil || off.Domains() != nil {
		t.Fatal("a nil mapper gave roots")
	}
	if _, err := Probe(logger, fstest.MapFS{}, cpuset.New(0)); err == nil || !strings.HasPrefix(err.Error(), "failed to list PCIe domains: ") {
		t.Fatalf("got %v, want upstream's \"failed to list PCIe domains: ...\"", err)
	}
}
