// Tests of claim preparation, each naming the upstream behaviour (pkg/driver/dra_hooks.go,
// cdi.go) it mirrors or where it deliberately differs (CPU picking, checkpoint).
package plugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/cpuset"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/devices"
	"kubevirtci.io/dra-cpu/testdriver/internal/topology"
)

// nodeA is the reference example: 12 CPUs, NUMA 0 = 0-5, NUMA 1 = 6-11.
func nodeA() *topology.Topology {
	t := &topology.Topology{CPUs: map[int]topology.CPU{}, Online: cpuset.New()}
	for c := 0; c < 12; c++ {
		t.CPUs[c] = topology.CPU{ID: c, CoreID: c, NUMA: c / 6, Sibling: -1, CoreType: "standard"}
	}
	t.Online = cpuset.New(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
	return t
}

func newDriver(t *testing.T, mode, dataDir string) *Driver {
	t.Helper()
	cfg := config.Default()
	cfg.CPUDeviceMode = mode
	set := devices.Build(nodeA(), devices.Options{Flavor: config.FlavorMain, Mode: mode, GroupBy: config.GroupByNUMA,
		Reserved: cpuset.New(0, 1)})
	d := New(nil, "node-a", cfg, config.FlavorMain, set)
	d.dataDir, d.cdiDir = dataDir, filepath.Join(dataDir, "cdi")
	claims, err := loadCheckpoint(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	d.claims = claims
	return d
}

func claim(uid string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-" + uid, UID: types.UID(uid)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: results}}},
	}
}

func grouped(dev, n string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: "req", Driver: DriverName, Pool: "node-a", Device: dev,
		ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{devices.CPUResource: resource.MustParse(n)}}
}

func individual(dev string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: "req", Driver: DriverName, Pool: "node-a", Device: dev}
}

func prepare(t *testing.T, d *Driver, c *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	t.Helper()
	res, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if err != nil {
		t.Fatal(err)
	}
	return res[c.UID]
}

// cdiEnv reads the CDI spec written for uid (cdi.go AddDevice: kind dra.k8s.io/cpu, device
// claim-<uid>, env DRA_CPUSET_<uid>=<cpuset>).
func cdiEnv(t *testing.T, d *Driver, uid string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(d.cdiDir, "dra.k8s.io-cpu_claim-"+uid+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec cdiSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Kind != "dra.k8s.io/cpu" || spec.Version != "0.8.0" || spec.Devices[0].Name != "claim-"+uid {
		t.Fatalf("spec %s", data)
	}
	return spec.Devices[0].ContainerEdits.Env[0]
}

// prepareGroupedResourceClaim: ConsumedCapacity dra.cpu/cpu CPUs from the device's CPUs not held
// by other claims (here lowest ids first; upstream TakeByTopologyNUMAPacked), CDI ID per result.
func TestPrepareGrouped(t *testing.T) {
	d := newDriver(t, config.ModeGrouped, t.TempDir())
	r := prepare(t, d, claim("u1", grouped("cpudevnuma000", "3")))
	if r.Err != nil || len(r.Devices) != 1 || r.Devices[0].CDIDeviceIDs[0] != "dra.k8s.io/cpu=claim-u1" ||
		r.Devices[0].PoolName != "node-a" || r.Devices[0].Requests[0] != "req" {
		t.Fatalf("%+v", r)
	}
	if env := cdiEnv(t, d, "u1"); env != "DRA_CPUSET_u1=2-4" {
		t.Fatal(env)
	}
	if r := prepare(t, d, claim("u2", grouped("cpudevnuma000", "2"))); r.Err == nil {
		t.Fatal("only CPU 5 is left in NUMA 0: want an error")
	}
	if r := prepare(t, d, claim("u3", grouped("cpudevnuma000", "1"), grouped("cpudevnuma001", "2"))); r.Err != nil || cdiEnv(t, d, "u3") != "DRA_CPUSET_u3=5-7" {
		t.Fatalf("%+v", r)
	}
	// idempotent: the same claim again reuses its CPUs
	if r := prepare(t, d, claim("u1", grouped("cpudevnuma000", "3"))); r.Err != nil || cdiEnv(t, d, "u1") != "DRA_CPUSET_u1=2-4" {
		t.Fatalf("%+v", r)
	}
}

// prepareGroupedResourceClaim errors: missing, non-positive, fractional capacity.
func TestPrepareGroupedBadCapacity(t *testing.T) {
	d := newDriver(t, config.ModeGrouped, t.TempDir())
	noCap := individual("cpudevnuma000")
	for uid, res := range map[string]resourceapi.DeviceRequestAllocationResult{
		"a": noCap, "b": grouped("cpudevnuma000", "0"), "c": grouped("cpudevnuma000", "1500m")} {
		if r := prepare(t, d, claim(uid, res)); r.Err == nil {
			t.Errorf("%s: want an error", uid)
		}
	}
	if r := prepare(t, d, &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{UID: "x"}}); r.Err == nil || !strings.Contains(r.Err.Error(), "has no allocation") {
		t.Fatalf("%+v", r)
	}
}

