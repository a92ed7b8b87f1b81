// Command runc-cpumap is the test node's runc as containerd calls it (the runtime's BinaryName): it
// maps the CPU ids of the node's simulated topology onto the machine's real CPUs, then runs the
// real runc with the same arguments. Part of simulating the hardware, not of any driver.
//
//	runc-cpumap --runc <runc> (--real-cpus <cpuset> | --map-cpus false) --log <file> [--restrict-oom-score-adj true]
//	            [--drop-hugepage-limits true] [--driver-sysfs <dir>] [--driver-bind-host <ip>] -- <runc arguments>
//
// The node's kubelet and its driver see the fake CPU tree (12 CPUs by default); the machine has
// fewer. A driver that pins containers through NRI, as upstream dra-driver-cpu does, asks for fake
// ids (2-5), which the kernel refuses ("numerical result out of range"). So in `create` / `run`
// (the bundle's config.json, linux.resources.cpu.cpus) and in `update` (`--resources <file|->`,
// `--cpuset-cpus`) every fake id c becomes real[c mod len(real)], and one line per mapping
// (`<command> <container> cpus <fake> -> <real>`) goes to the log, so the cpuset the driver intended
// stays visible. Every other command runs unchanged.
//
// With --map-cpus false (a node whose CPU hardware is the machine's own, cluster_node_hw.py
// `hardware: machine`: the driver already pins to CPUs the kernel has) no id is mapped: each cpuset
// reaches runc as the driver asked for it, still logged (`<command> <container> cpus 1 -> 1`), and
// the options below still apply.
//
// With --restrict-oom-score-adj true (the CRI-O nodes: containerd has restrict_oom_score_adj itself,
// CRI-O has no such setting) `create` / `run` also raise the bundle's process.oomScoreAdj to the
// wrapper's own oom_score_adj when it asks for less: lowering it needs CAP_SYS_RESOURCE, which these
// machines lack (runc init fails with "failed to update /proc/self/oom_score_adj: Permission denied").
// Each raise is a line of the log too (`<command> <container> oomScoreAdj -998 -> 0`).
//
// With --drop-hugepage-limits true (the CRI-O nodes: CRI-O puts a hugepageLimits entry per huge page
// size the kernel has into every container, containerd does not) `create` / `run` and `update` drop
// linux.resources.hugepageLimits: these machines mount no hugetlb cgroup, and runc then fails every
// container ("cannot set hugetlb limit: container could not join or create cgroup"). Logged as
// `<command> <container> hugepageLimits dropped (2)`.
//
// --driver-sysfs and --driver-bind-host change the DRA driver's own container only (driver.go).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/utils/cpuset"
)

// global runc options that take a value (go-runc passes them before the command)
var valueFlags = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}

// Map turns a cpuset of fake ids into one of real ids: fake c -> real[c mod len(real)]; with no
// real ids (--map-cpus false) the cpuset itself, checked to be one.
func Map(fake string, real []int) (string, error) {
	set, err := cpuset.Parse(fake)
	if err != nil {
		return "", err
	}
	if real == nil {
		return fake, nil
	}
	out := cpuset.New()
	for _, c := range set.List() {
		out = out.Union(cpuset.New(real[c%len(real)]))
	}
	return out.String(), nil
}

// command returns the index of the runc command in args (after the global options), or -1.
func command(args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return i
		}
		if valueFlags[a] {
			i++
		}
	}
	return -1
}

// option returns the index of the value of option name (or short) after start, or -1 (name=value: the index of that arg).
func option(args []string, start int, names ...string) (int, bool) {
	for i := start; i < len(args); i++ {
		for _, n := range names {
			if args[i] == n && i+1 < len(args) {
				return i + 1, false
			}
			if strings.HasPrefix(args[i], n+"=") {
				return i, true
			}
		}
	}
	return -1, false
}

// mapResources maps cpu.cpus of a LinuxResources JSON object; ok is false when it holds none.
func mapResources(res map[string]any, real []int) (from, to string, ok bool, err error) {
	cpu, _ := res["cpu"].(map[string]any)
	if cpu == nil {
		return "", "", false, nil
	}
	from, _ = cpu["cpus"].(string)
	if from == "" {
		return "", "", false, nil
	}
	if to, err = Map(from, real); err != nil {
		return "", "", false, err
	}
	cpu["cpus"] = to
	return from, to, true, nil
}

