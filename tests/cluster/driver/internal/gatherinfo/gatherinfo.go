// Package gatherinfo owns the driver's debug report, `dracpu gatherinfo` (main) and
// `/dracpu-gatherinfo` (argv[0]): one YAML document with the layout version, the build's Go and VCS
// data, the CPU topology as the driver reads it ($HOST_ROOT/sys, internal/topology) and the config of
// the driver running beside it, found in /proc and rebuilt from its command line.
//
// It ports upstream dra-driver-cpu internal/gatherinfo/gatherinfo.go, per flavour:
//   - v0.2 (v0.2.0's file): flag set "dracpu-gatherinfo" (exit on a flag error); v0.2.0's
//     driverconfig.Config (cpuDeviceMode always written), the driver's flags over the defaults, any
//     problem reading or parsing them leaving the defaults; no sysfs overlay.
//   - main (upstream main's file, de98098): flag set "dracpu gatherinfo" (-h returns); Resolve over
//     its gatherinfo ConfigSource: defaults, the driver's --config read in its filesystem
//     (/proc/<pid>/root, /proc/<pid>/cwd; ignored when unreadable or refused), its flags, validation
//     (an error fails the report); its --sysfs-overlay (same lookup) applies to the topology.
//
// Both: --stdout and --output-dir exclusive; else a new dracpu-gatherinfo-<time>-<pid>.yaml under
// --output-dir or a temporary file, its path logged; the driver is the first process whose comm is
// "dracpu". Differences (README "Not mirrored"): the proc root is $HOST_ROOT/proc only when it
// exists, else /proc (HOST_ROOT holds only the harness's sysfs); this process is never taken for the
// driver; a bare boolean flag on the driver's command line does not consume the next argument.
package gatherinfo

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/topology"
)

const (
	// LayoutVersion is the report's layout version (upstream gatherinfo.LayoutVersion).
	LayoutVersion = "v1"
	// CommandName is the argv[0] basename that selects the report (upstream's Dockerfile copy).
	CommandName       = "dracpu-gatherinfo"
	driverProcessName = "dracpu"
)

// Report is upstream's Report. DriverConfig holds a config.Config (main) or a V02Config (v0.2).
type Report struct {
	ToolVersion   ToolVersion `json:"toolVersion"`
	LayoutVersion string      `json:"layoutVersion"`
	CPUDetails    CPUDetails  `json:"cpuDetails"`
	DriverConfig  any         `json:"driverConfig"`
}

// CPUDetails is upstream's CPUDetails.
type CPUDetails struct {
	Topology TopologySummary `json:"topology"`
	CPUs     []CPU           `json:"cpus"`
}

// TopologySummary is upstream's TopologySummary (cpuinfo.CPUTopology's counts).
type TopologySummary struct {
	NumCPUs        int  `json:"numCPUs"`
	NumCores       int  `json:"numCores"`
	NumUncoreCache int  `json:"numUncoreCache"`
	NumSockets     int  `json:"numSockets"`
	NumNUMANodes   int  `json:"numNUMANodes"`
	SMTEnabled     bool `json:"smtEnabled"`
}

// CPU is upstream's CPU (one cpuinfo.CPUInfo).
type CPU struct {
	CPUID          int    `json:"cpuID"`
	CoreID         int    `json:"coreID"`
	SocketID       int    `json:"socketID"`
	ClusterID      int    `json:"clusterID"`
	NUMANodeID     int    `json:"numaNodeID"`
	NUMANodeCPUSet string `json:"numaNodeCPUSet,omitempty"`
	Sibling        int    `json:"sibling"`
	CoreType       string `json:"coreType,omitempty"`
	UncoreCacheID  int    `json:"uncoreCacheID"`
}

// ToolVersion is upstream's ToolVersion (internal/buildinfo).
type ToolVersion struct {
	GoVersion   string `json:"goVersion,omitempty"`
	VCSRevision string `json:"vcsRevision,omitempty"`
	VCSTime     string `json:"vcsTime,omitempty"`
}

// V02Config is v0.2.0's driverconfig.Config as it is written: cpuDeviceMode without omitempty.
type V02Config struct {
	Kubeconfig       string `json:"kubeconfig,omitempty"`
	HostnameOverride string `json:"hostnameOverride,omitempty"`
	BindAddress      string `json:"bindAddress,omitempty"`
	ReservedCPUs     string `json:"reservedCPUs,omitempty"`
	CPUDeviceMode    string `json:"cpuDeviceMode"`
	GroupBy          string `json:"groupBy,omitempty"`
	ExposePCIeRoots  bool   `json:"exposePCIeRoots,omitempty"`
}

// Options: the flavour, upstream's OutputParentDir (the --output-dir default) and DriverCmdlinePath
// (else found under the proc root), and where --stdout writes (nil: os.Stdout).
type Options struct {
	Flavor            string
	OutputParentDir   string
	DriverCmdlinePath string
	Stdout            io.Writer
}

