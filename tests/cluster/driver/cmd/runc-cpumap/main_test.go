// Tests of the runc wrapper that maps the simulated CPU ids onto the machine's (harness hardware,
// real-nodes.md "Pinning"): fake c -> real[c mod n], in create's config.json and in update.
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMap(t *testing.T) {
	for fake, want := range map[string]string{"2-3": "0-1", "2-5": "0-1", "6": "0", "7": "1", "0-11": "0-1"} {
		if got, err := Map(fake, []int{0, 1}); err != nil || got != want {
			t.Fatalf("Map(%s) = %s %v, want %s", fake, got, err, want)
		}
	}
	if got, _ := Map("5", []int{2, 5, 7}); got != "7" {
		t.Fatalf("5 mod 3 = 2 -> real 7, got %s", got)
	}
}

func TestCommandSkipsGlobalOptions(t *testing.T) {
	args := []string{"--root", "/r", "--log", "/l", "--log-format", "json", "--systemd-cgroup", "create", "--bundle", "/b", "id"}
	if at := command(args); at != 7 {
		t.Fatalf("command at %d", at)
	}
}

func TestCreateMapsTheBundle(t *testing.T) {
	dir := t.TempDir()
	spec := `{"ociVersion":"1.2.0","linux":{"resources":{"cpu":{"shares":2,"cpus":"2-3"}},"namespaces":[]}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	m := mapper{real: []int{0, 1}, log: &log, dir: dir}
	args := []string{"--root", "/r", "create", "--bundle", dir, "--pid-file", "p", "ctr1"}
	if err := m.create(args, 2); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	cpu := got["linux"].(map[string]any)["resources"].(map[string]any)["cpu"].(map[string]any)
	if cpu["cpus"] != "0-1" || cpu["shares"].(float64) != 2 || got["ociVersion"] != "1.2.0" {
		t.Fatalf("config %s", data)
	}
	if !strings.Contains(log.String(), "create ctr1 cpus 2-3 -> 0-1") {
		t.Fatalf("log %q", log.String())
	}
}

func TestUpdateMapsAResourcesFile(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "res.json")
	if err := os.WriteFile(res, []byte(`{"cpu":{"cpus":"6-11"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	m := mapper{real: []int{0, 1}, log: &log, dir: dir}
	args, err := m.update([]string{"update", "--resources", res, "ctr2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(args[2])
	if args[2] == res || !strings.Contains(string(data), `"cpus":"0-1"`) {
		t.Fatalf("args %v, document %s", args, data)
	}
	if !strings.Contains(log.String(), "update ctr2 cpus 6-11 -> 0-1") {
		t.Fatalf("log %q", log.String())
	}
	args, err = m.update([]string{"update", "--cpuset-cpus", "3", "ctr3"}, 0)
	if err != nil || args[2] != "1" {
		t.Fatalf("--cpuset-cpus: %v %v", args, err)
	}
}

func TestCreateRestrictsOOMScoreAdj(t *testing.T) {
	// the CRI-O nodes (--restrict-oom-score-adj true): a sandbox's -998 becomes the wrapper's own
	// score, a higher one is left alone, and the cpus are still mapped
	dir := t.TempDir()
	spec := `{"process":{"oomScoreAdj":-998},"linux":{"resources":{"cpu":{"cpus":"6-7"}}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	min := 0
	m := mapper{real: []int{0, 1}, log: &log, dir: dir, minOOM: &min}
	if err := m.create([]string{"--root=/r", "create", "--bundle", dir, "sandbox1"}, 1); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got["process"].(map[string]any)["oomScoreAdj"].(float64) != 0 {
		t.Fatalf("config %s", data)
	}
	if !strings.Contains(log.String(), "create sandbox1 oomScoreAdj -998 -> 0") ||
		!strings.Contains(log.String(), "create sandbox1 cpus 6-7 -> 0-1") {
		t.Fatalf("log %q", log.String())
	}
	higher := map[string]any{"process": map[string]any{"oomScoreAdj": float64(1000)}}
	if _, _, changed := RestrictOOM(higher, 0); changed {
		t.Fatal("a higher score must be left alone")
	}
}

func TestHugepageLimitsAreDroppedInCreateAndUpdate(t *testing.T) {
	// the CRI-O nodes (--drop-hugepage-limits true): no hugetlb cgroup on these machines
	dir := t.TempDir()
	spec := `{"linux":{"resources":{"hugepageLimits":[{"pageSize":"2MB","limit":0},{"pageSize":"1GB","limit":0}],"memory":{"limit":1}}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	m := mapper{real: []int{0, 1}, log: &log, dir: dir, dropHugepages: true}
	if err := m.create([]string{"create", "--bundle", dir, "c1"}, 0); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if strings.Contains(string(data), "hugepageLimits") || !strings.Contains(string(data), `"memory":{"limit":1}`) {
		t.Fatalf("config %s", data)
	}
	res := filepath.Join(dir, "res.json")
	if err := os.WriteFile(res, []byte(`{"hugepageLimits":[{"pageSize":"2MB","limit":0}],"cpu":{"shares":2}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	args, err := m.update([]string{"update", "--resources", res, "c1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(args[2])
	if args[2] == res || strings.Contains(string(got), "hugepageLimits") || !strings.Contains(string(got), `"shares":2`) {
		t.Fatalf("update args %v, resources %s", args, got)
	}
	if !strings.Contains(log.String(), "create c1 hugepageLimits dropped (2)") ||
		!strings.Contains(log.String(), "update c1 hugepageLimits dropped (1)") {
		t.Fatalf("log %q", log.String())
	}
}

func TestNoMapPassesTheDriversCpusetsToRunc(t *testing.T) {
	// a node whose CPU hardware is the machine's own (--map-cpus false: real is nil): the driver's
	// cpusets are CPUs of this kernel and reach runc unchanged, in create and update, still logged;
	// the CRI-O options still apply
	dir := t.TempDir()
	spec := `{"process":{"oomScoreAdj":-998},"linux":{"resources":{"cpu":{"cpus":"1"},"hugepageLimits":[{"pageSize":"2MB","limit":0}]}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	min := 0
	m := mapper{log: &log, dir: dir, minOOM: &min, dropHugepages: true}
	if err := m.create([]string{"create", "--bundle", dir, "c1"}, 0); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if !strings.Contains(string(data), `"cpus":"1"`) || strings.Contains(string(data), "hugepageLimits") ||
		!strings.Contains(string(data), `"oomScoreAdj":0`) {
		t.Fatalf("config %s", data)
	}
	res := filepath.Join(dir, "res.json")
	if err := os.WriteFile(res, []byte(`{"cpu":{"cpus":"0-1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	args, err := m.update([]string{"update", "--resources", res, "c2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(args[2])
	if !strings.Contains(string(got), `"cpus":"0-1"`) {
		t.Fatalf("update args %v, resources %s", args, got)
	}
	if args, err = m.update([]string{"update", "--cpuset-cpus", "7", "c3"}, 0); err != nil || args[2] != "7" {
		t.Fatalf("--cpuset-cpus: %v %v", args, err)
	}
	for _, line := range []string{"create c1 cpus 1 -> 1", "update c2 cpus 0-1 -> 0-1", "update c3 cpus 7 -> 7"} {
		if !strings.Contains(log.String(), line) {
			t.Fatalf("no %q in log %q", line, log.String())
		}
	}
	if _, err := Map("x", nil); err == nil {
		t.Fatal("a malformed cpuset must be refused without mapping too")
	}
}
