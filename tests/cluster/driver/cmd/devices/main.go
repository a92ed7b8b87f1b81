// Command devices prints, without any cluster, the devices and chunks the driver would publish
// for a sysfs tree: `devices <host_root> [driver flags]` (flavour from DRACPU_FLAVOR like the
// driver). It owns only this cross-check output: JSON {"flavor", "devices" (resource.k8s.io/v1
// Device JSON), "chunks" (device names per slice), "cpus" (device -> cpuset)}. A config or
// topology error is printed to stderr with exit 1 (flag errors exit 2).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/devices"
	"kubevirtci.io/dra-cpu/testdriver/internal/topology"
)

type output struct {
	Flavor  string               `json:"flavor"`
	Config  config.Config        `json:"config"`
	Devices []resourceapi.Device `json:"devices"`
	Chunks  [][]string           `json:"chunks"`
	CPUs    map[string]string    `json:"cpus"`
	Summary string               `json:"summary"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: devices <host_root> [driver flags]")
	}
	hostRoot := os.Args[1]
	flavor, err := config.FlavorFromEnv()
	if err != nil {
		fail("%v", err)
	}
	p, err := config.Parse(flavor, os.Args[2:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	logger := textlogger.NewLogger(p.Logging)
	klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
	cfg, err := p.Resolve()
	if err != nil {
		fail("failed to load configuration: %v", err)
	}
	opts, err := devices.OptionsFrom(cfg, flavor)
	if err != nil {
		fail("%v", err)
	}
	sfs, err := topology.WithOverlay(os.DirFS(path.Join(hostRoot, "sys")), cfg.SysFSOverlay)
	if err != nil {
		fail("%v", err)
	}
	topo, err := topology.Read(logger, sfs)
	if err != nil {
		fail("%v", err)
	}
	if err := devices.ProbePCIe(logger, sfs, topo, &opts); err != nil {
		fail("%v", err)
	}
	set := devices.Build(topo, opts)
	out := output{Flavor: flavor, Config: cfg, Devices: set.Devices, Chunks: [][]string{}, CPUs: map[string]string{},
		Summary: topo.Summary()}
	if out.Devices == nil {
		out.Devices = []resourceapi.Device{}
	}
	for _, c := range set.Chunks {
		names := make([]string, 0, len(c))
		for _, d := range c {
			names = append(names, d.Name)
		}
		out.Chunks = append(out.Chunks, names)
	}
	for name, cpus := range set.CPUs {
		out.CPUs[name] = cpus.String()
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fail("%v", err)
	}
}
