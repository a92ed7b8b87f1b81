// observe.go owns what the driver tells about its operations besides their results: the operation
// id (opID) every handler's log lines carry, and the metrics it records (internal/metrics).
//
// Mirrors upstream dra-driver-cpu main pkg/driver/driver.go (opIDLen = 8, generateShortID: random
// lower-case hex), the handlers' `ctxlog.WithValues(ctx, "opID", generateShortID(opIDLen), ...)`
// between a "begin: <operation>" and an "end: <operation>" line (dra_hooks.go PublishResources,
// PrepareResourceClaims, UnprepareResourceClaims; nri_hooks.go Synchronize, CreateContainer,
// StopContainer, RemoveContainer; the same in v0.2.0), which upstream's e2e ReportAfterSuite
// "contextual logging" (test/e2e/contextual_logging_test.go, test/pkg/logcheck/ctxlog.go) checks,
// and dra_hooks.go metricsRecorder/refreshAllocationMetrics with store/cpu_allocation.go Snapshot
// (allocated: the prepared claims' CPUs; available: the topology's CPUs minus the reserved and the
// allocated ones; reserved: the size of the reserved set as configured; active: the prepared claims).
package plugin

import (
	"context"
	"math/rand/v2"

	"k8s.io/klog/v2"

	"kubevirtci.io/dra-cpu/testdriver/internal/metrics"
)

const opIDLen = 8

// newOpID is upstream generateShortID(opIDLen).
func newOpID() string {
	const hex = "0123456789abcdef"
	b := make([]byte, opIDLen)
	for i := range b {
		b[i] = hex[rand.IntN(len(hex))] //nolint:gosec // an operation id, not a secret
	}
	return string(b)
}

// withOpID is upstream's ctxlog.WithValues(ctx, "opID", generateShortID(opIDLen), kv...).
func withOpID(ctx context.Context, kv ...any) (context.Context, klog.Logger) {
	logger := klog.FromContext(ctx).WithValues(append([]any{"opID", newOpID()}, kv...)...)
	return klog.NewContext(ctx, logger), logger
}

func (d *Driver) recorder() metrics.Recorder {
	if d.Metrics == nil {
		return metrics.Noop()
	}
	return d.Metrics
}

// allocationState is upstream CPUAllocation.Snapshot over this driver's prepared claims (d.mu held).
func (d *Driver) allocationState() metrics.AllocationState {
	allocated := d.held("")
	active := 0
	for _, c := range d.claims {
		if !c.Released {
			active++
		}
	}
	return metrics.AllocationState{
		AllocatedCPUs:        allocated.Size(),
		AvailableCPUs:        d.set.All.Difference(d.set.Reserved).Difference(allocated).Size(),
		ReservedCPUs:         d.set.Reserved.Size(),
		ActiveResourceClaims: active,
	}
}

// refreshAllocationMetrics is upstream's (d.mu held).
func (d *Driver) refreshAllocationMetrics() {
	d.recorder().SetAllocationState(d.allocationState())
}
