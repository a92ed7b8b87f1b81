// Tests of the publish mode: one simulated node's driver started from argv, mounted files and a
// fake sysfs tree, its refusals (the kubelet plugin's own exit codes and messages), publication
// through the resourceslice controller (owner = the Node) and the harness's faults.
package publish

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// hostRoot writes a 4-CPU, one-cell, no-SMT sysfs tree (as tests/cluster/fake_sysfs.py lays out
// the parts the driver reads) and returns the root holding sys/.
func hostRoot(t *testing.T, cpus int) string {
	t.Helper()
	root := t.TempDir()
	put := func(rel, text string) {
		p := filepath.Join(root, "sys", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("devices/system/cpu/online", fmt.Sprintf("0-%d", cpus-1))
	put("devices/system/cpu/smt/control", "notsupported")
	for id := range cpus {
		d := fmt.Sprintf("devices/system/cpu/cpu%d", id)
		put(d+"/topology/physical_package_id", "0")
		put(d+"/topology/core_id", fmt.Sprint(id))
		put(d+"/topology/cluster_id", fmt.Sprint(id))
		put(d+"/cache/index3/level", "3")
		put(d+"/cache/index3/shared_cpu_list", fmt.Sprintf("0-%d", cpus-1))
		put(d+"/cache/index3/id", "0")
		if err := os.Symlink("../../node/node0", filepath.Join(root, "sys", d, "node0")); err != nil {
			t.Fatal(err)
		}
	}
	put("devices/system/node/node0/cpulist", fmt.Sprintf("0-%d", cpus-1))
	return root
}

func client(nodes ...string) *fake.Clientset {
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, UID: types.UID("uid-" + n)}})
	}
	c := fake.NewClientset(objs...)
	var mu sync.Mutex
	seq := 0
	c.PrependReactor("create", "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		s := a.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceSlice)
		if s.Name == "" {
			s.Name = fmt.Sprintf("%s%d", s.GenerateName, seq)
			seq++
		}
		s.ResourceVersion = "1"
		return false, nil, nil
	})
	return c
}

