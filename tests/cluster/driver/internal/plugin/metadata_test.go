// Tests of the KEP-5304 device metadata (metadata.go): the Metadata of each prepared device, as
// upstream's pkg/driver/dra_hooks_test.go TestPrepareResourceClaims (expectedDeviceMetadata) and
// TestPrepareResourceClaimsGroupedMode (expectedGroupMetadata, dra.cpu/allocatedNumCPUs) check it,
// and, beyond upstream's unit tests, the files the library writes from it when the kubelet calls
// NodePrepareResources over gRPC (what upstream's test/e2e/metadata_test.go reads in a pod).
package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/cpuset"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/devices"
)

func intOf(t *testing.T, attrs map[string]resourceapi.DeviceAttribute, key string) int64 {
	t.Helper()
	a, ok := attrs[key]
	if !ok || a.IntValue == nil {
		t.Fatalf("attribute %s missing in %v", key, attrs)
	}
	return *a.IntValue
}

// TestPrepareResourceClaimsGroupedMode expectedGroupMetadata: the device's published attributes
// plus dra.cpu/allocatedNumCPUs = the consumed capacity; also on a repeated prepare.
func TestPrepareGroupedMetadata(t *testing.T) {
	d := newDriver(t, config.ModeGrouped, t.TempDir())
	for range 2 {
		r := prepare(t, d, claim("u1", grouped("cpudevnuma001", "4")))
		if r.Err != nil || len(r.Devices) != 1 || r.Devices[0].Metadata == nil {
			t.Fatalf("%+v", r)
		}
		attrs := r.Devices[0].Metadata.Attributes
		published, _ := d.deviceAttributes("cpudevnuma001")
		if len(attrs) != len(published)+1 {
			t.Fatalf("want the %d published attributes and allocatedNumCPUs, got %v", len(published), attrs)
		}
		for k, v := range published {
			if got, ok := attrs[string(k)]; !ok || !equalAttr(got, v) {
				t.Errorf("%s: %v, published %v", k, got, v)
			}
		}
		if n := intOf(t, attrs, "dra.cpu/allocatedNumCPUs"); n != 4 {
			t.Fatalf("allocatedNumCPUs %d", n)
		}
		if intOf(t, attrs, "resource.kubernetes.io/numaNode") != 1 || intOf(t, attrs, "dra.cpu/numaNodeID") != 1 || intOf(t, attrs, "dra.cpu/numCPUs") != 6 {
			t.Fatalf("%v", attrs)
		}
	}
}

// TestPrepareResourceClaims expectedDeviceMetadata: individual devices carry their published
// attributes and no allocatedNumCPUs (no consumed capacity).
func TestPrepareIndividualMetadata(t *testing.T) {
	d := newDriver(t, config.ModeIndividual, t.TempDir())
	r := prepare(t, d, claim("i1", individual("cpudev003")))
	if r.Err != nil || r.Devices[0].Metadata == nil {
		t.Fatalf("%+v", r)
	}
	attrs := r.Devices[0].Metadata.Attributes
	if _, ok := attrs["dra.cpu/allocatedNumCPUs"]; ok {
		t.Fatalf("individual device with allocatedNumCPUs: %v", attrs)
	}
	if intOf(t, attrs, "dra.cpu/cpuID") != 5 {
		t.Fatalf("%v", attrs)
	}
}

// v0.2.0 predates 9ae50da: no Metadata, no EnableDeviceMetadata option.
func TestV02NoMetadata(t *testing.T) {
	set := devices.Build(nodeA(), devices.Options{Flavor: config.FlavorV02, Mode: config.ModeGrouped,
		GroupBy: config.GroupByNUMA, Reserved: cpuset.New(0, 1)})
	d := New(nil, "node-a", config.Default(), config.FlavorV02, set)
	d.dataDir, d.cdiDir = t.TempDir(), t.TempDir()
	if r := prepare(t, d, claim("u1", grouped("cpudevnuma001", "4"))); r.Err != nil || r.Devices[0].Metadata != nil {
		t.Fatalf("%+v", r)
	}
	if len(metadataOptions(config.FlavorV02)) != 0 || len(metadataOptions(config.FlavorMain)) != 1 {
		t.Fatal("metadata options per flavour")
	}
}

