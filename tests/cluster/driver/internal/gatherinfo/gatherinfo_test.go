// Tests of the debug report against a fake $HOST_ROOT (proc and sys), each naming the test of
// upstream's internal/gatherinfo/gatherinfo_test.go (v0.2.0 and main) it mirrors, or saying it is
// this port's own.
package gatherinfo

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
)

// report is Report as read back, the driver config as main's (v0.2's JSON names are a subset).
type report struct {
	ToolVersion   ToolVersion   `json:"toolVersion"`
	LayoutVersion string        `json:"layoutVersion"`
	CPUDetails    CPUDetails    `json:"cpuDetails"`
	DriverConfig  config.Config `json:"driverConfig"`
}

// fakeHost is upstream's setupFakeHost: pid 1 "pause", pid 42 "dracpu" with cmdline (nil: none),
// one CPU (socket 0, core 0, NUMA 0, L3 0, SMT off). Returns $HOST_ROOT.
func fakeHost(t *testing.T, cmdline string) string {
	t.Helper()
	root := t.TempDir()
	t.Setenv("HOST_ROOT", root)
	put(t, root, "proc/1/comm", "pause\n")
	put(t, root, "proc/1/cmdline", "/pause\x00")
	if cmdline != "" {
		put(t, root, "proc/42/comm", "dracpu\n")
		put(t, root, "proc/42/cmdline", cmdline)
	}
	sys := "sys/devices/system/"
	put(t, root, sys+"cpu/online", "0\n")
	put(t, root, sys+"cpu/smt/control", "off\n")
	put(t, root, sys+"node/node0/cpulist", "0\n")
	for f, v := range map[string]string{"topology/physical_package_id": "0", "topology/cluster_id": "0",
		"topology/core_id": "0", "cache/index3/level": "3", "cache/index3/shared_cpu_list": "0", "cache/index3/id": "0"} {
		put(t, root, sys+"cpu/cpu0/"+f, v+"\n")
	}
	if err := os.MkdirAll(filepath.Join(root, sys, "cpu/cpu0/node0"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func put(t *testing.T, root, rel, text string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// stdout runs Run(--stdout) for the flavour and returns the document.
func stdout(t *testing.T, flavor string) (string, error) {
	t.Helper()
	var buf bytes.Buffer
	err := Run([]string{"--stdout"}, Options{Flavor: flavor, Stdout: &buf}, klog.Background())
	return buf.String(), err
}

func parse(t *testing.T, doc string) report {
	t.Helper()
	if !strings.HasPrefix(doc, "---\n") || !strings.HasSuffix(doc, "\n") {
		t.Fatalf("not one self-delimited YAML document: %q", doc)
	}
	var r report
	if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// upstream assertCommonReport: layout v1 and the one CPU of the fake host.
func assertCommon(t *testing.T, r report) {
	t.Helper()
	if r.LayoutVersion != LayoutVersion || LayoutVersion != "v1" {
		t.Fatalf("layoutVersion %q", r.LayoutVersion)
	}
	want := TopologySummary{NumCPUs: 1, NumCores: 1, NumUncoreCache: 1, NumSockets: 1, NumNUMANodes: 1}
	if r.CPUDetails.Topology != want {
		t.Fatalf("topology %+v, want %+v", r.CPUDetails.Topology, want)
	}
	wantCPU := CPU{NUMANodeCPUSet: "0", Sibling: -1, CoreType: "standard"}
	if len(r.CPUDetails.CPUs) != 1 || r.CPUDetails.CPUs[0] != wantCPU {
		t.Fatalf("cpus %+v, want [%+v]", r.CPUDetails.CPUs, wantCPU)
	}
	if r.ToolVersion.GoVersion == "" {
		t.Fatal("no goVersion (internal/buildinfo)")
	}
}

// Mirrors TestRunWritesReportFile (both versions): a new dracpu-gatherinfo-*.yaml under --output-dir,
// the driver's flags detected (a value after a space too), logging and unknown flags left out.
func TestRunWritesReportFile(t *testing.T) {
	for _, flavor := range []string{config.FlavorV02, config.FlavorMain} {
		t.Run(flavor, func(t *testing.T) {
			fakeHost(t, "/dracpu\x00--reserved-cpus=4-7\x00--cpu-device-mode\x00individual\x00--group-by=socket\x00"+
				"--hostname-override=node-a\x00--v=4\x00--logging-format=json\x00")
			dir := filepath.Join(t.TempDir(), "reports")
			if err := Run([]string{"--output-dir=" + dir}, Options{Flavor: flavor}, klog.Background()); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil || len(entries) != 1 {
				t.Fatalf("%v %v", entries, err)
			}
			name := entries[0].Name()
			if !strings.HasPrefix(name, "dracpu-gatherinfo-") || !strings.HasSuffix(name, ".yaml") {
				t.Fatalf("file %q", name)
			}
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			r := parse(t, string(data))
			assertCommon(t, r)
			c := r.DriverConfig
			if c.ReservedCPUs != "4-7" || c.CPUDeviceMode != "individual" || c.GroupBy != "socket" || c.HostnameOverride != "node-a" {
				t.Fatalf("driverConfig %+v", c)
			}
		})
	}
}

// Mirrors TestRunWritesReportToStdout (both versions).
func TestRunWritesReportToStdout(t *testing.T) {
	for _, flavor := range []string{config.FlavorV02, config.FlavorMain} {
		t.Run(flavor, func(t *testing.T) {
			fakeHost(t, "/dracpu\x00--group-by=socket\x00")
			doc, err := stdout(t, flavor)
			if err != nil {
				t.Fatal(err)
			}
			r := parse(t, doc)
			assertCommon(t, r)
			if r.DriverConfig.GroupBy != "socket" || r.DriverConfig.CPUDeviceMode != "grouped" {
				t.Fatalf("driverConfig %+v", r.DriverConfig)
			}
		})
	}
}

// The driverConfig's shape per version: v0.2.0's Config (cpuDeviceMode always written, no main-only
// keys, --config unknown) and main's (kubeletRootDir defaulted, --config read). Port's own test.
func TestDriverConfigPerFlavor(t *testing.T) {
	root := fakeHost(t, "/dracpu\x00--config=/etc/c.yaml\x00")
	put(t, root, "driver/etc/c.yaml", "apiVersion: v1alpha1\nreservedCPUs: \"0\"\n")
	link(t, filepath.Join(root, "driver"), filepath.Join(root, "proc/42/root"))
	doc, err := stdout(t, config.FlavorV02)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc, "driverConfig:\n  bindAddress: :8080\n  cpuDeviceMode: grouped\n  groupBy: numanode\nlayoutVersion:") {
		t.Fatalf("v0.2 driverConfig:\n%s", doc)
	}
	doc, err = stdout(t, config.FlavorMain)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc, "  kubeletRootDir: /var/lib/kubelet\n  reservedCPUs: \"0\"\n") {
		t.Fatalf("main driverConfig:\n%s", doc)
	}
}

// Mirrors main's TestRunReadsConfigFile: the --config file, read through /proc/<pid>/root.
func TestRunReadsConfigFile(t *testing.T) {
	root := fakeHost(t, "/dracpu\x00--config=/etc/dra-driver-cpu/driver-config.yaml\x00--group-by=socket\x00")
	put(t, root, "driver/etc/dra-driver-cpu/driver-config.yaml", "reservedCPUs: \"2-3\"\ngroupBy: machine\n")
	link(t, filepath.Join(root, "driver"), filepath.Join(root, "proc/42/root"))
	doc, err := stdout(t, config.FlavorMain)
	if err != nil {
		t.Fatal(err)
	}
	if c := parse(t, doc).DriverConfig; c.ReservedCPUs != "2-3" || c.GroupBy != "socket" { // flags win
		t.Fatalf("driverConfig %+v", c)
	}
}

// Mirrors main's ConfigSource tolerance: a config file that cannot be read or is refused is ignored
// (the flags still apply); a merged config that fails validation fails the report.
func TestConfigFileToleratedValidationNot(t *testing.T) {
	root := fakeHost(t, "/dracpu\x00--config=/etc/c.yaml\x00--reserved-cpus=1\x00")
	put(t, root, "driver/etc/c.yaml", "reservedCpus: \"2-3\"\n") // misspelt: refused
	link(t, filepath.Join(root, "driver"), filepath.Join(root, "proc/42/root"))
	doc, err := stdout(t, config.FlavorMain)
	if err != nil {
		t.Fatal(err)
	}
	if c := parse(t, doc).DriverConfig; c.ReservedCPUs != "1" {
		t.Fatalf("driverConfig %+v", c)
	}
	put(t, root, "proc/42/cmdline", "/dracpu\x00--kubelet-root-dir=relative\x00")
	if _, err := stdout(t, config.FlavorMain); err == nil || !strings.Contains(err.Error(), "failed to resolve driver config") {
		t.Fatalf("err %v", err)
	}
}

// Mirrors main's TestRunAppliesDriverSysFSOverlay and ...FromParentRelativePath: the driver's
// --sysfs-overlay, absolute through /proc/<pid>/root, relative after /proc/<pid>/cwd ("..").
func TestRunAppliesDriverSysFSOverlay(t *testing.T) {
	overlay := "/sys/devices/system/cpu/smt/control: \"on\\n\"\n" +
		"/sys/devices/system/cpu/cpu0/topology/physical_package_id: \"7\\n\"\n"
	for _, tc := range []struct{ arg, file, cwd string }{
		{"/etc/dra-driver-cpu/sysfs-overlay.yaml", "etc/dra-driver-cpu/sysfs-overlay.yaml", ""},
		{"../config/sysfs-overlay.yaml", "config/sysfs-overlay.yaml", "work"},
	} {
		root := fakeHost(t, "/dracpu\x00--sysfs-overlay="+tc.arg+"\x00")
		put(t, root, "driver/"+tc.file, overlay)
		if tc.cwd == "" {
			link(t, filepath.Join(root, "driver"), filepath.Join(root, "proc/42/root"))
		} else {
			put(t, root, "driver/"+tc.cwd+"/.keep", "")
			link(t, filepath.Join(root, "driver", tc.cwd), filepath.Join(root, "proc/42/cwd"))
		}
		doc, err := stdout(t, config.FlavorMain)
		if err != nil {
			t.Fatal(err)
		}
		r := parse(t, doc)
		if r.DriverConfig.SysFSOverlay != tc.arg || !r.CPUDetails.Topology.SMTEnabled || r.CPUDetails.CPUs[0].SocketID != 7 {
			t.Fatalf("%s: %+v", tc.arg, r)
		}
	}
	fakeHost(t, "/dracpu\x00--sysfs-overlay=/missing.yaml\x00")
	if _, err := stdout(t, config.FlavorMain); err == nil || !strings.Contains(err.Error(), "load configured sysfs overlay") {
		t.Fatalf("err %v", err)
	}
}

// Mirrors TestRunFailsWhenDriverProcessIsMissing (both versions).
func TestRunFailsWhenDriverProcessIsMissing(t *testing.T) {
	for _, flavor := range []string{config.FlavorV02, config.FlavorMain} {
		fakeHost(t, "")
		if _, err := stdout(t, flavor); err == nil || !strings.Contains(err.Error(), `failed to find running "dracpu" process`) {
			t.Fatalf("%s: err %v", flavor, err)
		}
	}
}

// Mirrors TestRunRejectsStdoutWithOutputDir (both versions).
func TestRunRejectsStdoutWithOutputDir(t *testing.T) {
	for _, flavor := range []string{config.FlavorV02, config.FlavorMain} {
		err := Run([]string{"--stdout", "--output-dir=/tmp"}, Options{Flavor: flavor}, klog.Background())
		if err == nil {
			t.Fatalf("%s: no error", flavor)
		}
	}
}

// Mirrors detectDriverConfig / ConfigSource.Apply: another program's command line, an empty one or
// a refused value leave the defaults.
func TestOtherProgramOrRefusedFlagsLeaveDefaults(t *testing.T) {
	for _, cmdline := range []string{"/bin/sh\x00--group-by=socket\x00", "/dracpu\x00--group-by=rack\x00"} {
		fakeHost(t, "/dracpu\x00")
		put(t, os.Getenv("HOST_ROOT"), "proc/42/cmdline", cmdline)
		doc, err := stdout(t, config.FlavorMain)
		if err != nil {
			t.Fatal(err)
		}
		if c := parse(t, doc).DriverConfig; c != config.Default() {
			t.Fatalf("%q: %+v", cmdline, c)
		}
	}
}

// Mirrors knownConfigArgs (up to "--", unknown flags and their values dropped); the port's own rule:
// a bare boolean flag does not take the next argument.
func TestKnownFlags(t *testing.T) {
	fs := config.NewFlagSet(config.FlavorMain, "x", nil).FlagSet
	got := knownFlags(fs, []string{"--foo", "bar", "--expose-pcie-roots", "--group-by", "socket", "pos",
		"-reserved-cpus=1", "--", "--kubeconfig=k"})
	want := []string{"--expose-pcie-roots", "--group-by", "socket", "-reserved-cpus=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Port's own: the proc root is $HOST_ROOT/proc when it exists, else /proc (the harness's HOST_ROOT
// holds only sys); this process is never taken for the driver.
func TestProcRootAndSelf(t *testing.T) {
	t.Setenv("HOST_ROOT", t.TempDir())
	if got := procRoot(); got != "/proc" {
		t.Fatalf("procRoot %q", got)
	}
	root := fakeHost(t, "/dracpu\x00")
	if got := procRoot(); got != filepath.Join(root, "proc") {
		t.Fatalf("procRoot %q", got)
	}
	if _, err := findDriverCmdline(filepath.Join(root, "proc"), "dracpu", 42); err == nil {
		t.Fatal("took itself for the driver")
	}
}
