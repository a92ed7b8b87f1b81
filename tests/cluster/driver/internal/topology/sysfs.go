// Package topology owns reading the node's CPU topology from sysfs, as upstream dra-driver-cpu
// reads it: pkg/sysfs/sysfs.go Host() ($HOST_ROOT/sys), pkg/cpuinfo/cpuinfo.go OnlineCPUs,
// GetCPUInfos, populateTopologyInfo, populateCpuSiblings, IsSMTEnabled and GetCPUTopology.
//
// Files read (relative to $HOST_ROOT/sys): devices/system/cpu/online, devices/cpu_atom/cpus
// (hybrid), per online CPU N: devices/system/cpu/cpuN/topology/{physical_package_id,cluster_id,
// core_id}, the entries of devices/system/cpu/cpuN (a "nodeM" entry gives the NUMA node),
// devices/system/node/nodeM/cpulist, devices/system/cpu/cpuN/cache/index*/{level,shared_cpu_list,
// id}, and devices/system/cpu/smt/control.
package topology

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"
)

// CPU is upstream cpuinfo.CPUInfo (the fields the driver uses).
type CPU struct {
	ID        int
	CoreID    int
	SocketID  int
	ClusterID int
	NUMA      int
	Sibling   int // -1: none (only 2-way SMT cores have siblings)
	CoreType  string
	L3        int // UncoreCacheID, -1 when no L3 was found
	NUMACPUs  cpuset.CPUSet
}

// Topology is upstream cpuinfo.CPUTopology plus the online CPU set the driver reads first.
type Topology struct {
	CPUs       map[int]CPU
	Online     cpuset.CPUSet
	NumCores   int
	SMTEnabled bool
}

// Host is $HOST_ROOT/sys as an fs.FS (HOST_ROOT unset or "" = "/").
func Host() fs.FS {
	return os.DirFS(path.Join(os.Getenv("HOST_ROOT"), "/sys"))
}

