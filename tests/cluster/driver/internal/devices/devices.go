// Package devices owns the devices the driver publishes and their chunking into slices.
//
// It mirrors upstream dra-driver-cpu main pkg/device/builder.go (Build, BuildGrouped,
// groupedCPUDeviceInfos, cpuDeviceInfos, createGroupedCPUDeviceSlices, createCPUDeviceSlices),
// attributes.go (addCompatibilityAttributes), pkg/driver/driver.go New() (slices.Chunk at
// DevicesPerResourceSlice) and v0.2.0 pkg/driver/dra_hooks.go (no resource.kubernetes.io/numaNode,
// grouped devices in one slice), exactly as the simulator's former sim_slices.py build_devices and
// chunks_for encode them, and main's KEP-5517 nodeAllocatableResources (groupedCPUNodeAllocatable,
// individualCPUNodeAllocatable; main only, with publishNodeAllocatableResourceMapping) and the
// PCIe roots (--expose-pcie-roots, both flavours: builder.go addPCIeRootsAttribute, v0.2.0
// dra_hooks.go setPCIeRootsAttribute): resource.kubernetes.io/pcieRoot, a list of the roots local to
// the device's CPUs, on every device that has one (grouped and individual); chunks of 64 then.
package devices

import (
	"fmt"
	"io/fs"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/pcie"
	"kubevirtci.io/dra-cpu/testdriver/internal/topology"
)

// Names and attributes (upstream pkg/device/builder.go, attributes.go).
const (
	CPUResource = resourceapi.QualifiedName("dra.cpu/cpu")

	attrNUMANodeID = resourceapi.QualifiedName("dra.cpu/numaNodeID")
	attrSocketID   = resourceapi.QualifiedName("dra.cpu/socketID")
	attrSMT        = resourceapi.QualifiedName("dra.cpu/smtEnabled")
	attrCacheL3ID  = resourceapi.QualifiedName("dra.cpu/cacheL3ID")
	attrCoreType   = resourceapi.QualifiedName("dra.cpu/coreType")
	attrCoreID     = resourceapi.QualifiedName("dra.cpu/coreID")
	attrCPUID      = resourceapi.QualifiedName("dra.cpu/cpuID")
	attrNumCPUs    = resourceapi.QualifiedName("dra.cpu/numCPUs")
	attrDraNetNUMA = resourceapi.QualifiedName("dra.net/numaNode")
	attrStdNUMA    = resourceapi.QualifiedName("resource.kubernetes.io/numaNode") // main only
	// AttrPCIeRoot is deviceattribute.StandardDeviceAttributePCIeRoot, a list (StringValues)
	AttrPCIeRoot = resourceapi.QualifiedName("resource.kubernetes.io/pcieRoot")
)

// Options is what device building depends on.
type Options struct {
	Flavor          string
	Mode            string
	GroupBy         string
	Reserved        cpuset.CPUSet
	ExposePCIeRoots bool
	// NodeAllocatable: publish KEP-5517 nodeAllocatableResources on every device (main only:
	// driverConfig.publishNodeAllocatableResourceMapping; OptionsFrom never sets it for v0.2)
	NodeAllocatable bool
	// PCIe: the CPU -> PCIe roots mapping (ProbePCIe, with ExposePCIeRoots); nil: no pcieRoot attribute
	PCIe *pcie.Mapper
}

// Set is the built device list, the CPUs behind each device and the chunks to publish.
type Set struct {
	Devices []resourceapi.Device
	CPUs    map[string]cpuset.CPUSet // device name -> CPUs it stands for (grouped: the group; individual: one)
	Chunks  [][]resourceapi.Device   // nil: nothing to publish (PublishResources is not called)
	// Online and Reserved: what prepare checks an opaque cpuset against (machine grouping)
	Online, Reserved cpuset.CPUSet
	// All: the topology's CPUs (upstream CPUTopology.CPUDetails), what the allocation metrics count
	All cpuset.CPUSet
}

func intAttr(v int) resourceapi.DeviceAttribute {
	x := int64(v)
	return resourceapi.DeviceAttribute{IntValue: &x}
}

func boolAttr(v bool) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{BoolValue: &v} }

func strAttr(v string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: &v}
}

