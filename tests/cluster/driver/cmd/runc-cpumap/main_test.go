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