// SortedIDs returns the CPU ids in ascending order.
func (t *Topology) SortedIDs() []int {
	ids := make([]int, 0, len(t.CPUs))
	for id := range t.CPUs {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// Summary is a one-line description for the log.
func (t *Topology) Summary() string {
	cells := map[int][]int{}
	sockets := map[int]bool{}
	for _, id := range t.SortedIDs() {
		c := t.CPUs[id]
		cells[c.NUMA] = append(cells[c.NUMA], id)
		sockets[c.SocketID] = true
	}
	nodes := make([]int, 0, len(cells))
	for n := range cells {
		nodes = append(nodes, n)
	}
	sort.Ints(nodes)
	parts := make([]string, 0, len(nodes))
	for _, n := range nodes {
		parts = append(parts, fmt.Sprintf("NUMA %d: %s", n, cpuset.New(cells[n]...).String()))
	}
	return fmt.Sprintf("%d CPUs (online %s), %d cores, %d socket(s), smtEnabled=%t; %s",
		len(t.CPUs), t.Online.String(), t.NumCores, len(sockets), t.SMTEnabled, strings.Join(parts, ", "))
}

func readFile(fsys fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(fsys, name)
	return string(b), err
}

// OnlineCPUs is upstream cpuinfo.OnlineCPUs.
func OnlineCPUs(fsys fs.FS) (cpuset.CPUSet, error) {
	s, err := readFile(fsys, "devices/system/cpu/online")
	if err != nil {
		return cpuset.New(), err
	}
	return cpuset.Parse(strings.TrimSpace(s))
}

// Read is upstream New()'s OnlineCPUs + GetCPUTopology.
func Read(logger klog.Logger, fsys fs.FS) (*Topology, error) {
	online, err := OnlineCPUs(fsys)
	if err != nil {
		return nil, fmt.Errorf("failed to get online CPUs: %w", err)
	}
	infos, err := cpuInfos(logger, fsys, online)
	if err != nil {
		return nil, fmt.Errorf("failed to get CPU topology: failed to get CPU infos: %w", err)
	}
	t := &Topology{CPUs: map[int]CPU{}, Online: online}
	type coreKey struct{ socket, cluster, core int }
	cores := map[coreKey]bool{}
	for _, c := range infos {
		t.CPUs[c.ID] = c
		cores[coreKey{c.SocketID, c.ClusterID, c.CoreID}] = true
	}
	t.NumCores = len(cores)
	smt, err := IsSMTEnabled(fsys)
	if err != nil {
		logger.Info("could not determine SMT status from sysfs, falling back to CPU/Core count", "err", err)
		smt = len(infos) > len(cores)
	}
	t.SMTEnabled = smt
	return t, nil
}

// IsSMTEnabled is upstream cpuinfo.IsSMTEnabled: smt/control on -> true; off, forceoff,
// notsupported, notimplemented -> false; missing or other text -> error (caller falls back).
func IsSMTEnabled(fsys fs.FS) (bool, error) {
	s, err := readFile(fsys, "devices/system/cpu/smt/control")
	if err != nil {
		return false, err
	}
	switch status := strings.TrimSpace(strings.ToLower(s)); status {
	case "on":
		return true, nil
	case "off", "forceoff", "notsupported", "notimplemented":
		return false, nil
	default:
		return false, fmt.Errorf("unknown SMT status: %s", status)
	}
}

func cpuInfos(logger klog.Logger, fsys fs.FS, online cpuset.CPUSet) ([]CPU, error) {
	hybrid := false
	var eCores cpuset.CPUSet
	if _, err := fs.Stat(fsys, "devices/cpu_atom/cpus"); err == nil {
		if s, err := readFile(fsys, "devices/cpu_atom/cpus"); err == nil {
			hybrid = true
			eCores, err = cpuset.Parse(strings.Split(s, "\n")[0])
			if err != nil {
				return nil, err
			}
		}
	}
	out := make([]CPU, 0, online.Size())
	for _, id := range online.List() {
		c := CPU{ID: id, SocketID: -1, CoreID: -1, ClusterID: -1, NUMA: -1, L3: -1, Sibling: -1,
			NUMACPUs: cpuset.New(), CoreType: "standard"}
		if hybrid {
			c.CoreType = "p-core"
			if eCores.Contains(id) {
				c.CoreType = "e-core"
			}
		}
		if err := populate(logger, fsys, &c); err != nil {
			logger.Info("skipping CPU due to incomplete topology", "cpuID", id, "err", err)
			continue
		}
		out = append(out, c)
	}
	populateSiblings(out)
	return out, nil
}

func readInt(fsys fs.FS, name string) (int, error) {
	s, err := readFile(fsys, name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(s))
}

func populate(logger klog.Logger, fsys fs.FS, c *CPU) error {
	dir := fmt.Sprintf("devices/system/cpu/cpu%d", c.ID)
	v, err := readInt(fsys, dir+"/topology/physical_package_id")
	if err != nil {
		return fmt.Errorf("could not read socket_id for cpu %d from sysfs: %w", c.ID, err)
	}
	c.SocketID = v
	if v, err := readInt(fsys, dir+"/topology/cluster_id"); err == nil && v != 65535 {
		c.ClusterID = v // 65535 is the kernel's u16 -1 (undefined cluster)
	}
	if c.CoreID, err = readInt(fsys, dir+"/topology/core_id"); err != nil {
		return fmt.Errorf("could not read core_id for cpu %d from sysfs: %w", c.ID, err)
	}
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return fmt.Errorf("could not read NUMA node for cpu %d from sysfs: %w", c.ID, err)
	}
	found := false
	for _, e := range entries {
		after, ok := strings.CutPrefix(e.Name(), "node")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(after)
		if err != nil {
			continue
		}
		c.NUMA, found = n, true
		if s, err := readFile(fsys, fmt.Sprintf("devices/system/node/node%d/cpulist", n)); err == nil {
			if set, err := cpuset.Parse(strings.Split(s, "\n")[0]); err == nil {
				c.NUMACPUs = set
				break
			}
		}
		logger.V(2).Info("could not read sysfs data for NUMA affinity mask", "nodeID", n)
	}
	if !found {
		return fmt.Errorf("could not determine NUMA node for CPU %d", c.ID)
	}
	if c.SocketID < 0 || c.CoreID < 0 || c.NUMA < 0 {
		return fmt.Errorf("incomplete topology information for CPU %d", c.ID)
	}
	cache := dir + "/cache"
	caches, err := fs.ReadDir(fsys, cache)
	if err != nil {
		return fmt.Errorf("could not read cache dir %s: %w", cache, err)
	}
	for _, e := range caches {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		idx := cache + "/" + e.Name()
		if lvl, err := readFile(fsys, idx+"/level"); err != nil || strings.TrimSpace(lvl) != "3" {
			continue
		}
		s, err := readFile(fsys, idx+"/shared_cpu_list")
		if err != nil {
			return fmt.Errorf("could not read shared_cpu_list from %s: %w", idx, err)
		}
		shared, err := cpuset.Parse(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("could not parse shared_cpu_list '%s': %w", s, err)
		}
		id, err := readInt(fsys, idx+"/id")
		if err != nil { // ARM without 'id': lowest shared CPU
			id = c.ID
			if shared.Size() > 0 {
				id = shared.List()[0]
			}
		}
		c.L3 = id
		break
	}
	return nil
}

// populateSiblings is upstream populateCpuSiblings: only cores of exactly two CPUs get siblings.
func populateSiblings(cpus []CPU) {
	type key struct{ socket, cluster, core int }
	byCore := map[key][]int{}
	for i, c := range cpus {
		k := key{c.SocketID, c.ClusterID, c.CoreID}
		byCore[k] = append(byCore[k], i)
	}
	for _, idx := range byCore {
		if len(idx) == 2 {
			cpus[idx[0]].Sibling, cpus[idx[1]].Sibling = cpus[idx[1]].ID, cpus[idx[0]].ID
		}
	}
}