// Build builds the devices and chunks for the topology.
func Build(t *topology.Topology, o Options) Set {
	s := Set{CPUs: map[string]cpuset.CPUSet{}, Online: t.Online, Reserved: o.Reserved, All: cpuset.New(t.SortedIDs()...)}
	if o.Mode == config.ModeIndividual {
		for _, d := range individual(t, o.Reserved) {
			dev := individualDevice(d.name, d.cpu, t.SMTEnabled, o.Flavor)
			dev.NodeAllocatableResources = individualNodeAllocatable(o.NodeAllocatable)
			addPCIeRoots(o.PCIe, dev.Attributes, d.cpu.ID)
			s.Devices = append(s.Devices, dev)
			s.CPUs[d.name] = cpuset.New(d.cpu.ID)
		}
	} else {
		for _, g := range grouped(t, o) {
			s.Devices = append(s.Devices, g.device)
			s.CPUs[g.device.Name] = g.cpus
		}
	}
	s.Chunks = Chunk(s.Devices, o)
	return s
}

// ProbePCIe is upstream New()'s `if config.ExposePCIeRoots { pcieRootMapper.Probe(...) }`: with the
// flag, the roots under fsys (the driver's sysfs: $HOST_ROOT/sys, the overlay applied) mapped onto the
// online CPUs into o.PCIe; an error ("failed to list PCIe domains: ...") stops the driver.
func ProbePCIe(logger klog.Logger, fsys fs.FS, t *topology.Topology, o *Options) error {
	if !o.ExposePCIeRoots {
		return nil
	}
	m, err := pcie.Probe(logger, fsys, t.Online)
	if err != nil {
		return err
	}
	o.PCIe = m
	return nil
}

// addPCIeRoots is upstream addPCIeRootsAttribute: the union of the roots local to the CPUs, when any.
func addPCIeRoots(m *pcie.Mapper, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, cpus ...int) {
	roots := m.RootsForCPUs(cpus...)
	if len(roots) == 0 {
		return
	}
	attrs[AttrPCIeRoot] = resourceapi.DeviceAttribute{StringValues: roots}
}

// Chunk is upstream's chunking: main chunks every mode at 128 devices (64 with PCIe roots);
// v0.2 chunks only individual mode and publishes grouped devices in one slice.
func Chunk(devs []resourceapi.Device, o Options) [][]resourceapi.Device {
	if len(devs) == 0 {
		return nil
	}
	if o.Flavor != config.FlavorMain && o.Mode != config.ModeIndividual {
		return [][]resourceapi.Device{devs}
	}
	n := resourceapi.ResourceSliceMaxDevices
	if o.ExposePCIeRoots {
		n = resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
	}
	var out [][]resourceapi.Device
	for i := 0; i < len(devs); i += n {
		out = append(out, devs[i:min(i+n, len(devs))])
	}
	return out
}

// groupedNodeAllocatable is upstream groupedCPUNodeAllocatable: nil when off, else cpu mapped
// onto the consumed dra.cpu/cpu capacity, one node CPU per unit (capacityKey + capacityMultiplier "1").
func groupedNodeAllocatable(enabled bool) map[v1.ResourceName]resourceapi.NodeAllocatableResource {
	if !enabled {
		return nil
	}
	key, one := CPUResource, resource.MustParse("1")
	return map[v1.ResourceName]resourceapi.NodeAllocatableResource{
		v1.ResourceCPU: {Mapping: &resourceapi.NodeAllocatableMapping{CapacityKey: &key, CapacityMultiplier: &one}},
	}
}

// individualNodeAllocatable is upstream individualCPUNodeAllocatable: nil when off, else one node
// CPU per allocated device (deviceMultiplier "1").
func individualNodeAllocatable(enabled bool) map[v1.ResourceName]resourceapi.NodeAllocatableResource {
	if !enabled {
		return nil
	}
	one := resource.MustParse("1")
	return map[v1.ResourceName]resourceapi.NodeAllocatableResource{
		v1.ResourceCPU: {Mapping: &resourceapi.NodeAllocatableMapping{DeviceMultiplier: &one}},
	}
}

type cpuDeviceInfo struct {
	name string
	cpu  topology.CPU
}

// individual is upstream cpuDeviceInfos: available CPUs by id; a CPU with an available sibling
// forms a group with it; groups ordered by their first (lowest available) CPU; numbered cpudev%03d.
func individual(t *topology.Topology, reserved cpuset.CPUSet) []cpuDeviceInfo {
	var groups [][]topology.CPU
	done := map[int]bool{}
	for _, id := range t.SortedIDs() {
		c := t.CPUs[id]
		if reserved.Contains(id) || done[id] {
			continue
		}
		sib, ok := t.CPUs[c.Sibling]
		if c.Sibling == -1 || reserved.Contains(c.Sibling) || !ok {
			groups = append(groups, []topology.CPU{c})
			done[id] = true
			continue
		}
		groups = append(groups, []topology.CPU{c, sib})
		done[id], done[c.Sibling] = true, true
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i][0].ID < groups[j][0].ID })
	var out []cpuDeviceInfo
	for _, g := range groups {
		for _, c := range g {
			out = append(out, cpuDeviceInfo{name: fmt.Sprintf("cpudev%03d", len(out)), cpu: c})
		}
	}
	return out
}