type mapper struct {
	real []int // nil: no mapping (--map-cpus false), every cpuset passes unchanged
	log  io.Writer
	dir  string // where mapped --resources documents are written (the log's directory)
	// minOOM, when not nil: the lowest process.oomScoreAdj create/run lets through (RestrictOOM)
	minOOM *int
	// dropHugepages: remove linux.resources.hugepageLimits (DropHugepageLimits)
	dropHugepages bool
	// driverSysfs, bindHost: the driver container's binds and address (driver.go); "" for none
	driverSysfs, bindHost string
}

// DropHugepageLimits removes hugepageLimits from a LinuxResources object; returns how many it held
// (0: nothing changed).
func DropHugepageLimits(res map[string]any) int {
	limits, ok := res["hugepageLimits"].([]any)
	if !ok {
		return 0
	}
	delete(res, "hugepageLimits")
	return len(limits)
}

// RestrictOOM raises spec's process.oomScoreAdj to min when it is lower; returns the old and new
// values and whether it changed.
func RestrictOOM(spec map[string]any, min int) (from, to int, changed bool) {
	proc, _ := spec["process"].(map[string]any)
	if proc == nil {
		return 0, 0, false
	}
	v, ok := proc["oomScoreAdj"].(float64)
	if !ok || int(v) >= min {
		return 0, 0, false
	}
	proc["oomScoreAdj"] = min
	return int(v), min, true
}

// ownOOMScoreAdj reads the calling process's oom_score_adj.
func ownOOMScoreAdj() (int, error) {
	data, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, err
	}
	var v int
	_, err = fmt.Sscanf(strings.TrimSpace(string(data)), "%d", &v)
	return v, err
}

// driver applies --driver-sysfs and --driver-bind-host to the driver's container (driver.go).
func (m mapper) driver(spec map[string]any, cmd, id string) bool {
	if !IsDriver(spec) {
		return false
	}
	changed := false
	now := time.Now().UTC().Format(time.RFC3339Nano)
	if m.driverSysfs != "" {
		fmt.Fprintf(m.log, "%s %s %s driver sysfs %s over %s\n", now, cmd, id, m.driverSysfs,
			strings.Join(BindSysfs(spec, m.driverSysfs), ","))
		changed = true
	}
	if m.bindHost != "" {
		if from, to, ok := BindHost(spec, m.bindHost); ok {
			fmt.Fprintf(m.log, "%s %s %s driver bind-address %s -> %s\n", now, cmd, id, from, to)
			changed = true
		}
	}
	return changed
}

func (m mapper) note(cmd, id, from, to string) {
	fmt.Fprintf(m.log, "%s %s %s cpus %s -> %s\n", time.Now().UTC().Format(time.RFC3339Nano), cmd, id, from, to)
}

