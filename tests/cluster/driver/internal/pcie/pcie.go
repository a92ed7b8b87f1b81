// Package pcie owns the PCIe roots the driver reads from sysfs and the CPU -> roots mapping behind
// the resource.kubernetes.io/pcieRoot device attribute (--expose-pcie-roots).
//
// Mirrors upstream dra-driver-cpu main pkg/pcie/pciescan.go (IsPCIeRootName, FindOrphanedCPUs,
// MapCPUsToPCIeDomain, PCIeDomain), pkg/pcie/pciescan_amd64.go (PCIeDomainsFromFS: every entry of
// <sysfs>/devices named like the kernel's "pci%04x:%02x", its CPUs from
// devices/pciDDDD:BB/pci_bus/DDDD:BB/cpulistaffinity; an unreadable or unparsable file is an error)
// and pkg/store/pcieroot_mapper.go (Probe, GetPCIeRootsForCPU: the sorted union of the roots local
// to the given CPUs); v0.2.0 has the same code in pkg/device/pciescan*.go. Upstream's non-amd64
// build finds no roots (pciescan_other.go); this driver is built for amd64 only.
package pcie

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"
)

// Domain is upstream's PCIeDomain: a root's name (e.g. "pci0000:00") and the CPUs local to it.
type Domain struct {
	RootName  string
	LocalCPUs cpuset.CPUSet
}

func (d Domain) String() string {
	return fmt.Sprintf("<PCIeRoot=%s CPUs=%s>", d.RootName, d.LocalCPUs.String())
}

// IsRootName is upstream IsPCIeRootName: "pci" + 4 lower-case hex digits + ":" + 2 hex digits.
func IsRootName(name string) bool {
	if len(name) != 10 || name[:3] != "pci" || name[7] != ':' {
		return false
	}
	for _, i := range []int{3, 4, 5, 6, 8, 9} {
		c := name[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// DomainsFromFS is upstream PCIeDomainsFromFS (amd64): the roots under devices/ of the sysfs fsys.
func DomainsFromFS(logger klog.Logger, fsys fs.FS) ([]Domain, error) {
	entries, err := fs.ReadDir(fsys, "devices")
	if err != nil {
		return nil, err
	}
	roots := []Domain{}
	for _, e := range entries {
		name := e.Name()
		if !IsRootName(name) {
			continue
		}
		busID := strings.TrimPrefix(name, "pci")
		data, err := fs.ReadFile(fsys, path.Join("devices", name, "pci_bus", busID, "cpulistaffinity"))
		if err != nil {
			return nil, err
		}
		cpus, err := cpuset.Parse(strings.TrimSpace(string(data)))
		if err != nil {
			return nil, err
		}
		d := Domain{RootName: name, LocalCPUs: cpus}
		roots = append(roots, d)
		logger.V(6).Info("found PCIe root", "domain", d.String())
	}
	return roots, nil
}

// FindOrphanedCPUs is upstream's: the CPUs of all not local to any root.
func FindOrphanedCPUs(domains []Domain, all cpuset.CPUSet) cpuset.CPUSet {
	out := all.Clone()
	for _, d := range domains {
		out = out.Difference(d.LocalCPUs)
	}
	return out
}

// Mapper is upstream store.PCIeRootMapper: built once at start, read by the device builder.
type Mapper struct {
	domains []Domain
	byCPU   map[int][]string
}

// Probe is upstream PCIeRootMapper.Probe: scan fsys, log what was found, map the online CPUs.
func Probe(logger klog.Logger, fsys fs.FS, online cpuset.CPUSet) (*Mapper, error) {
	domains, err := DomainsFromFS(logger, fsys)
	if err != nil {
		return nil, fmt.Errorf("failed to list PCIe domains: %w", err)
	}
	if len(domains) > 0 {
		logger.V(2).Info("PCIe domains detected", "count", len(domains))
		for i, d := range domains {
			logger.V(4).Info("PCIe domain", "index", i, "domain", d.String())
		}
	} else {
		logger.Info("PCIe domains: none detected, device attributes will not be available")
	}
	if extra := FindOrphanedCPUs(domains, online); !extra.IsEmpty() {
		logger.Info("PCIe domains: detected cpus not local to any detected PCIe Root", "CPUs", extra.String())
	}
	m := &Mapper{domains: domains, byCPU: map[int][]string{}}
	for _, id := range online.List() {
		for _, d := range domains {
			if d.LocalCPUs.Contains(id) {
				m.byCPU[id] = append(m.byCPU[id], d.RootName)
			}
		}
	}
	logger.V(4).Info("mapped CPUs to PCIe domains", "count", len(m.byCPU))
	return m, nil
}

// Domains are the roots found, in sysfs order.
func (m *Mapper) Domains() []Domain {
	if m == nil {
		return nil
	}
	return m.domains
}

// RootsForCPUs is upstream GetPCIeRootsForCPU: the sorted, distinct roots local to any of the CPUs;
// nil when no root was found (or m is nil: --expose-pcie-roots off).
func (m *Mapper) RootsForCPUs(cpus ...int) []string {
	if m == nil || len(m.domains) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, id := range cpus {
		for _, r := range m.byCPU[id] {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	sort.Strings(out)
	return out
}
