// Tests of what the runc wrapper does to the driver's own container (driver.go): the simulated
// node's sysfs for a driver that reads /sys itself (upstream v0.2.0's online CPUs,
// pkg/driver/driver.go Start), the node's own address for `--bind-address=:<port>` where real nodes
// share a network namespace; every other container untouched.
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const driverSpec = `{"process":{"args":["/dracpu","--v=4","--cpu-device-mode=grouped","--bind-address=:8080"]},
"mounts":[{"destination":"/sys","type":"sysfs","source":"sysfs","options":["ro"]}],"linux":{}}`

func createWith(t *testing.T, m mapper, spec string) (map[string]any, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	m.log, m.dir = &log, dir
	if err := m.create([]string{"create", "--bundle", dir, "ctr1"}, 0); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	return got, log.String()
}

func TestDriverGetsTheNodesSysfsAfterItsOwn(t *testing.T) {
	got, log := createWith(t, mapper{driverSysfs: "/node/sys"}, driverSpec)
	mounts := got["mounts"].([]any)
	if len(mounts) != 3 || mounts[0].(map[string]any)["destination"] != "/sys" {
		t.Fatalf("mounts %v", mounts)
	}
	for i, d := range []string{"cpu", "node"} {
		m := mounts[i+1].(map[string]any)
		if m["destination"] != "/sys/devices/system/"+d || m["source"] != "/node/sys/devices/system/"+d ||
			m["type"] != "bind" || !strings.Contains(strings.Trim(strings.Join(strs(m["options"]), ","), ","), "ro") {
			t.Fatalf("mount %v", m)
		}
	}
	if !strings.Contains(log, "create ctr1 driver sysfs /node/sys over /sys/devices/system/cpu,/sys/devices/system/node") {
		t.Fatalf("log %q", log)
	}
}

func TestDriverBindsTheNodesAddress(t *testing.T) {
	got, log := createWith(t, mapper{bindHost: "10.1.249.2"}, driverSpec)
	args := strs(got["process"].(map[string]any)["args"])
	if args[3] != "--bind-address=10.1.249.2:8080" || args[1] != "--v=4" {
		t.Fatalf("args %v", args)
	}
	if !strings.Contains(log, "create ctr1 driver bind-address :8080 -> 10.1.249.2:8080") {
		t.Fatalf("log %q", log)
	}
	spec := map[string]any{"process": map[string]any{"args": []any{"/dracpu", "--bind-address", ":9090"}}}
	if from, to, ok := BindHost(spec, "10.0.0.1"); !ok || from != ":9090" || to != "10.0.0.1:9090" {
		t.Fatalf("separate value: %s %s %v", from, to, ok)
	}
	named := map[string]any{"process": map[string]any{"args": []any{"/dracpu", "--bind-address=127.0.0.1:8080"}}}
	if _, _, ok := BindHost(named, "10.0.0.1"); ok {
		t.Fatal("an address naming a host must stay")
	}
}

func TestOtherContainersAreUntouched(t *testing.T) {
	spec := `{"process":{"args":["/pause"]},"mounts":[{"destination":"/sys","type":"sysfs"}],"linux":{}}`
	got, log := createWith(t, mapper{driverSysfs: "/node/sys", bindHost: "10.1.249.2"}, spec)
	if len(got["mounts"].([]any)) != 1 || log != "" {
		t.Fatalf("a container not running /dracpu changed: %v %q", got, log)
	}
	gatherinfo := map[string]any{"process": map[string]any{"args": []any{"/dracpu-gatherinfo"}}}
	if IsDriver(gatherinfo) {
		t.Fatal("only /dracpu is the driver")
	}
}

func strs(v any) []string {
	var out []string
	for _, a := range v.([]any) {
		out = append(out, a.(string))
	}
	return out
}