// create maps the bundle's config.json in place.
func (m mapper) create(args []string, at int) error {
	bundle := "."
	if i, eq := option(args, at+1, "--bundle", "-b"); i >= 0 {
		bundle = args[i]
		if eq {
			bundle = args[i][strings.Index(args[i], "=")+1:]
		}
	}
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	changed := m.driver(spec, args[at], args[len(args)-1])
	if m.minOOM != nil {
		if from, to, ok := RestrictOOM(spec, *m.minOOM); ok {
			fmt.Fprintf(m.log, "%s %s %s oomScoreAdj %d -> %d\n", time.Now().UTC().Format(time.RFC3339Nano),
				args[at], args[len(args)-1], from, to)
			changed = true
		}
	}
	linux, _ := spec["linux"].(map[string]any)
	if res, _ := linux["resources"].(map[string]any); res != nil {
		if m.dropHugepages {
			if n := DropHugepageLimits(res); n > 0 {
				fmt.Fprintf(m.log, "%s %s %s hugepageLimits dropped (%d)\n", time.Now().UTC().Format(time.RFC3339Nano),
					args[at], args[len(args)-1], n)
				changed = true
			}
		}
		from, to, ok, err := mapResources(res, m.real)
		if err != nil {
			return err
		}
		if ok {
			m.note(args[at], args[len(args)-1], from, to)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if data, err = json.Marshal(spec); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// update maps --cpuset-cpus and the --resources document (stdin for "-": a mapped copy in a file).
func (m mapper) update(args []string, at int) ([]string, error) {
	id := args[len(args)-1]
	if i, eq := option(args, at+1, "--cpuset-cpus"); i >= 0 {
		val := args[i]
		if eq {
			val = val[len("--cpuset-cpus="):]
		}
		to, err := Map(val, m.real)
		if err != nil {
			return nil, err
		}
		m.note("update", id, val, to)
		args[i] = to
		if eq {
			args[i] = "--cpuset-cpus=" + to
		}
	}
	i, eq := option(args, at+1, "--resources", "-r")
	if i < 0 {
		return args, nil
	}
	src := args[i]
	if eq {
		src = src[strings.Index(src, "=")+1:]
	}
	var data []byte
	var err error
	if src == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(src)
	}
	if err != nil {
		return nil, err
	}
	var res map[string]any
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("update resources: %w", err)
	}
	dropped := 0
	if m.dropHugepages {
		if dropped = DropHugepageLimits(res); dropped > 0 {
			fmt.Fprintf(m.log, "%s update %s hugepageLimits dropped (%d)\n", time.Now().UTC().Format(time.RFC3339Nano),
				id, dropped)
			if data, err = json.Marshal(res); err != nil {
				return nil, err
			}
		}
	}
	from, to, ok, err := mapResources(res, m.real)
	if err != nil || !ok {
		if err == nil && dropped > 0 { // the document changed: hand runc the copy
			return m.resourcesFile(args, i, eq, data)
		}
		if src == "-" && err == nil { // stdin was consumed: hand runc the same document
			return m.resourcesFile(args, i, eq, data)
		}
		return args, err
	}
	if data, err = json.Marshal(res); err != nil {
		return nil, err
	}
	m.note("update", id, from, to)
	return m.resourcesFile(args, i, eq, data)
}

func (m mapper) resourcesFile(args []string, i int, eq bool, data []byte) ([]string, error) {
	f, err := os.CreateTemp(m.dir, "runc-cpumap-*.json")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return nil, err
	}
	if eq {
		args[i] = "--resources=" + f.Name()
	} else {
		args[i] = f.Name()
	}
	return args, nil
}

func run() error {
	a := os.Args[1:]
	usage := fmt.Errorf("usage: runc-cpumap --runc <runc> (--real-cpus <cpuset> | --map-cpus false) --log <file> [--restrict-oom-score-adj true] [--drop-hugepage-limits true] [--driver-sysfs <dir>] [--driver-bind-host <ip>] -- <runc arguments>")
	var runc, realCPUs, mapCPUs, logPath, restrictOOM, dropHugepages, driverSysfs, bindHost string
	for len(a) > 0 && a[0] != "--" {
		if len(a) < 2 {
			return usage
		}
		switch a[0] {
		case "--runc":
			runc = a[1]
		case "--real-cpus":
			realCPUs = a[1]
		case "--map-cpus":
			mapCPUs = a[1]
		case "--log":
			logPath = a[1]
		case "--restrict-oom-score-adj":
			restrictOOM = a[1]
		case "--drop-hugepage-limits":
			dropHugepages = a[1]
		case "--driver-sysfs":
			driverSysfs = a[1]
		case "--driver-bind-host":
			bindHost = a[1]
		default:
			return fmt.Errorf("unknown option %s", a[0])
		}
		a = a[2:]
	}
	if len(a) == 0 || runc == "" || logPath == "" || (realCPUs == "") == (mapCPUs == "") ||
		(mapCPUs != "" && mapCPUs != "false") {
		return usage
	}
	args := append([]string{}, a[1:]...)
	var real []int
	if realCPUs != "" {
		set, err := cpuset.Parse(realCPUs)
		if err != nil || set.Size() == 0 {
			return fmt.Errorf("--real-cpus %q: not a non-empty cpuset", realCPUs)
		}
		real = set.List()
	}
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	m := mapper{real: real, log: logf, dir: filepath.Dir(logPath), dropHugepages: dropHugepages == "true",
		driverSysfs: driverSysfs, bindHost: bindHost}
	if restrictOOM == "true" {
		own, err := ownOOMScoreAdj()
		if err != nil {
			return err
		}
		m.minOOM = &own
	}
	if at := command(args); at >= 0 {
		switch args[at] {
		case "create", "run":
			err = m.create(args, at)
		case "update":
			args, err = m.update(args, at)
		}
		if err != nil {
			fmt.Fprintf(logf, "%s error %v\n", time.Now().UTC().Format(time.RFC3339Nano), err)
			logf.Close()
			return err
		}
	}
	logf.Close()
	return syscall.Exec(runc, append([]string{runc}, args...), os.Environ())
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "runc-cpumap: %v\n", err)
		os.Exit(1)
	}
}
