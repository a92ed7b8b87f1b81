// Tests of machine grouping's opaque cpuset config (opaque.go), in both flavours, each naming the
// upstream test it mirrors: pkg/driver/dra_hooks_test.go TestPrepareResourceClaimsGroupedMode
// (the MachineGrouped_* cases) and TestOpaqueConfigAllocation (main and v0.2.0 differ where noted),
// and api/opaque_config_test.go TestParseOpaqueConfig.
package plugin

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/cpuset"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/devices"
)

// machineDriver: node A (12 CPUs) grouped by machine, CPUs 0-1 reserved.
func machineDriver(t *testing.T, flavor string) *Driver {
	t.Helper()
	cfg := config.Default()
	cfg.CPUDeviceMode, cfg.GroupBy = config.ModeGrouped, config.GroupByMachine
	set := devices.Build(nodeA(), devices.Options{Flavor: flavor, Mode: config.ModeGrouped,
		GroupBy: config.GroupByMachine, Reserved: cpuset.New(0, 1)})
	d := New(nil, "node-a", cfg, flavor, set)
	dir := t.TempDir()
	d.dataDir, d.cdiDir = dir, dir+"/cdi"
	return d
}

// machine is one result on cpudevmachine for request req consuming n CPUs.
func machine(req, n string) resourceapi.DeviceRequestAllocationResult {
	r := grouped("cpudevmachine", n)
	r.Request = req
	return r
}

// opaque is a claim-sourced config of driver for requests holding raw.
func opaque(driver, raw string, requests ...string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{Source: resourceapi.AllocationConfigSourceClaim, Requests: requests,
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(raw)}}}}
}

func cpusetCfg(set string) string {
	return `{"apiVersion": "v1alpha1", "cpuConfig": {"cpuset": "` + set + `"}}`
}

func withConfig(c *resourceapi.ResourceClaim, cfgs ...resourceapi.DeviceAllocationConfiguration) *resourceapi.ResourceClaim {
	c.Status.Allocation.Devices.Config = cfgs
	return c
}

// TestPrepareResourceClaimsGroupedMode MachineGrouped_MissingOpaqueError: without a config the
// claim fails with upstream's message (the one verify's pod meets), in both flavours, and
// nothing is prepared.
func TestMachineGroupedMissingOpaqueError(t *testing.T) {
	for _, flavor := range []string{config.FlavorMain, config.FlavorV02} {
		d := machineDriver(t, flavor)
		c := claim("u1", machine("req-cpu", "6"))
		r := prepare(t, d, c)
		want := `opaque config: request "req-cpu" is targeted by 0 configurations, must be targeted by exactly 1`
		if r.Err == nil || r.Err.Error() != want || len(r.Devices) != 0 {
			t.Fatalf("%s: %+v", flavor, r)
		}
		if len(d.claims) != 0 {
			t.Fatalf("%s: claim stored: %v", flavor, d.claims)
		}
	}
}

// MachineGrouped_DualSocketHT_OpaqueOverrideSuccess / _OpaqueOverrideUnavailableError (reserved
// CPUs) / _OpaqueOverrideSizeMismatchError, in both flavours.
func TestMachineGroupedOpaqueOverride(t *testing.T) {
	for _, flavor := range []string{config.FlavorMain, config.FlavorV02} {
		d := machineDriver(t, flavor)
		ok := withConfig(claim("ok", machine("req-cpu", "2")), opaque(DriverName, cpusetCfg("2-3"), "req-cpu"))
		if r := prepare(t, d, ok); r.Err != nil || cdiEnv(t, d, "ok") != "DRA_CPUSET_ok=2-3" {
			t.Fatalf("%s: %+v", flavor, r)
		}
		for uid, tc := range map[string]struct{ set, n, err string }{
			"reserved": {"0-1", "2", "contain reserved cores: 0-1"},
			"size":     {"4-6", "2", "opaque config cpuset size 3 does not match requested capacity 2"},
		} {
			c := withConfig(claim(uid, machine("req-cpu", tc.n)), opaque(DriverName, cpusetCfg(tc.set), "req-cpu"))
			if r := prepare(t, d, c); r.Err == nil || !strings.Contains(r.Err.Error(), tc.err) {
				t.Errorf("%s %s: %+v", flavor, uid, r)
			}
		}
	}
}

