// Package config owns the simulated driver's configuration: the release flavour (DRACPU_FLAVOR),
// the command line per flavour, main's strict config.yaml and the precedence
// default < file < every flag set on the command line.
//
// It mirrors upstream dra-driver-cpu: internal/driverconfig (config.go, defaults.go, flags.go,
// load.go, cfgfile.go, schema.go) on main, internal/driverconfig/config.go at v0.2.0, and the
// Python simulator's former sim_config.py (parse_config_file, resolve). Error texts are
// upstream's, so a bad config crash-loops a real pod with the message upstream would print.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2/textlogger"
)

// Flavours: the release behaviour baked into an image (env DRACPU_FLAVOR).
const (
	FlavorV02  = "v0.2"
	FlavorMain = "main"

	ModeGrouped    = "grouped"
	ModeIndividual = "individual"
	GroupBySocket  = "socket"
	GroupByNUMA    = "numanode"
	GroupByMachine = "machine"

	DefaultKubeletRootDir = "/var/lib/kubelet"
	ConfigAPIVersion      = "v1alpha1"
)

// FlavorFromEnv reads DRACPU_FLAVOR ("v0.2" or "main", default "main").
func FlavorFromEnv() (string, error) {
	switch v := strings.TrimSpace(os.Getenv("DRACPU_FLAVOR")); v {
	case "", FlavorMain:
		return FlavorMain, nil
	case FlavorV02, "v0.2.0":
		return FlavorV02, nil
	default:
		return "", fmt.Errorf("DRACPU_FLAVOR=%q: must be %q or %q", v, FlavorV02, FlavorMain)
	}
}

// Config is upstream main's driverconfig.Config (same JSON names, same omitempty).
type Config struct {
	Kubeconfig                            string `json:"kubeconfig,omitempty"`
	HostnameOverride                      string `json:"hostnameOverride,omitempty"`
	BindAddress                           string `json:"bindAddress,omitempty"`
	ReservedCPUs                          string `json:"reservedCPUs,omitempty"`
	CPUDeviceMode                         string `json:"cpuDeviceMode,omitempty"`
	GroupBy                               string `json:"groupBy,omitempty"`
	ExposePCIeRoots                       bool   `json:"exposePCIeRoots,omitempty"`
	SysFSOverlay                          string `json:"sysfsOverlay,omitempty"`
	KubeletRootDir                        string `json:"kubeletRootDir,omitempty"`
	PublishNodeAllocatableResourceMapping bool   `json:"publishNodeAllocatableResourceMapping,omitempty"`
}

// Default is upstream defaults.go Default().
func Default() Config {
	return Config{BindAddress: ":8080", CPUDeviceMode: ModeGrouped, GroupBy: GroupByNUMA,
		KubeletRootDir: DefaultKubeletRootDir}
}

// Dump renders every field, zero values included (upstream config.go Dump).
func (c Config) Dump() string {
	return fmt.Sprintf("kubeconfig=%q hostnameOverride=%q bindAddress=%q reservedCPUs=%q cpuDeviceMode=%q "+
		"groupBy=%q exposePCIeRoots=%t sysfsOverlay=%q kubeletRootDir=%q publishNodeAllocatableResourceMapping=%t",
		c.Kubeconfig, c.HostnameOverride, c.BindAddress, c.ReservedCPUs, c.CPUDeviceMode, c.GroupBy,
		c.ExposePCIeRoots, c.SysFSOverlay, c.KubeletRootDir, c.PublishNodeAllocatableResourceMapping)
}

// Validate is upstream flags.go Config.Validate (main validates the merged config).
func (c Config) Validate() error {
	if c.CPUDeviceMode != ModeGrouped && c.CPUDeviceMode != ModeIndividual {
		return fmt.Errorf("invalid cpuDeviceMode %q: must be %q or %q", c.CPUDeviceMode, ModeGrouped, ModeIndividual)
	}
	if c.CPUDeviceMode == ModeGrouped && c.GroupBy != GroupBySocket && c.GroupBy != GroupByNUMA && c.GroupBy != GroupByMachine {
		return fmt.Errorf("invalid groupBy %q: must be %q, %q, or %q", c.GroupBy, GroupBySocket, GroupByNUMA, GroupByMachine)
	}
	if c.KubeletRootDir == "" {
		return fmt.Errorf("invalid kubeletRootDir: must not be empty")
	}
	if !filepath.IsAbs(c.KubeletRootDir) {
		return fmt.Errorf("invalid kubeletRootDir %q: must be an absolute path", c.KubeletRootDir)
	}
	return nil
}

// choiceValue is upstream's cpuDeviceModeValue / groupByValue: Set refuses other values ("" too).
type choiceValue struct {
	value   *string
	allowed []string
	want    string
}

func (v *choiceValue) String() string {
	if v == nil || v.value == nil {
		return ""
	}
	return *v.value
}

func (v *choiceValue) Set(s string) error {
	for _, a := range v.allowed {
		if s == a {
			*v.value = s
			return nil
		}
	}
	return fmt.Errorf("invalid value: %q, must be %s", s, v.want)
}