// Run is upstream's Run: parses args, builds the report, writes it to stdout or a new file.
func Run(args []string, opts Options, logger klog.Logger) error {
	var fs *flag.FlagSet
	if opts.Flavor == config.FlavorV02 {
		fs = flag.NewFlagSet(CommandName, flag.ExitOnError)
	} else {
		fs = flag.NewFlagSet("dracpu gatherinfo", flag.ContinueOnError)
	}
	outputDir := fs.String("output-dir", opts.OutputParentDir, "Parent directory for debug artifacts (default: temporary directory)")
	toStdout := fs.Bool("stdout", false, "Write the YAML report to stdout instead of a file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *toStdout && *outputDir != "" {
		return fmt.Errorf("--stdout and --output-dir cannot be used together")
	}
	cmdline := opts.DriverCmdlinePath
	if cmdline == "" {
		found, err := findDriverCmdline(procRoot(), driverProcessName, os.Getpid())
		if err != nil {
			return fmt.Errorf("failed to find running %q process: %w", driverProcessName, err)
		}
		cmdline = found
	}
	report, err := collect(logger, opts.Flavor, cmdline)
	if err != nil {
		return err
	}
	data, err := marshal(report)
	if err != nil {
		return err
	}
	if *toStdout {
		out := io.Writer(os.Stdout)
		if opts.Stdout != nil {
			out = opts.Stdout
		}
		if _, err := out.Write(data); err != nil {
			return fmt.Errorf("failed to write YAML: %w", err)
		}
		return nil
	}
	f, name, err := createOutputFile(*outputDir, time.Now(), os.Getpid())
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		err = fmt.Errorf("failed to write YAML: %w", werr)
	} else if cerr != nil {
		err = fmt.Errorf("failed to close %s: %w", name, cerr)
	}
	if err != nil {
		if rerr := os.Remove(name); rerr != nil && !os.IsNotExist(rerr) {
			return errors.Join(err, fmt.Errorf("failed to clean up %s: %w", name, rerr))
		}
		return err
	}
	logger.Info("debug info collected", "path", name)
	return nil
}

// procRoot is upstream's $HOST_ROOT/proc, or /proc when HOST_ROOT has none (the harness's HOST_ROOT
// holds only the node's sysfs).
func procRoot() string {
	p := path.Join(os.Getenv("HOST_ROOT"), "/proc")
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		return "/proc"
	}
	return p
}

// findDriverCmdline is upstream's findDriverCmdlinePath: <root>/<pid>/cmdline of the first numeric
// entry whose comm is name (self, this process, skipped).
func findDriverCmdline(root, name string, self int) (string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() || pid == self {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(root, e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == name {
			return filepath.Join(root, e.Name(), "cmdline"), nil
		}
	}
	return "", fmt.Errorf("process %q not found under %s", name, root)
}

// createOutputFile is upstream's: a temporary file, or <dir>/dracpu-gatherinfo-<time>-<pid>.yaml
// created exclusively (an existing one is an error).
func createOutputFile(dir string, now time.Time, pid int) (*os.File, string, error) {
	if dir == "" {
		f, err := os.CreateTemp("", "dracpu-gatherinfo-*.yaml")
		if err != nil {
			return nil, "", fmt.Errorf("failed to create temp file: %w", err)
		}
		return f, f.Name(), nil
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("failed to create output dir: %w", err)
	}
	name := filepath.Join(dir, fmt.Sprintf("dracpu-gatherinfo-%s-%d.yaml", now.Format("20060102-150405"), pid))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, "", fmt.Errorf("output file already exists: %s", name)
	} else if err != nil {
		return nil, "", fmt.Errorf("failed to open %s: %w", name, err)
	}
	return f, name, nil
}

// collect is upstream's collectReport for the flavour.
func collect(logger klog.Logger, flavor, cmdline string) (Report, error) {
	sfs := topology.Host()
	var driverConfig any
	if flavor == config.FlavorV02 {
		c := detectFlags(flavor, cmdline).Flags
		driverConfig = V02Config{Kubeconfig: c.Kubeconfig, HostnameOverride: c.HostnameOverride,
			BindAddress: c.BindAddress, ReservedCPUs: c.ReservedCPUs, CPUDeviceMode: c.CPUDeviceMode,
			GroupBy: c.GroupBy, ExposePCIeRoots: c.ExposePCIeRoots}
	} else {
		cfg, err := resolveMain(cmdline)
		if err != nil {
			return Report{}, fmt.Errorf("failed to resolve driver config: %w", err)
		}
		overlay := cfg.SysFSOverlay
		if overlay != "" {
			overlay = driverPath(cmdline, overlay)
		}
		if sfs, err = topology.WithOverlay(sfs, overlay); err != nil {
			return Report{}, fmt.Errorf("load configured sysfs overlay %q from driver filesystem: %w", cfg.SysFSOverlay, err)
		}
		driverConfig = cfg
	}
	topo, err := topology.Read(logger, sfs)
	if err != nil {
		return Report{}, fmt.Errorf("failed to get CPU topology: %w", err)
	}
	return Report{ToolVersion: toolVersion(), LayoutVersion: LayoutVersion,
		CPUDetails: details(topo), DriverConfig: driverConfig}, nil
}

