// cdi.go owns the files the driver writes: one CDI spec per prepared claim, and the JSON
// checkpoint of prepared claims in the plugin data directory.
//
// The CDI spec mirrors upstream pkg/driver/cdi.go (AddDevice/RemoveDevice) and dra_hooks.go
// prepareDevices: cdiVersion 0.8.0, kind "dra.k8s.io/cpu", device "claim-<uid>", env
// "DRA_CPUSET_<uid>=<cpuset>", file name cdi.GenerateTransientSpecName = "dra.k8s.io-cpu_claim-<uid>.json"
// in /var/run/cdi, device ID "dra.k8s.io/cpu=claim-<uid>". The checkpoint is ours: upstream rebuilds
// its state from NRI Synchronize, which this driver does not implement.
package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

const (
	CDISpecDir      = "/var/run/cdi"
	cdiSpecVersion  = "0.8.0"
	cdiVendor       = "dra.k8s.io"
	cdiClass        = "cpu"
	CDIKind         = cdiVendor + "/" + cdiClass
	CDIEnvVarPrefix = "DRA_CPUSET"
	checkpointFile  = "testdriver-claims.json"
)

// CDIDeviceName is upstream getCDIDeviceName.
func CDIDeviceName(uid types.UID) string { return fmt.Sprintf("claim-%s", uid) }

// CDIDeviceID is the qualified CDI device name handed to the kubelet.
func CDIDeviceID(uid types.UID) string { return CDIKind + "=" + CDIDeviceName(uid) }

// CDISpecFile is the spec's file name (cdi.GenerateTransientSpecName + ".json").
func CDISpecFile(uid types.UID) string {
	return cdiVendor + "-" + cdiClass + "_" + strings.ReplaceAll(CDIDeviceName(uid), "/", "_") + ".json"
}

type cdiSpec struct {
	Version string      `json:"cdiVersion"`
	Kind    string      `json:"kind"`
	Devices []cdiDevice `json:"devices"`
}

type cdiDevice struct {
	Name           string   `json:"name"`
	ContainerEdits cdiEdits `json:"containerEdits"`
}

type cdiEdits struct {
	Env []string `json:"env,omitempty"`
}

// writeAtomic writes data to path through a temporary file and a rename.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeCDISpec writes the claim's spec; returns the env entry written.
func writeCDISpec(dir string, uid types.UID, cpus string) (string, error) {
	env := fmt.Sprintf("%s_%s=%s", CDIEnvVarPrefix, uid, cpus)
	spec := cdiSpec{Version: cdiSpecVersion, Kind: CDIKind, Devices: []cdiDevice{{
		Name: CDIDeviceName(uid), ContainerEdits: cdiEdits{Env: []string{env}}}}}
	data, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	name := CDISpecFile(uid)
	if err := writeAtomic(filepath.Join(dir, name), data, 0o644); err != nil {
		return "", fmt.Errorf("failed to write CDI spec %q: %w", name, err)
	}
	return env, nil
}

// removeCDISpec removes the claim's spec (missing is fine: unprepare is idempotent).
func removeCDISpec(dir string, uid types.UID) error {
	name := CDISpecFile(uid)
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("failed to remove CDI spec %q: %w", name, err)
	}
	return nil
}

// preparedClaim is one checkpoint entry.
type preparedClaim struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	CPUs      string `json:"cpus"`
	// Released: v0.2.0 frees a claim's CPUs when its container stops (nri.go StopContainer), before
	// the kubelet unprepares it
	Released bool `json:"released,omitempty"`
}

func loadCheckpoint(dir string) (map[types.UID]preparedClaim, error) {
	out := map[types.UID]preparedClaim{}
	data, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", filepath.Join(dir, checkpointFile), err)
	}
	return out, nil
}

func saveCheckpoint(dir string, claims map[types.UID]preparedClaim) error {
	data, err := json.MarshalIndent(claims, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, checkpointFile), data, 0o600)
}
