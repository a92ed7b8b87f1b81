// Tests of the sysfs reader against temporary trees laid out like Linux (and like
// tests/cluster/fake_sysfs.py), each naming the upstream behaviour (pkg/cpuinfo/cpuinfo.go) it mirrors.
package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"
)

type fakeCPU struct{ socket, core, cluster, numa, l3 int }

// writeTree writes a minimal Linux-style tree; smt "" leaves smt/control out.
func writeTree(t *testing.T, cpus []fakeCPU, smt string) string {
	t.Helper()
	root := t.TempDir()
	put := func(rel, text string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("devices/system/cpu/online", fmt.Sprintf("0-%d", len(cpus)-1))
	if smt != "" {
		put("devices/system/cpu/smt/control", smt)
	}
	cells := map[int][]int{}
	for id, c := range cpus {
		d := fmt.Sprintf("devices/system/cpu/cpu%d", id)
		put(d+"/topology/physical_package_id", fmt.Sprint(c.socket))
		put(d+"/topology/core_id", fmt.Sprint(c.core))
		put(d+"/topology/cluster_id", fmt.Sprint(c.cluster))
		put(d+"/cache/index0/level", "1")
		put(d+"/cache/index0/id", "99")
		put(d+"/cache/index3/level", "3")
		put(d+"/cache/index3/shared_cpu_list", fmt.Sprintf("0-%d", len(cpus)-1))
		put(d+"/cache/index3/id", fmt.Sprint(c.l3))
		if err := os.Symlink(fmt.Sprintf("../../node/node%d", c.numa), filepath.Join(root, d, fmt.Sprintf("node%d", c.numa))); err != nil {
			t.Fatal(err)
		}
		cells[c.numa] = append(cells[c.numa], id)
	}
	for n, ids := range cells {
		put(fmt.Sprintf("devices/system/node/node%d/cpulist", n), fmt.Sprintf("%d-%d", ids[0], ids[len(ids)-1]))
	}
	return root
}

func read(t *testing.T, root string) *Topology {
	t.Helper()
	topo, err := Read(klog.Background(), os.DirFS(root))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// Mirrors GetCPUInfos/populateTopologyInfo: socket from physical_package_id, core from core_id,
// NUMA node from the cpuN/nodeM entry, L3 id from cache/index*/id of the level-3 cache.
func TestReadTwoCells(t *testing.T) {
	var cpus []fakeCPU
	for i := 0; i < 12; i++ {
		cpus = append(cpus, fakeCPU{socket: 0, core: i, cluster: i, numa: i / 6, l3: 0})
	}
	topo := read(t, writeTree(t, cpus, "notsupported"))
	if len(topo.CPUs) != 12 || topo.Online.String() != "0-11" || topo.NumCores != 12 {
		t.Fatalf("got %s", topo.Summary())
	}
	if c := topo.CPUs[7]; c.NUMA != 1 || c.CoreID != 7 || c.L3 != 0 || c.Sibling != -1 || c.NUMACPUs.String() != "6-11" || c.CoreType != "standard" {
		t.Fatalf("cpu7 = %+v", c)
	}
	if topo.SMTEnabled {
		t.Fatal("notsupported must give smtEnabled=false")
	}
}

// Mirrors populateCpuSiblings: CPUs sharing (socket, cluster, core) are siblings, 2-way only;
// cluster_id 65535 is the kernel's undefined cluster (-1).
func TestSiblings(t *testing.T) {
	var cpus []fakeCPU
	for i := 0; i < 8; i++ {
		cpus = append(cpus, fakeCPU{socket: 0, core: i / 2, cluster: 65535, numa: 0})
	}
	topo := read(t, writeTree(t, cpus, "on"))
	if topo.CPUs[0].Sibling != 1 || topo.CPUs[5].Sibling != 4 || topo.CPUs[0].ClusterID != -1 || topo.NumCores != 4 || !topo.SMTEnabled {
		t.Fatalf("got %+v %s", topo.CPUs[0], topo.Summary())
	}
	var four []fakeCPU
	for i := 0; i < 8; i++ {
		four = append(four, fakeCPU{socket: 0, core: i / 4, numa: 0})
	}
	if topo := read(t, writeTree(t, four, "on")); topo.CPUs[0].Sibling != -1 {
		t.Fatalf("4-way SMT must not give siblings: %+v", topo.CPUs[0])
	}
}

// Mirrors IsSMTEnabled + GetCPUTopology's fallback (reference: "smtEnabled falls back to more
// logical CPUs than cores when smt/control is missing or unknown").
func TestSMTControl(t *testing.T) {
	smtCPUs := []fakeCPU{{core: 0}, {core: 0}, {core: 1}, {core: 1}}
	for _, tc := range []struct {
		control string
		want    bool
	}{{"on", true}, {"off", false}, {"forceoff", false}, {"notsupported", false}, {"notimplemented", false},
		{"", true}, {"weird", true}} {
		if got := read(t, writeTree(t, smtCPUs, tc.control)).SMTEnabled; got != tc.want {
			t.Errorf("smt/control %q: smtEnabled=%t, want %t", tc.control, got, tc.want)
		}
	}
	noSMT := []fakeCPU{{core: 0}, {core: 1}}
	if read(t, writeTree(t, noSMT, "")).SMTEnabled {
		t.Error("missing control and one thread per core must give false")
	}
}

// Mirrors populateTopologyInfo: a CPU without a NUMA entry is skipped ("skipping CPU due to
// incomplete topology"), and the L3 id falls back to the lowest shared CPU when "id" is missing.
func TestIncompleteAndL3Fallback(t *testing.T) {
	root := writeTree(t, []fakeCPU{{core: 0, l3: 5}, {core: 1, l3: 5}, {core: 2, l3: 5}}, "off")
	if err := os.Remove(filepath.Join(root, "devices/system/cpu/cpu2/node0")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "devices/system/cpu/cpu1/cache/index3/id")); err != nil {
		t.Fatal(err)
	}
	topo := read(t, root)
	if _, ok := topo.CPUs[2]; ok || len(topo.CPUs) != 2 || topo.Online.String() != "0-2" {
		t.Fatalf("cpu2 must be skipped, online kept: %s", topo.Summary())
	}
	if topo.CPUs[0].L3 != 5 || topo.CPUs[1].L3 != 0 {
		t.Fatalf("L3 ids %d %d", topo.CPUs[0].L3, topo.CPUs[1].L3)
	}
}

// Mirrors GetCPUInfos' hybrid detection: devices/cpu_atom/cpus lists the e-cores.
func TestHybrid(t *testing.T) {
	root := writeTree(t, []fakeCPU{{core: 0}, {core: 1}}, "off")
	if err := os.MkdirAll(filepath.Join(root, "devices/cpu_atom"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "devices/cpu_atom/cpus"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topo := read(t, root)
	if topo.CPUs[0].CoreType != "p-core" || topo.CPUs[1].CoreType != "e-core" {
		t.Fatalf("%+v", topo.CPUs)
	}
}

// Mirrors cpuinfo.OnlineCPUs: a missing online file fails (driver.New "failed to get online CPUs").
func TestMissingOnline(t *testing.T) {
	if _, err := Read(klog.Background(), os.DirFS(t.TempDir())); err == nil {
		t.Fatal("want an error")
	}
}

// Mirrors pkg/sysfs/overlay.go: overlay files replace host files and must live beneath /sys.
func TestOverlay(t *testing.T) {
	root := writeTree(t, []fakeCPU{{core: 0}, {core: 1}}, "off")
	ov := filepath.Join(t.TempDir(), "overlay.yaml")
	if err := os.WriteFile(ov, []byte("/sys/devices/system/cpu/smt/control: \"on\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := WithOverlay(os.DirFS(root), ov)
	if err != nil {
		t.Fatal(err)
	}
	if topo, err := Read(klog.Background(), fsys); err != nil || !topo.SMTEnabled {
		t.Fatalf("overlay not applied: %v", err)
	}
	if err := os.WriteFile(ov, []byte("/proc/x: y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WithOverlay(os.DirFS(root), ov); err == nil {
		t.Fatal("a path outside /sys must be refused")
	}
}
