// prepare.go owns NodePrepareResources / NodeUnprepareResources (the kubeletplugin.DRAPlugin
// methods) and the in-memory claim -> cpuset store.
//
// Mirrors upstream pkg/driver/dra_hooks.go PrepareResourceClaims (prepareResourceClaim for
// individual mode: the devices' CPUs, overlap refused; prepareGroupedResourceClaim for grouped
// mode: ConsumedCapacity "dra.cpu/cpu", positive whole number, CPUs of the device not held by
// other claims; an already prepared claim reuses its CPUs), prepareDevices and
// UnprepareResourceClaims (their opIDs, begin/end lines and metrics: observe.go). Machine grouping takes the CPUs of the request's opaque cpuset config
// (opaque.go, upstream getOpaqueCPUSet/validateOpaqueCPUSet) and fails without one; each
// prepared device carries its metadata (metadata.go, main only). Difference: CPUs of a numanode
// or socket device are picked lowest id first (upstream: cpumanager.TakeByTopologyNUMAPacked).
// Pinning is nri.go.
package plugin

import (
	"context"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/devices"
	"kubevirtci.io/dra-cpu/testdriver/internal/metrics"
)

// held returns the CPUs prepared for claims other than uid (and not released, nri.go).
func (d *Driver) held(uid types.UID) cpuset.CPUSet {
	out := cpuset.New()
	for u, c := range d.claims {
		if u == uid || c.Released {
			continue
		}
		if set, err := cpuset.Parse(c.CPUs); err == nil {
			out = out.Union(set)
		}
	}
	return out
}

// ownResults are the allocation results of this driver in this node's pool.
func (d *Driver) ownResults(claim *resourceapi.ResourceClaim) []resourceapi.DeviceRequestAllocationResult {
	var out []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == d.driverName && r.Pool == d.nodeName {
			out = append(out, r)
		}
	}
	return out
}

// pick chooses the CPUs for one claim (nothing is stored).
func (d *Driver) pick(claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult) (cpuset.CPUSet, error) {
	free := d.set.Available().Difference(d.held(claim.UID))
	assigned := cpuset.New()
	for _, r := range results {
		devCPUs, ok := d.set.CPUs[r.Device]
		if !ok {
			return cpuset.New(), fmt.Errorf("device %q not found in device to CPU ID map", r.Device)
		}
		if d.mode == config.ModeIndividual {
			assigned = assigned.Union(devCPUs)
			continue
		}
		q, ok := r.ConsumedCapacity[devices.CPUResource]
		if !ok {
			return cpuset.New(), fmt.Errorf("CPU capacity %q for device %q is missing", devices.CPUResource, r.Device)
		}
		if q.Sign() <= 0 {
			return cpuset.New(), fmt.Errorf("CPU capacity for device %q must be positive, got %s", r.Device, q.String())
		}
		n := q.Value()
		if q.CmpInt64(n) != 0 {
			return cpuset.New(), fmt.Errorf("CPU capacity for device %q must be a whole number, got %s", r.Device, q.String())
		}
		if d.mode == config.ModeGrouped && d.groupBy == config.GroupByMachine {
			set, err := d.opaqueCPUSet(claim.Status.Allocation, r)
			if err != nil {
				return cpuset.New(), err
			}
			if err := d.validateOpaqueCPUSet(set, assigned, d.held(claim.UID), n); err != nil {
				return cpuset.New(), err
			}
			assigned = assigned.Union(set)
			continue
		}
		avail := devCPUs.Intersection(free).Difference(assigned).List()
		if int64(len(avail)) < n {
			return cpuset.New(), fmt.Errorf("not enough free CPUs on device %q: want %d, free %s", r.Device, n, cpuset.New(avail...).String())
		}
		assigned = assigned.Union(cpuset.New(avail[:n]...))
	}
	if d.mode == config.ModeIndividual && !assigned.IsSubsetOf(free) {
		return cpuset.New(), fmt.Errorf("claim %s/%s has overlapping device assignment with other claims", claim.Namespace, claim.Name)
	}
	return assigned, nil
}