// prepareResourceClaim: individual devices map to their cpuID; overlap with another claim refused;
// results of other drivers are ignored (an empty result).
func TestPrepareIndividual(t *testing.T) {
	d := newDriver(t, config.ModeIndividual, t.TempDir())
	if r := prepare(t, d, claim("i1", individual("cpudev000"), individual("cpudev009"))); r.Err != nil || len(r.Devices) != 2 || cdiEnv(t, d, "i1") != "DRA_CPUSET_i1=2,11" {
		t.Fatalf("%+v", r)
	}
	r := prepare(t, d, claim("i2", individual("cpudev009")))
	if r.Err == nil || !strings.Contains(r.Err.Error(), "overlapping device assignment") {
		t.Fatalf("%+v", r)
	}
	other := individual("gpu0")
	other.Driver = "gpu.example.com"
	if r := prepare(t, d, claim("i3", other)); r.Err != nil || len(r.Devices) != 0 {
		t.Fatalf("%+v", r)
	}
	if r := prepare(t, d, claim("i4", individual("cpudev999"))); r.Err == nil {
		t.Fatal("unknown device: want an error")
	}
}

// UnprepareResourceClaims removes the CDI spec and frees the CPUs (idempotent); the checkpoint
// (ours, not upstream's) keeps prepared claims over a restart.
func TestUnprepareAndRestart(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, config.ModeGrouped, dir)
	prepare(t, d, claim("u1", grouped("cpudevnuma001", "6")))
	d2 := newDriver(t, config.ModeGrouped, dir) // a restart
	if r := prepare(t, d2, claim("u2", grouped("cpudevnuma001", "1"))); r.Err == nil {
		t.Fatal("after a restart the CPUs of u1 must still be held")
	}
	obj := kubeletplugin.NamespacedObject{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c-u1"}, UID: "u1"}
	for i := 0; i < 2; i++ {
		res, err := d2.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{obj})
		if err != nil || res["u1"] != nil {
			t.Fatalf("%v %v", res, err)
		}
	}
	if _, err := os.Stat(filepath.Join(d2.cdiDir, CDISpecFile("u1"))); !os.IsNotExist(err) {
		t.Fatal("CDI spec must be gone")
	}
	if r := prepare(t, d2, claim("u2", grouped("cpudevnuma001", "6"))); r.Err != nil || cdiEnv(t, d2, "u2") != "DRA_CPUSET_u2=6-11" {
		t.Fatalf("%+v", r)
	}
}

// driver.go checkSocketPathFits: the registrar socket path must fit a Unix socket path.
func TestSocketPathFits(t *testing.T) {
	if err := checkSocketPathFits("/var/lib/kubelet", DriverName); err != nil {
		t.Fatal(err)
	}
	if err := checkSocketPathFits("/"+strings.Repeat("x", 100), DriverName); err == nil {
		t.Fatal("want an error")
	}
	if PluginDataDir("/var/lib/kubelet", DriverName) != "/var/lib/kubelet/plugins/dra.cpu" || RegistrarDir("/r") != "/r/plugins_registry" {
		t.Fatal("paths")
	}
}
