// Tests named after upstream dra-driver-cpu main pkg/metrics/metrics_test.go
// (TestNewRegistersExpectedMetricFamilies, TestMetricsRecordsCollectors,
// TestMetricsRejectsUnboundedResultLabels, TestNoopRecorder).
package metrics

import (
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func TestNewRegistersExpectedMetricFamilies(t *testing.T) {
	reg := prometheus.NewRegistry()
	New(reg)
	fams := gather(t, reg)
	want := map[string]dto.MetricType{
		AllocatedCPUs: dto.MetricType_GAUGE, AvailableCPUs: dto.MetricType_GAUGE, ReservedCPUs: dto.MetricType_GAUGE,
		ActiveResourceClaims: dto.MetricType_GAUGE, PrepareClaims: dto.MetricType_COUNTER,
		UnprepareClaims: dto.MetricType_COUNTER, PrepareClaimDuration: dto.MetricType_HISTOGRAM,
		ClaimAllocatedCPUs: dto.MetricType_HISTOGRAM,
	}
	var names []string
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(fams) != len(want) {
		t.Fatalf("families %v, want %d", names, len(want))
	}
	for n, typ := range want {
		if f, ok := fams[n]; !ok || f.GetType() != typ {
			t.Errorf("%s: %v, want %v", n, f, typ)
		}
	}
	for _, n := range []string{PrepareClaims, UnprepareClaims} {
		if got := len(fams[n].Metric); got != 3 {
			t.Errorf("%s: %d pre-created results, want 3", n, got)
		}
	}
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name, result string) float64 {
	t.Helper()
	for _, m := range fams[name].Metric {
		if result == "" || (len(m.Label) == 1 && m.Label[0].GetValue() == result) {
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	t.Fatalf("%s{result=%q} not found", name, result)
	return 0
}

func TestMetricsRecordsCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.SetAllocationState(AllocationState{AllocatedCPUs: 3, AvailableCPUs: 5, ReservedCPUs: 2, ActiveResourceClaims: 1})
	m.RecordPrepare(ResultSuccess, time.Millisecond)
	m.RecordPrepare(ResultError, time.Millisecond)
	m.RecordUnprepare(ResultSuccess)
	m.RecordClaimAllocatedCPUs(3)
	fams := gather(t, reg)
	for _, c := range []struct {
		name, result string
		want         float64
	}{
		{AllocatedCPUs, "", 3}, {AvailableCPUs, "", 5}, {ReservedCPUs, "", 2}, {ActiveResourceClaims, "", 1},
		{PrepareClaims, "success", 1}, {PrepareClaims, "error", 1}, {PrepareClaims, "unknown", 0},
		{UnprepareClaims, "success", 1}, {PrepareClaimDuration, "", 2}, {ClaimAllocatedCPUs, "", 1},
	} {
		if got := value(t, fams, c.name, c.result); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.result, got, c.want)
		}
	}
}

func TestMetricsRejectsUnboundedResultLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.RecordUnprepare(Result("timeout"))
	fams := gather(t, reg)
	if got := len(fams[UnprepareClaims].Metric); got != 3 {
		t.Fatalf("%d label values, want the 3 bounded ones", got)
	}
	if value(t, fams, UnprepareClaims, "unknown") != 1 {
		t.Fatal("an unbounded result did not count as unknown")
	}
}

func TestNoopRecorder(t *testing.T) {
	r := Noop()
	r.SetAllocationState(AllocationState{AllocatedCPUs: 1})
	r.RecordPrepare(ResultSuccess, time.Second)
	r.RecordUnprepare(ResultError)
	r.RecordClaimAllocatedCPUs(1)
}