func (d *Driver) prepareOne(logger klog.Logger, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	if claim.Status.Allocation == nil {
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s has no allocation", claim.Namespace, claim.Name)}
	}
	results := d.ownResults(claim)
	if len(results) == 0 {
		logger.V(6).Info("claim has no CPU allocations for this driver")
		return kubeletplugin.PrepareResult{}
	}
	var cpus cpuset.CPUSet
	if prev, ok := d.claims[claim.UID]; ok {
		cpus, _ = cpuset.Parse(prev.CPUs)
		logger.V(2).Info("claim already has allocated CPUs in store, reusing assignment", "cpus", cpus.String())
	} else {
		var err error
		if cpus, err = d.pick(claim, results); err != nil {
			return kubeletplugin.PrepareResult{Err: err}
		}
		d.claims[claim.UID] = preparedClaim{Namespace: claim.Namespace, Name: claim.Name, CPUs: cpus.String()}
		if err := saveCheckpoint(d.dataDir, d.claims); err != nil {
			delete(d.claims, claim.UID)
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("save checkpoint: %w", err)}
		}
		d.recorder().RecordClaimAllocatedCPUs(cpus.Size())
		d.refreshAllocationMetrics()
	}
	env, err := writeCDISpec(d.cdiDir, claim.UID, cpus.String())
	if err != nil {
		return kubeletplugin.PrepareResult{Err: err}
	}
	out := kubeletplugin.PrepareResult{Devices: []kubeletplugin.Device{}}
	for _, r := range results {
		dev := kubeletplugin.Device{PoolName: r.Pool, DeviceName: r.Device, CDIDeviceIDs: []string{CDIDeviceID(claim.UID)},
			Metadata: d.deviceMetadata(r)}
		if r.Request != "" {
			dev.Requests = []string{r.Request}
		}
		out.Devices = append(out.Devices, dev)
	}
	logger.Info("prepared claim", "cpuset", cpus.String(), "cdiDevice", CDIDeviceID(claim.UID), "env", env)
	return out
}

// PrepareResourceClaims implements kubeletplugin.DRAPlugin (per claim: its result and duration counted).
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	_, logger := withOpID(ctx)
	logger.V(4).Info("begin: preparing resource claims", "numClaims", len(claims))
	defer logger.V(4).Info("end: preparing resource claims", "numClaims", len(claims))
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		start := time.Now()
		cl := logger.WithValues("claim", klog.KObj(claim), "claimUID", claim.UID)
		out[claim.UID] = d.prepareOne(cl, claim)
		result := metrics.ResultSuccess
		if err := out[claim.UID].Err; err != nil {
			cl.Error(err, "error preparing claim")
			result = metrics.ResultError
		}
		d.recorder().RecordPrepare(result, time.Since(start))
	}
	return out, nil
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin (idempotent).
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	_, logger := withOpID(ctx)
	logger.V(4).Info("begin: unpreparing resource claims", "numClaims", len(claims))
	defer logger.V(4).Info("end: unpreparing resource claims", "numClaims", len(claims))
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		cl := logger.WithValues("claim", c.String(), "claimUID", c.UID)
		cl.V(2).Info("unpreparing resource claim")
		if err := removeCDISpec(d.cdiDir, c.UID); err != nil {
			out[c.UID] = err
			cl.Error(err, "error unpreparing resources for claim")
			d.recorder().RecordUnprepare(metrics.ResultError)
			continue
		}
		prev, had := d.claims[c.UID]
		delete(d.claims, c.UID)
		// upstream main's unprepareResourceClaim: claimTracker.Cleanup(claim.UID)
		d.cleanupOwners(c.UID)
		if err := saveCheckpoint(d.dataDir, d.claims); err != nil {
			out[c.UID] = fmt.Errorf("save checkpoint: %w", err)
			d.recorder().RecordUnprepare(metrics.ResultError)
			continue
		}
		out[c.UID] = nil
		d.recorder().RecordUnprepare(metrics.ResultSuccess)
		d.refreshAllocationMetrics()
		if had {
			cl.Info("unprepared claim", "cpuset", prev.CPUs)
		}
	}
	return out, nil
}