// details is upstream's makeTopologySummary + makeCPUList (GetCPUTopology's counts: an L3 id of -1
// is no uncore cache).
func details(t *topology.Topology) CPUDetails {
	sockets, nodes, l3 := map[int]bool{}, map[int]bool{}, map[int]bool{}
	cpus := make([]CPU, 0, len(t.CPUs))
	for _, id := range t.SortedIDs() {
		c := t.CPUs[id]
		sockets[c.SocketID], nodes[c.NUMA] = true, true
		if c.L3 != -1 {
			l3[c.L3] = true
		}
		cpus = append(cpus, CPU{CPUID: c.ID, CoreID: c.CoreID, SocketID: c.SocketID, ClusterID: c.ClusterID,
			NUMANodeID: c.NUMA, NUMANodeCPUSet: c.NUMACPUs.String(), Sibling: c.Sibling, CoreType: c.CoreType,
			UncoreCacheID: c.L3})
	}
	return CPUDetails{CPUs: cpus, Topology: TopologySummary{NumCPUs: len(cpus), NumCores: t.NumCores,
		NumUncoreCache: len(l3), NumSockets: len(sockets), NumNUMANodes: len(nodes), SMTEnabled: t.SMTEnabled}}
}

// detectFlags is upstream's detection of the driver's flags: its command line (NUL-separated) when
// argv[0]'s basename is "dracpu", only the flags the flavour's driver knows; the defaults when the
// file is unreadable or empty, another program, or a value is refused.
func detectFlags(flavor, cmdlinePath string) *config.Parsed {
	p := config.NewFlagSet(flavor, "detect-driver-config", io.Discard)
	data, err := os.ReadFile(cmdlinePath)
	argv := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	if err != nil || len(data) == 0 || filepath.Base(argv[0]) != driverProcessName {
		return p
	}
	if err := p.FlagSet.Parse(knownFlags(p.FlagSet, argv[1:])); err != nil {
		return config.NewFlagSet(flavor, "detect-driver-config", io.Discard)
	}
	return p
}

// resolveMain is upstream main's Resolve over the gatherinfo ConfigSource: the driver's --config
// file (in its filesystem) applied when it loads and applies, its flags over it, then validation.
func resolveMain(cmdlinePath string) (config.Config, error) {
	p := detectFlags(config.FlavorMain, cmdlinePath)
	read := func(name string) ([]byte, error) { return os.ReadFile(driverPath(cmdlinePath, name)) }
	if p.ConfigFile != "" {
		m, err := config.BuildConfMapWith(p.ConfigFile, read)
		if err == nil {
			err = applies(m)
		}
		if err != nil {
			p.ConfigFile = "" // upstream ignores the file source's error
		}
	}
	return p.ResolveWith(read)
}

// applies reports whether m applies to a Config (upstream applyMap: JSON, unknown keys refused).
func applies(m map[string]any) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	cfg := config.Default()
	return dec.Decode(&cfg)
}

// driverPath is upstream's driverFilesystemPath: name in the driver's mount namespace, through the
// /proc/<pid>/root link (absolute) or after the /proc/<pid>/cwd link (relative, so ".." is resolved
// from the driver's working directory).
func driverPath(cmdlinePath, name string) string {
	dir := filepath.Dir(cmdlinePath)
	if filepath.IsAbs(name) {
		return filepath.Join(dir, "root", strings.TrimPrefix(filepath.Clean(name), "/"))
	}
	return filepath.Join(dir, "cwd") + "/" + name
}

// knownFlags is upstream's knownConfigArgs: the arguments of flags fs defines, up to "--"; an
// unknown "-x" without "=" also drops a following argument that is not a flag. A known flag without
// "=" takes the next argument as its value unless it is a boolean flag.
func knownFlags(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			break
		}
		if !strings.HasPrefix(arg, "-") || strings.Trim(arg, "-") == "" {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		out = append(out, arg)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if !hasValue && i+1 < len(args) {
			out = append(out, args[i+1])
			i++
		}
	}
	return out
}

// toolVersion is upstream's internal/buildinfo Read.
func toolVersion() ToolVersion {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ToolVersion{}
	}
	v := ToolVersion{GoVersion: info.GoVersion}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.VCSRevision = s.Value
		case "vcs.time":
			v.VCSTime = s.Value
		}
	}
	return v
}

// marshal is upstream's marshalYAML: one self-delimited document ("---" first, newline last).
func marshal(r Report) ([]byte, error) {
	data, err := yaml.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal YAML: %w", err)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	return append([]byte("---\n"), data...), nil
}