// flagToJSONKey is upstream load.go flagToJSONKey.
var flagToJSONKey = map[string]string{
	"kubeconfig": "kubeconfig", "hostname-override": "hostnameOverride", "bind-address": "bindAddress",
	"reserved-cpus": "reservedCPUs", "cpu-device-mode": "cpuDeviceMode", "group-by": "groupBy",
	"expose-pcie-roots": "exposePCIeRoots", "sysfs-overlay": "sysfsOverlay", "kubelet-root-dir": "kubeletRootDir",
}

// Parsed is the outcome of the command line: the flag set (for Visit), the values it holds and
// the --config path (main only).
type Parsed struct {
	Flavor     string
	FlagSet    *flag.FlagSet
	Flags      Config
	ConfigFile string
	Logging    *textlogger.Config
}

// NewFlagSet registers the flavour's flags like upstream's cmd/dracpu/app.go init() +
// ctxlog.AddFlags (textlogger: -v, -vmodule).
func NewFlagSet(flavor, name string, out io.Writer) *Parsed {
	p := &Parsed{Flavor: flavor, Flags: Default(), Logging: textlogger.NewConfig()}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	c := &p.Flags
	if flavor == FlavorMain {
		fs.StringVar(&p.ConfigFile, "config", "", "Path to a YAML driver configuration file.")
	}
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "absolute path to the kubeconfig file")
	fs.StringVar(&c.HostnameOverride, "hostname-override", c.HostnameOverride, "If non-empty, will be used as the name of the Node.")
	fs.StringVar(&c.BindAddress, "bind-address", c.BindAddress, "The address to bind the HTTP server for /healthz")
	fs.StringVar(&c.ReservedCPUs, "reserved-cpus", c.ReservedCPUs, "cpuset of CPUs to be excluded from ResourceSlice.")
	fs.Var(&choiceValue{&c.CPUDeviceMode, []string{ModeGrouped, ModeIndividual}, "grouped or individual"},
		"cpu-device-mode", "Sets the mode for exposing CPU devices: grouped or individual.")
	fs.Var(&choiceValue{&c.GroupBy, []string{GroupBySocket, GroupByNUMA, GroupByMachine}, "socket, numanode or machine"},
		"group-by", "When --cpu-device-mode=grouped, sets the criteria for grouping CPUs.")
	fs.BoolVar(&c.ExposePCIeRoots, "expose-pcie-roots", c.ExposePCIeRoots, "Expose PCIe roots (here: only the 64-device chunking).")
	if flavor == FlavorMain {
		fs.StringVar(&c.KubeletRootDir, "kubelet-root-dir", c.KubeletRootDir, "The kubelet root directory.")
		fs.StringVar(&c.SysFSOverlay, "sysfs-overlay", c.SysFSOverlay, "Path to a YAML file containing sysfs file overlays.")
	}
	p.Logging.AddFlags(fs)
	p.FlagSet = fs
	return p
}

// Parse parses args (without the program name). A flag error is returned as printed by the flag
// package ("flag provided but not defined: -config", "invalid value ... for flag -group-by: ...").
func Parse(flavor string, args []string, out io.Writer) (*Parsed, error) {
	p := NewFlagSet(flavor, "dracpu", out)
	if err := p.FlagSet.Parse(args); err != nil {
		return p, err
	}
	return p, nil
}

// Resolve is upstream main's driverconfig.Resolve(FromFile(--config), FromFlags): defaults, then
// the file, then every flag visited (set on the command line), then validation. v0.2 has no file
// and no merged validation: the flag values are the config.
func (p *Parsed) Resolve() (Config, error) { return p.ResolveWith(os.ReadFile) }

// ResolveWith is Resolve reading the --config file through readFile (the publish mode of
// simulated nodes hands in the files the kubelet mounted into the driver container).
func (p *Parsed) ResolveWith(readFile func(string) ([]byte, error)) (Config, error) {
	if p.Flavor != FlavorMain {
		c := p.Flags
		c.KubeletRootDir = DefaultKubeletRootDir
		return c, nil
	}
	cfg := Default()
	if p.ConfigFile != "" {
		m, err := BuildConfMapWith(p.ConfigFile, readFile)
		if err == nil {
			err = applyMap(&cfg, m)
		}
		if err != nil {
			return Config{}, fmt.Errorf("cannot apply %s: %w", p.ConfigFile, err)
		}
	}
	overrides := map[string]any{}
	p.FlagSet.Visit(func(f *flag.Flag) {
		key, ok := flagToJSONKey[f.Name]
		if !ok {
			return
		}
		if g, ok := f.Value.(flag.Getter); ok {
			overrides[key] = g.Get()
		} else {
			overrides[key] = f.Value.String()
		}
	})
	if err := applyMap(&cfg, overrides); err != nil {
		return Config{}, fmt.Errorf("cannot apply flags: %w", err)
	}
	if cfg.KubeletRootDir != "" {
		cfg.KubeletRootDir = filepath.Clean(cfg.KubeletRootDir)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("cannot validate config: %w", err)
	}
	return cfg, nil
}

// applyMap is upstream load.go applyMap: JSON round trip, unknown keys refused.
func applyMap(cfg *Config, m map[string]any) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("marshaling config map: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("applying config map: %w", err)
	}
	return nil
}

// IsHelp reports a -h/-help request (flag.ErrHelp: upstream exits 0 after the usage).
func IsHelp(err error) bool { return errors.Is(err, flag.ErrHelp) }