// TestOpaqueConfigAllocation: the cases both flavours share.
func TestOpaqueConfigAllocation(t *testing.T) {
	for _, flavor := range []string{config.FlavorMain, config.FlavorV02} {
		for _, tc := range []struct {
			name   string
			claims []*resourceapi.ResourceClaim
			want   map[string]string // uid -> cpuset, or "!" + part of the error
		}{
			{"Multiple CPU DRA claims - no conflicts", []*resourceapi.ResourceClaim{
				withConfig(claim("c1", machine("r", "2")), opaque(DriverName, cpusetCfg("2,8"), "r")),
				withConfig(claim("c2", machine("r", "2")), opaque(DriverName, cpusetCfg("3,9"), "r"))},
				map[string]string{"c1": "2,8", "c2": "3,9"}},
			{"Multiple CPU DRA claims with overlapping cores conflict", []*resourceapi.ResourceClaim{
				withConfig(claim("c1", machine("r", "2")), opaque(DriverName, cpusetCfg("2,8"), "r")),
				withConfig(claim("c2", machine("r", "2")), opaque(DriverName, cpusetCfg("8-9"), "r"))},
				map[string]string{"c1": "2,8", "c2": "!conflict with already allocated claims"}},
			{"CPU allocation with other device claim configurations inside the same slice", []*resourceapi.ResourceClaim{
				withConfig(claim("c1", machine("r", "2")), opaque("dra.gpu", `"gpuId": "gpu-0"}`, "r"),
					opaque(DriverName, cpusetCfg("4,10"), "r"))},
				map[string]string{"c1": "4,10"}},
			{"CPU allocation with incorrect fields in raw data", []*resourceapi.ResourceClaim{
				withConfig(claim("c1", machine("r", "2")), opaque(DriverName, `{"apiVersion": "v1beta1", "cpuConfig": {"cpuset": "2,8"}}`, "r"))},
				map[string]string{"c1": "!unsupported opaque config apiVersion"}},
			{"Incorrect source", []*resourceapi.ResourceClaim{func() *resourceapi.ResourceClaim {
				cfg := opaque(DriverName, cpusetCfg("2,8"), "r")
				cfg.Source = resourceapi.AllocationConfigSourceClass
				return withConfig(claim("c1", machine("r", "2")), cfg)
			}()}, map[string]string{"c1": "!opaque config: configuration from DeviceClass is not supported by this driver, custom cpusets must be defined per ResourceClaim request"}},
			{"CPU config block with non-matching request name is ignored", []*resourceapi.ResourceClaim{
				withConfig(claim("c1", machine("r", "2")), opaque(DriverName, cpusetCfg("2,8"), "different-request-name"))},
				map[string]string{"c1": `!opaque config: request "r" is targeted by 0 configurations, must be targeted by exactly 1`}},
			{"CPU allocation with offline cores", []*resourceapi.ResourceClaim{
				withConfig(claim("c1", machine("r", "2")), opaque(DriverName, cpusetCfg("99-100"), "r"))},
				map[string]string{"c1": "!contain offline cores: 99-100"}},
			{"CPU allocation with reserved cores", []*resourceapi.ResourceClaim{
				withConfig(claim("c1", machine("r", "2")), opaque(DriverName, cpusetCfg("0,2"), "r"))},
				map[string]string{"c1": "!contain reserved cores: 0"}},
			{"CPU allocation with overlapping cores inside the same claim", []*resourceapi.ResourceClaim{
				withConfig(claim("c1", machine("r1", "2"), machine("r2", "2")),
					opaque(DriverName, cpusetCfg("2-3"), "r1"), opaque(DriverName, cpusetCfg("3-4"), "r2"))},
				map[string]string{"c1": "!are already assigned to another device in this claim"}},
			{"two configs for one request", []*resourceapi.ResourceClaim{
				withConfig(claim("c1", machine("r", "2")), opaque(DriverName, cpusetCfg("2-3"), "r"), opaque(DriverName, cpusetCfg("4-5"), "r"))},
				map[string]string{"c1": `!request "r" is targeted by 2 configurations`}},
			{"a config without parameters", []*resourceapi.ResourceClaim{
				withConfig(claim("c1", machine("r", "2")), opaque(DriverName, "", "r"))},
				map[string]string{"c1": `!no opaque cpuset configuration found for allocation request "r"`}},
		} {
			checkOpaque(t, machineDriver(t, flavor), flavor+": "+tc.name, tc.claims, tc.want)
		}
	}
}

