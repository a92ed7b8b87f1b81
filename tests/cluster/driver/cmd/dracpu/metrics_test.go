// /healthz and /metrics on the health port, as upstream dra-driver-cpu cmd/dracpu/app.go run()
// serves them (v0.2.0 and main), with main's families (pkg/metrics/metrics.go; ours internal/metrics)
// as upstream main's e2e "Metrics" spec (test/e2e/metrics_test.go) reads them: one unlabelled gauge
// sample each for dra_cpu_{allocated,available,reserved}_cpus and dra_cpu_resource_claims_active.
package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"kubevirtci.io/dra-cpu/testdriver/internal/metrics"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHealthPortServesMetrics(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(healthMux(&ready))
	defer srv.Close()
	if code, _ := get(t, srv.URL+"/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/healthz before ready: %d", code)
	}
	// v0.2.0 and the v0.2 flavour: the default registry without the driver's families
	code, body := get(t, srv.URL+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "go_goroutines") || strings.Contains(body, "dra_cpu_") {
		t.Fatalf("/metrics without the driver's families: %d\n%s", code, body)
	}
	m := metrics.New(prometheus.DefaultRegisterer) // main, as run() registers it
	m.SetAllocationState(metrics.AllocationState{AllocatedCPUs: 2, AvailableCPUs: 8, ReservedCPUs: 2, ActiveResourceClaims: 1})
	ready.Store(true)
	if code, _ := get(t, srv.URL+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz when ready: %d", code)
	}
	code, body = get(t, srv.URL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for name, value := range map[string]string{metrics.AllocatedCPUs: "2", metrics.AvailableCPUs: "8",
		metrics.ReservedCPUs: "2", metrics.ActiveResourceClaims: "1"} {
		if !regexp.MustCompile(`(?m)^# TYPE ` + name + ` gauge$`).MatchString(body) ||
			!regexp.MustCompile(`(?m)^` + name + ` ` + value + `$`).MatchString(body) {
			t.Errorf("%s: not one unlabelled gauge sample %s\n", name, value)
		}
	}
	for _, r := range []string{"success", "error", "unknown"} {
		if !strings.Contains(body, metrics.PrepareClaims+`{result="`+r+`"} 0`) {
			t.Errorf("%s{result=%q} not pre-created", metrics.PrepareClaims, r)
		}
	}
}