func slices(t *testing.T, c *fake.Clientset, want int) []resourceapi.ResourceSlice {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := c.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) == want || time.Now().After(deadline) {
			return l.Items
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func do(s *Server, req Request) Event { return s.handle(context.Background(), req) }

// cmd/dracpu main: a flag the flavour does not define is the flag package's error, exit 2
// (upstream v0.2.0 has no --config); a config file error is "failed to load configuration", exit 1.
func TestStartRefusals(t *testing.T) {
	s := NewServer(client("node01"), io.Discard)
	root := hostRoot(t, 4)
	ev := do(s, Request{ID: 1, Op: "start", Node: "node01", Pod: "p1", Flavor: "v0.2", HostRoot: root,
		Args: []string{"--v=4", "--config=/etc/dracpu/config.yaml"}})
	if ev.OK || ev.Exit != 2 || !strings.Contains(strings.Join(ev.Log, "\n"), "flag provided but not defined: -config") {
		t.Fatalf("%+v", ev)
	}
	ev = do(s, Request{ID: 2, Op: "start", Node: "node01", Pod: "p2", HostRoot: root,
		Args:  []string{"--config=/etc/dracpu/config.yaml"},
		Files: map[string]string{"/etc/dracpu/config.yaml": "reservedCpus: 0-1\n"}})
	log := strings.Join(ev.Log, "\n")
	if ev.OK || ev.Exit != 1 || !strings.Contains(log, `"failed to load configuration"`) ||
		!strings.Contains(log, `use \"reservedCPUs\"`) {
		t.Fatalf("%+v", ev)
	}
	// the file is read through what the kubelet mounted: absent -> the driver's read error
	ev = do(s, Request{ID: 3, Op: "start", Node: "node01", Pod: "p3", HostRoot: root,
		Args: []string{"--config=/etc/dracpu/config.yaml"}})
	if ev.OK || ev.Exit != 1 || !strings.Contains(ev.Error, "no such file or directory") {
		t.Fatalf("%+v", ev)
	}
	// upstream main reads sysfsOverlay at start and exits 1 when it cannot ("failed to run"): a path
	// nothing mounted into the container fails on a simulated node as on a real one
	overlay := "/etc/dracpu/missing-overlay.yaml"
	ev = do(s, Request{ID: 4, Op: "start", Node: "node01", Pod: "p4", HostRoot: root,
		Args:  []string{"--config=/etc/dracpu/config.yaml"},
		Files: map[string]string{"/etc/dracpu/config.yaml": "sysfsOverlay: " + overlay + "\n"}})
	want := `"failed to run" err="read sysfs overlay: open ` + overlay + `: no such file or directory"`
	if ev.OK || ev.Exit != 1 || !strings.Contains(strings.Join(ev.Log, "\n"), want) {
		t.Fatalf("%+v", ev)
	}
}

// kubeletplugin Helper.PublishResources: one pool named after the node, owned by its Node; the
// config file and flags decide the devices (reserved CPU 0 from the file: capacity 3).
func TestPublishThroughTheController(t *testing.T) {
	c := client("node01")
	s := NewServer(c, io.Discard)
	defer s.node("node01").stop()
	ev := do(s, Request{ID: 1, Op: "start", Node: "node01", Pod: "p1", HostRoot: hostRoot(t, 4),
		Args:  []string{"--v=4", "--config=/etc/dracpu/config.yaml"},
		Files: map[string]string{"/etc/dracpu/config.yaml": "reservedCPUs: \"0\"\n"}})
	if !ev.OK || ev.Pool != "node01" || ev.Devices != 1 || ev.Slices != 1 {
		t.Fatalf("%+v", ev)
	}
	if ev := do(s, Request{ID: 2, Op: "publish", Node: "node01", Pod: "p1"}); !ev.OK {
		t.Fatalf("%+v", ev)
	}
	got := slices(t, c, 1)
	sl := got[0]
	q := sl.Spec.Devices[0].Capacity["dra.cpu/cpu"].Value
	if len(got) != 1 || sl.Spec.Pool.Name != "node01" || *sl.Spec.NodeName != "node01" ||
		sl.OwnerReferences[0].UID != "uid-node01" || sl.Spec.Devices[0].Name != "cpudevnuma000" || q.Value() != 3 ||
		!strings.HasPrefix(sl.Name, "00000-dra.cpu-node01-") {
		t.Fatalf("%+v", sl)
	}
	// fault bump: the same devices as the next generation
	if ev := do(s, Request{ID: 3, Op: "publish", Node: "node01", Pod: "p1", Fault: "bump"}); !ev.OK {
		t.Fatalf("%+v", ev)
	}
	deadline := time.Now().Add(10 * time.Second)
	for slices(t, c, 1)[0].Spec.Pool.Generation != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no generation 2: %+v", slices(t, c, 1))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fault partial:<k>: the devices spread over at least k+1 slices, only k written, so the pool
// never completes; the hostname override names pool and owner (nodeutil.GetHostname: lower-cased).
func TestPartialFaultAndHostnameOverride(t *testing.T) {
	c := client("other")
	s := NewServer(c, io.Discard)
	ev := do(s, Request{ID: 1, Op: "start", Node: "node01", Pod: "p1", HostRoot: hostRoot(t, 4),
		Args: []string{"--cpu-device-mode=individual", "--hostname-override=OTHER"}})
	if !ev.OK || ev.Pool != "other" || ev.Devices != 4 {
		t.Fatalf("%+v", ev)
	}
	if ev := do(s, Request{ID: 2, Op: "publish", Node: "node01", Pod: "p1", Fault: "partial:1"}); !ev.OK {
		t.Fatalf("%+v", ev)
	}
	got := slices(t, c, 1)
	if len(got) != 1 || got[0].Spec.Pool.ResourceSliceCount != 2 || len(got[0].Spec.Devices) != 2 ||
		got[0].OwnerReferences[0].UID != "uid-other" {
		t.Fatalf("%+v", got)
	}
}
