// Tests of flags, config file and precedence. Each names the upstream behaviour it mirrors
// (internal/driverconfig on main, v0.2.0's flags); the expected texts are those of
// the simulator's former Python copy of these rules (sim_config.py, verified against the real binary,
// removed in issue 31),
// without the "failed to load configuration: " log message prefix.
package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func resolve(t *testing.T, flavor string, args ...string) (Config, error) {
	t.Helper()
	p, err := Parse(flavor, args, io.Discard)
	if err != nil {
		return Config{}, err
	}
	return p.Resolve()
}

// cfgfile.go buildConfMap + load.go applyMap/Resolve: strict YAML, apiVersion, canonical
// spelling, excluded fields, unknown fields, JSON types.
func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"reservedCpus: \"1\"\n", `field "reservedCpus" is spelled differently from the schema; use "reservedCPUs"`},
		// sigs.k8s.io/yaml v1.6.0 (upstream's) prints yaml.v2's TypeError on two lines; the former sim_config.py
		// shortens it to one ("yaml: line 2: key ...").
		{"a: 1\na: 2\n", "parsing @: error converting YAML to JSON: yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"},
		{"apiVersion: v2\n", `unsupported apiVersion "v2", want "v1alpha1"`},
		{"bindAddress: x\n", `field "bindAddress" is not configurable via the config file; use helm chart's healthzPort instead`},
		{"BindAddress: x\n", `field "BindAddress" is not configurable via the config file; use helm chart's healthzPort instead`},
		{"kubeletRootDir: /x\n", `field "kubeletRootDir" is not configurable via the config file; use the chart's top-level kubeletRootDir value, or --kubelet-root-dir when running the binary directly`},
		{"kind: x\n", `applying config map: json: unknown field "kind"`},
		{"reservedCPUs: 1\n", `applying config map: json: cannot unmarshal number into Go struct field Config.reservedCPUs of type string`},
		{"- a\n", `parsing @: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}`},
	} {
		path := writeFile(t, tc.text)
		_, err := resolve(t, FlavorMain, "--config="+path)
		want := "cannot apply " + path + ": " + strings.ReplaceAll(tc.want, "@", path)
		if err == nil || err.Error() != want {
			t.Errorf("%q:\n got  %v\n want %s", tc.text, err, want)
		}
	}
}

// load.go Resolve -> Config.Validate: values from the file are validated after merging.
func TestValidateMerged(t *testing.T) {
	_, err := resolve(t, FlavorMain, "--config="+writeFile(t, "groupBy: foo\n"))
	if err == nil || err.Error() != `cannot validate config: invalid groupBy "foo": must be "socket", "numanode", or "machine"` {
		t.Fatal(err)
	}
	_, err = resolve(t, FlavorMain, "--config="+writeFile(t, "cpuDeviceMode: x\n"))
	if err == nil || err.Error() != `cannot validate config: invalid cpuDeviceMode "x": must be "grouped" or "individual"` {
		t.Fatal(err)
	}
	if _, err = resolve(t, FlavorMain, "--kubelet-root-dir=rel"); err == nil || !strings.Contains(err.Error(), "must be an absolute path") {
		t.Fatal(err)
	}
	// individual mode does not validate groupBy
	if c, err := resolve(t, FlavorMain, "--config="+writeFile(t, "cpuDeviceMode: individual\ngroupBy: foo\n")); err != nil || c.CPUDeviceMode != ModeIndividual {
		t.Fatal(err)
	}
}

// Resolve(FromFile, FromFlags): default < file < every flag set on the command line, even an
// empty one; null in the file leaves the default.
func TestPrecedence(t *testing.T) {
	file := writeFile(t, "reservedCPUs: \"0-1\"\ngroupBy: socket\nhostnameOverride: Node-A\ncpuDeviceMode: null\n")
	c, err := resolve(t, FlavorMain, "--config="+file)
	if err != nil || c.ReservedCPUs != "0-1" || c.GroupBy != GroupBySocket || c.HostnameOverride != "Node-A" || c.CPUDeviceMode != ModeGrouped {
		t.Fatalf("file: %+v %v", c, err)
	}
	c, err = resolve(t, FlavorMain, "--config="+file, "--reserved-cpus=", "--group-by=machine", "--hostname-override=b")
	if err != nil || c.ReservedCPUs != "" || c.GroupBy != GroupByMachine || c.HostnameOverride != "b" {
		t.Fatalf("flags: %+v %v", c, err)
	}
	c, err = resolve(t, FlavorMain)
	if err != nil || c != Default() {
		t.Fatalf("default: %+v %v", c, err)
	}
	c, err = resolve(t, FlavorMain, "--kubelet-root-dir=/data/kubelet/", "--expose-pcie-roots=false", "--bind-address=:9090")
	if err != nil || c.KubeletRootDir != "/data/kubelet" || c.BindAddress != ":9090" {
		t.Fatalf("%+v %v", c, err)
	}
}