// TestOpaqueConfigAllocation where the flavours differ: main matches through
// resourceclaim.ConfigForResult ("CPU config block with empty requests list applies to all
// requests", "... listing multiple requests applies to the targeted request", "... targeting
// parent request applies to selected subrequest"); v0.2.0 refuses a block not naming exactly one
// request ("... empty requests list is rejected", "... targeting multiple requests is rejected").
func TestOpaqueConfigAllocationFlavours(t *testing.T) {
	sub := machine("parent/sub", "2")
	cases := []struct {
		name  string
		claim *resourceapi.ResourceClaim
		main  string
		v02   string
	}{
		{"empty requests list", withConfig(claim("c1", machine("r", "2")), opaque(DriverName, cpusetCfg("2,8"))),
			"2,8", "!opaque config: parameters block must target exactly 1 request using the 'requests' field, found 0"},
		{"multiple requests", withConfig(claim("c1", machine("r", "2")), opaque(DriverName, cpusetCfg("2,8"), "r", "req-2")),
			"2,8", "!opaque config: parameters block must target exactly 1 request using the 'requests' field, found 2"},
		{"parent request of a subrequest", withConfig(claim("c1", sub), opaque(DriverName, cpusetCfg("2,8"), "parent")),
			"2,8", `!opaque config: request "parent/sub" is targeted by 0 configurations`},
	}
	for _, tc := range cases {
		checkOpaque(t, machineDriver(t, config.FlavorMain), "main: "+tc.name, []*resourceapi.ResourceClaim{tc.claim}, map[string]string{"c1": tc.main})
		checkOpaque(t, machineDriver(t, config.FlavorV02), "v0.2: "+tc.name, []*resourceapi.ResourceClaim{tc.claim}, map[string]string{"c1": tc.v02})
	}
}

func checkOpaque(t *testing.T, d *Driver, name string, claims []*resourceapi.ResourceClaim, want map[string]string) {
	t.Helper()
	for _, c := range claims {
		r := prepare(t, d, c)
		w := want[string(c.UID)]
		if msg, isErr := strings.CutPrefix(w, "!"); isErr {
			if r.Err == nil || !strings.Contains(r.Err.Error(), msg) {
				t.Errorf("%s: %s: want error %q, got %+v", name, c.UID, msg, r)
			}
			continue
		}
		if r.Err != nil {
			t.Errorf("%s: %s: %v", name, c.UID, r.Err)
		} else if env := cdiEnv(t, d, string(c.UID)); env != "DRA_CPUSET_"+string(c.UID)+"="+w {
			t.Errorf("%s: %s: %s", name, c.UID, env)
		}
	}
}

// api/opaque_config_test.go TestParseOpaqueConfig.
func TestParseOpaqueConfig(t *testing.T) {
	if set, err := parseOpaqueConfig([]byte(cpusetCfg("0-3,5"))); err != nil || set.String() != "0-3,5" {
		t.Fatalf("%v %v", set, err)
	}
	for raw, want := range map[string]string{
		cpusetCfg(""):    "opaque config: cpuConfig.cpuset is empty or missing",
		cpusetCfg("abc"): `opaque config: failed to parse cpuset "abc"`,
		`{"apiVersion": "v1beta1", "cpuConfig": {"cpuset": "0"}}`: `unsupported opaque config apiVersion: "v1beta1"`,
		`{"cpuConfig": {"cpuset": "0"}}`:                          `unsupported opaque config apiVersion: ""`,
		`{bad`:                                                    "failed to unmarshal opaque config",
	} {
		if _, err := parseOpaqueConfig([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want %q, got %v", raw, want, err)
		}
	}
}
