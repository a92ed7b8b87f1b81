// Package metrics owns the driver's own Prometheus metric families, served with the Go client's
// default collectors on /metrics of the health port (cmd/dracpu/main.go).
//
// Mirrors upstream dra-driver-cpu main pkg/metrics/metrics.go: the same names, types, help texts,
// label sets and buckets (dra_cpu_allocated_cpus, dra_cpu_available_cpus, dra_cpu_reserved_cpus,
// dra_cpu_resource_claims_active gauges; dra_cpu_prepare_claims_total and
// dra_cpu_unprepare_claims_total counters by result, every result pre-created;
// dra_cpu_prepare_claim_duration_seconds and dra_cpu_claim_allocated_cpus histograms), the Recorder
// interface and Noop. Upstream v0.2.0 serves /metrics with the default registry only (cmd/dracpu/app.go
// promhttp.Handler()); its families are main's. Not ported: Descriptors/WriteJSON (`introspect metrics`).
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Result is the bounded label domain of the per-claim operation counters.
type Result string

const (
	ResultSuccess Result = "success"
	ResultError   Result = "error"
	ResultUnknown Result = "unknown"
)

// String maps anything outside the domain to "unknown", as upstream.
func (r Result) String() string {
	switch r {
	case ResultSuccess, ResultError:
		return string(r)
	default:
		return string(ResultUnknown)
	}
}

// AllocationState is what the allocation gauges show.
type AllocationState struct {
	AllocatedCPUs        int
	AvailableCPUs        int
	ReservedCPUs         int
	ActiveResourceClaims int
}

// Recorder records the driver's metrics (upstream metrics.Recorder).
type Recorder interface {
	SetAllocationState(AllocationState)
	RecordPrepare(result Result, duration time.Duration)
	RecordUnprepare(result Result)
	RecordClaimAllocatedCPUs(cpus int)
}

// Metrics owns the collectors.
type Metrics struct {
	allocatedCPUs, availableCPUs, reservedCPUs, activeResourceClaims prometheus.Gauge
	prepareClaims, unprepareClaims                                   *prometheus.CounterVec
	prepareClaimDuration, claimAllocatedCPUs                         prometheus.Histogram
}

// Names of the families (upstream's metricSpecs, in its order).
const (
	AllocatedCPUs        = "dra_cpu_allocated_cpus"
	AvailableCPUs        = "dra_cpu_available_cpus"
	ReservedCPUs         = "dra_cpu_reserved_cpus"
	ActiveResourceClaims = "dra_cpu_resource_claims_active"
	PrepareClaims        = "dra_cpu_prepare_claims_total"
	UnprepareClaims      = "dra_cpu_unprepare_claims_total"
	PrepareClaimDuration = "dra_cpu_prepare_claim_duration_seconds"
	ClaimAllocatedCPUs   = "dra_cpu_claim_allocated_cpus"
)

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// New creates the collectors and registers them on reg (nil: the default registerer).
func New(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	m := &Metrics{
		allocatedCPUs: gauge(AllocatedCPUs, "Number of CPUs currently allocated to prepared resource claims."),
		availableCPUs: gauge(AvailableCPUs, "Number of CPUs available for allocation after reserved and active claim CPUs are excluded."),
		reservedCPUs:  gauge(ReservedCPUs, "Number of CPUs reserved and excluded from DRA management."),
		activeResourceClaims: gauge(ActiveResourceClaims,
			"Number of resource claims currently recorded as active by the allocation store."),
		prepareClaims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: PrepareClaims,
			Help: "Total number of per-claim PrepareResourceClaims results."}, []string{"result"}),
		unprepareClaims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: UnprepareClaims,
			Help: "Total number of per-claim UnprepareResourceClaims results."}, []string{"result"}),
		prepareClaimDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: PrepareClaimDuration,
			Help: "Duration of per-claim prepare operations in seconds.", Buckets: prometheus.DefBuckets}),
		claimAllocatedCPUs: prometheus.NewHistogram(prometheus.HistogramOpts{Name: ClaimAllocatedCPUs,
			Help:    "Number of CPUs allocated for each newly successful claim allocation.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}}),
	}
	reg.MustRegister(m.allocatedCPUs, m.availableCPUs, m.reservedCPUs, m.activeResourceClaims,
		m.prepareClaims, m.unprepareClaims, m.prepareClaimDuration, m.claimAllocatedCPUs)
	for _, r := range []Result{ResultSuccess, ResultError, ResultUnknown} {
		m.prepareClaims.WithLabelValues(r.String())
		m.unprepareClaims.WithLabelValues(r.String())
	}
	return m
}

func (m *Metrics) SetAllocationState(s AllocationState) {
	m.allocatedCPUs.Set(float64(s.AllocatedCPUs))
	m.availableCPUs.Set(float64(s.AvailableCPUs))
	m.reservedCPUs.Set(float64(s.ReservedCPUs))
	m.activeResourceClaims.Set(float64(s.ActiveResourceClaims))
}

func (m *Metrics) RecordPrepare(r Result, d time.Duration) {
	m.prepareClaims.WithLabelValues(r.String()).Inc()
	m.prepareClaimDuration.Observe(d.Seconds())
}

func (m *Metrics) RecordUnprepare(r Result) { m.unprepareClaims.WithLabelValues(r.String()).Inc() }

func (m *Metrics) RecordClaimAllocatedCPUs(cpus int) { m.claimAllocatedCPUs.Observe(float64(cpus)) }

type noop struct{}

// Noop discards every observation (a driver built without metrics, the v0.2 flavour, tests).
func Noop() Recorder { return noop{} }

func (noop) SetAllocationState(AllocationState)  {}
func (noop) RecordPrepare(Result, time.Duration) {}
func (noop) RecordUnprepare(Result)              {}
func (noop) RecordClaimAllocatedCPUs(int)        {}