func equalAttr(a, b resourceapi.DeviceAttribute) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// startHelper starts the library with the driver's own options (no registration service, CDI
// specs in a temporary directory) and returns a DRA gRPC client on its socket.
func startHelper(t *testing.T, d *Driver, cdiDir string) drapb.DRAPluginClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := append(d.pluginOptions(), kubeletplugin.RegistrationService(false), kubeletplugin.CDIDirectory(cdiDir),
		kubeletplugin.NodeUID("node-a-uid"), kubeletplugin.HealthService(false))
	helper, err := kubeletplugin.Start(ctx, d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(d.dataDir, "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); helper.Stop(); cancel() })
	return drapb.NewDRAPluginClient(conn)
}

// verify's claim default/dra-cpu-verify, request req-cpu, 6 CPUs of NUMA 1 (the example):
// the library writes metadata.json under the plugin dir and a CDI spec of kind dra.cpu/metadata
// mounting it where KubeVirt reads it; unprepare removes both. v0.2: neither.
func TestMetadataFilesThroughTheLibrary(t *testing.T) {
	for _, flavor := range []string{config.FlavorMain, config.FlavorV02} {
		set := devices.Build(nodeA(), devices.Options{Flavor: flavor, Mode: config.ModeGrouped,
			GroupBy: config.GroupByNUMA, Reserved: cpuset.New(0, 1)})
		c := claim("uid-1", grouped("cpudevnuma001", "6"))
		c.Namespace, c.Name, c.Status.Allocation.Devices.Results[0].Request = "default", "dra-cpu-verify", "req-cpu"
		client := fake.NewClientset(c)
		d := New(client, "node-a", config.Default(), flavor, set)
		root := t.TempDir()
		d.dataDir, d.cdiDir = filepath.Join(root, "plugins", "dra.cpu"), filepath.Join(root, "cdi")
		metaCDI := filepath.Join(root, "metacdi")
		if err := os.MkdirAll(d.dataDir, 0o750); err != nil {
			t.Fatal(err)
		}
		dra := startHelper(t, d, metaCDI)
		resp, err := dra.NodePrepareResources(context.Background(), &drapb.NodePrepareResourcesRequest{
			Claims: []*drapb.Claim{{Namespace: "default", Name: "dra-cpu-verify", Uid: "uid-1"}}})
		if err != nil || resp.Claims["uid-1"].GetError() != "" {
			t.Fatalf("%s: %v %v", flavor, err, resp)
		}
		ids := resp.Claims["uid-1"].Devices[0].CdiDeviceIds
		metaFile := filepath.Join(d.dataDir, "dra-device-metadata", "default_dra-cpu-verify", "req-cpu", "metadata.json")
		specFile := filepath.Join(metaCDI, "dra.cpu_metadata_uid-1_req-cpu.json")
		if flavor == config.FlavorV02 {
			if len(ids) != 1 || exists(metaFile) || exists(specFile) {
				t.Fatalf("v0.2 wrote metadata: %v", ids)
			}
			continue
		}
		if len(ids) != 2 || ids[0] != "dra.k8s.io/cpu=claim-uid-1" || ids[1] != "dra.cpu/metadata=uid-1_req-cpu" {
			t.Fatalf("CDI devices %v", ids)
		}
		checkMetadataFile(t, metaFile)
		checkMetadataSpec(t, specFile, metaFile)
		if _, err := dra.NodeUnprepareResources(context.Background(), &drapb.NodeUnprepareResourcesRequest{
			Claims: []*drapb.Claim{{Namespace: "default", Name: "dra-cpu-verify", Uid: "uid-1"}}}); err != nil {
			t.Fatal(err)
		}
		if exists(metaFile) || exists(specFile) {
			t.Fatal("unprepare left the metadata")
		}
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

func checkMetadataFile(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
		Requests   []struct {
			Name    string `json:"name"`
			Devices []struct {
				Driver, Pool, Name string
				Attributes         map[string]resourceapi.DeviceAttribute
			} `json:"devices"`
		} `json:"requests"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if m.APIVersion != "metadata.resource.k8s.io/v1beta1" || m.Kind != "DeviceMetadata" || m.Metadata.Name != "dra-cpu-verify" ||
		len(m.Requests) != 1 || m.Requests[0].Name != "req-cpu" || len(m.Requests[0].Devices) != 1 {
		t.Fatalf("%s", data)
	}
	dev := m.Requests[0].Devices[0]
	if dev.Driver != "dra.cpu" || dev.Pool != "node-a" || dev.Name != "cpudevnuma001" ||
		intOf(t, dev.Attributes, "dra.cpu/allocatedNumCPUs") != 6 || intOf(t, dev.Attributes, "resource.kubernetes.io/numaNode") != 1 {
		t.Fatalf("%s", data)
	}
}

func checkMetadataSpec(t *testing.T, path, metaFile string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Kind    string `json:"kind"`
		Devices []struct {
			Name           string `json:"name"`
			ContainerEdits struct {
				Mounts []struct {
					HostPath      string   `json:"hostPath"`
					ContainerPath string   `json:"containerPath"`
					Options       []string `json:"options"`
				} `json:"mounts"`
			} `json:"containerEdits"`
		} `json:"devices"`
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	want := "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/dra-cpu-verify/req-cpu/dra.cpu-metadata.json"
	if spec.Kind != "dra.cpu/metadata" || len(spec.Devices) != 1 || spec.Devices[0].Name != "uid-1_req-cpu" ||
		len(spec.Devices[0].ContainerEdits.Mounts) != 1 {
		t.Fatalf("%s", data)
	}
	m := spec.Devices[0].ContainerEdits.Mounts[0]
	if m.HostPath != metaFile || m.ContainerPath != want || len(m.Options) != 2 || m.Options[0] != "ro" {
		t.Fatalf("%s", data)
	}
}