func individualDevice(name string, c topology.CPU, smt bool, flavor string) resourceapi.Device {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		attrNUMANodeID: intAttr(c.NUMA),
		attrSocketID:   intAttr(c.SocketID),
		attrSMT:        boolAttr(smt),
		attrCacheL3ID:  intAttr(c.L3),
		attrCoreType:   strAttr(c.CoreType),
		attrCoreID:     intAttr(c.CoreID),
		attrCPUID:      intAttr(c.ID),
		attrDraNetNUMA: intAttr(c.NUMA),
	}
	if flavor == config.FlavorMain {
		attrs[attrStdNUMA] = intAttr(c.NUMA)
	}
	return resourceapi.Device{Name: name, Attributes: attrs}
}

type groupDevice struct {
	device resourceapi.Device
	cpus   cpuset.CPUSet
}

// grouped is upstream groupedCPUDeviceInfos + createGroupedCPUDeviceSlices: an empty NUMA node or
// socket is left out; cpudevmachine (online CPUs minus reserved) is always published.
func grouped(t *topology.Topology, o Options) []groupDevice {
	byNUMA, bySocket := map[int][]int{}, map[int][]int{}
	for _, id := range t.SortedIDs() {
		c := t.CPUs[id]
		byNUMA[c.NUMA] = append(byNUMA[c.NUMA], id)
		bySocket[c.SocketID] = append(bySocket[c.SocketID], id)
	}
	var out []groupDevice
	add := func(name string, cpus cpuset.CPUSet, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) {
		n := cpus.Size()
		attrs[attrNumCPUs] = intAttr(n)
		addPCIeRoots(o.PCIe, attrs, cpus.List()...)
		allow := true
		out = append(out, groupDevice{cpus: cpus, device: resourceapi.Device{
			Name:                     name,
			Attributes:               attrs,
			Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{CPUResource: {Value: *resource.NewQuantity(int64(n), resource.DecimalSI)}},
			AllowMultipleAllocations: &allow,
			NodeAllocatableResources: groupedNodeAllocatable(o.NodeAllocatable),
		}})
	}
	switch o.GroupBy {
	case config.GroupByNUMA:
		for _, n := range sortedKeys(byNUMA) {
			cpus := cpuset.New(byNUMA[n]...).Difference(o.Reserved)
			if cpus.Size() == 0 {
				continue
			}
			attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				attrNUMANodeID: intAttr(n), attrSocketID: intAttr(t.CPUs[cpus.List()[0]].SocketID),
				attrSMT: boolAttr(t.SMTEnabled), attrDraNetNUMA: intAttr(n),
			}
			if o.Flavor == config.FlavorMain {
				attrs[attrStdNUMA] = intAttr(n)
			}
			add(fmt.Sprintf("cpudevnuma%03d", n), cpus, attrs)
		}
	case config.GroupBySocket:
		for _, s := range sortedKeys(bySocket) {
			cpus := cpuset.New(bySocket[s]...).Difference(o.Reserved)
			if cpus.Size() == 0 {
				continue
			}
			add(fmt.Sprintf("cpudevsocket%03d", s), cpus, map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				attrSocketID: intAttr(s), attrSMT: boolAttr(t.SMTEnabled)})
		}
	case config.GroupByMachine:
		add("cpudevmachine", t.Online.Difference(o.Reserved), map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			attrSMT: boolAttr(t.SMTEnabled)})
	}
	return out
}

func sortedKeys(m map[int][]int) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// Available is the union of the CPUs behind all devices (what claims may be given).
func (s Set) Available() cpuset.CPUSet {
	out := cpuset.New()
	for _, c := range s.CPUs {
		out = out.Union(c)
	}
	return out
}

// OptionsFrom turns the effective config into device options (upstream run(): cpuset.Parse of
// reservedCPUs, "failed to parse reserved CPUs: ..."; app.go passes
// cfg.PublishNodeAllocatableResourceMapping to the builder, a key only main's config file has).
func OptionsFrom(cfg config.Config, flavor string) (Options, error) {
	reserved, err := cpuset.Parse(cfg.ReservedCPUs)
	if err != nil {
		return Options{}, fmt.Errorf("failed to parse reserved CPUs: %w", err)
	}
	return Options{Flavor: flavor, Mode: cfg.CPUDeviceMode, GroupBy: cfg.GroupBy, Reserved: reserved,
		ExposePCIeRoots: cfg.ExposePCIeRoots,
		NodeAllocatable: flavor == config.FlavorMain && cfg.PublishNodeAllocatableResourceMapping}, nil
}