// flags.go cpuDeviceModeValue/groupByValue Set: other values, "" too, are a flag error.
func TestFlagChoices(t *testing.T) {
	for _, f := range []FlavorCase{{FlavorMain, "--group-by=", `invalid value "" for flag -group-by: invalid value: "", must be socket, numanode or machine`},
		{FlavorV02, "--cpu-device-mode=x", `invalid value "x" for flag -cpu-device-mode: invalid value: "x", must be grouped or individual`}} {
		_, err := resolve(t, f.flavor, f.arg)
		if err == nil || err.Error() != f.want {
			t.Errorf("%s: got %v", f.arg, err)
		}
	}
}

// FlavorCase is one flavour/argument/expected error.
type FlavorCase struct{ flavor, arg, want string }

// v0.2.0 cmd/dracpu/app.go: no --config, --kubelet-root-dir, --sysfs-overlay ("flag provided but
// not defined: -config", reference "A 0.2.0 image has no --config flag"); its flags are the config.
func TestV02Flags(t *testing.T) {
	for _, name := range []string{"config", "kubelet-root-dir", "sysfs-overlay"} {
		_, err := resolve(t, FlavorV02, "--"+name+"=x")
		if err == nil || err.Error() != "flag provided but not defined: -"+name {
			t.Errorf("%s: %v", name, err)
		}
	}
	c, err := resolve(t, FlavorV02, "--v=4", "--cpu-device-mode=individual", "--group-by=socket", "--reserved-cpus=0-1",
		"--hostname-override=n", "--expose-pcie-roots", "--bind-address=:8080")
	if err != nil || c.CPUDeviceMode != ModeIndividual || c.ReservedCPUs != "0-1" || !c.ExposePCIeRoots || c.KubeletRootDir != DefaultKubeletRootDir {
		t.Fatalf("%+v %v", c, err)
	}
}

// The chart's main/0.3.0 command line parses (daemonset.yaml: --v, --bind-address,
// --expose-pcie-roots=<bool>, --kubelet-root-dir, --config).
func TestChartArgsMain(t *testing.T) {
	file := writeFile(t, "apiVersion: v1alpha1\ncpuDeviceMode: grouped\ngroupBy: numanode\nreservedCPUs: \"0\"\n")
	c, err := resolve(t, FlavorMain, "--v=4", "--bind-address=:8080", "--expose-pcie-roots=false", "--kubelet-root-dir=/var/lib/kubelet", "--config="+file)
	if err != nil || c.ReservedCPUs != "0" {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := resolve(t, FlavorMain, "--config=/nonexistent/config.yaml"); err == nil || !strings.HasPrefix(err.Error(), "cannot apply /nonexistent/config.yaml: reading /nonexistent/config.yaml: open") {
		t.Fatal(err)
	}
}

// DRACPU_FLAVOR: v0.2 or main (default), anything else refused.
func TestFlavorFromEnv(t *testing.T) {
	for in, want := range map[string]string{"": FlavorMain, "main": FlavorMain, "v0.2": FlavorV02} {
		t.Setenv("DRACPU_FLAVOR", in)
		if got, err := FlavorFromEnv(); err != nil || got != want {
			t.Errorf("%q: %s %v", in, got, err)
		}
	}
	t.Setenv("DRACPU_FLAVOR", "v9")
	if _, err := FlavorFromEnv(); err == nil {
		t.Error("v9 must be refused")
	}
}

// cfgfile.go rejectNonCanonicalKeys reports every misspelled key, sorted, in one message; load.go
// applyMap refuses a value of the wrong JSON type for a bool field too; an empty cpuDeviceMode
// from the file fails the merged validation (ported from the simulator's test_sim_upstream.py
// when its Python rules went, issue 31).
func TestConfigFileSeveralSpellingsBoolTypeEmptyMode(t *testing.T) {
	for text, want := range map[string]string{
		"GroupBy: machine\ncpudevicemode: grouped\n":            `field "GroupBy" is spelled differently from the schema; use "groupBy"; field "cpudevicemode" is spelled differently from the schema; use "cpuDeviceMode"`,
		"publishNodeAllocatableResourceMapping: 'yes please'\n": `applying config map: json: cannot unmarshal string into Go struct field Config.publishNodeAllocatableResourceMapping of type bool`,
	} {
		path := writeFile(t, text)
		if _, err := resolve(t, FlavorMain, "--config="+path); err == nil || err.Error() != "cannot apply "+path+": "+want {
			t.Errorf("%q: %v", text, err)
		}
	}
	_, err := resolve(t, FlavorMain, "--config="+writeFile(t, "cpuDeviceMode: ''\n"))
	if err == nil || !strings.HasPrefix(err.Error(), `cannot validate config: invalid cpuDeviceMode ""`) {
		t.Fatal(err)
	}
}
