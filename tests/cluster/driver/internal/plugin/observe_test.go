// Tests of observe.go: the metrics the handlers record, named after upstream dra-driver-cpu main
// pkg/driver/metrics_test.go (TestMetricsPrepareResults, TestMetricsAllocationStateAndClaimSize,
// TestMetricsUnprepareResults, TestMetricsNRIAllocationState), and the operation ids the handlers
// log, checked with the rules of upstream's test/pkg/logcheck/ctxlog.go as its e2e ReportAfterSuite
// "contextual logging" (test/e2e/contextual_logging_test.go) applies them.
package plugin

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/metrics"
)

type fakeRecorder struct {
	states               []metrics.AllocationState
	prepares, unprepares []metrics.Result
	claimCPUs            []int
}

func (f *fakeRecorder) SetAllocationState(s metrics.AllocationState) { f.states = append(f.states, s) }
func (f *fakeRecorder) RecordPrepare(r metrics.Result, _ time.Duration) {
	f.prepares = append(f.prepares, r)
}
func (f *fakeRecorder) RecordUnprepare(r metrics.Result)  { f.unprepares = append(f.unprepares, r) }
func (f *fakeRecorder) RecordClaimAllocatedCPUs(cpus int) { f.claimCPUs = append(f.claimCPUs, cpus) }

func (f *fakeRecorder) last() metrics.AllocationState { return f.states[len(f.states)-1] }

func metered(t *testing.T) (*Driver, *fakeRecorder) {
	d := newDriver(t, config.ModeGrouped, t.TempDir())
	f := &fakeRecorder{}
	d.Metrics = f
	return d, f
}

func TestMetricsPrepareResults(t *testing.T) {
	d, f := metered(t)
	prepare(t, d, claim("u1", grouped("cpudevnuma000", "2")))
	prepare(t, d, claim("u2", grouped("cpudevnuma000", "9"))) // not enough CPUs
	if fmt.Sprint(f.prepares) != "[success error]" {
		t.Fatalf("prepare results %v", f.prepares)
	}
}

// node-a: 12 CPUs, 0-1 reserved. The reserved count is the configured set's size; the available
// ones are the topology's CPUs minus the reserved and the allocated; a reused claim records no size.
func TestMetricsAllocationStateAndClaimSize(t *testing.T) {
	d, f := metered(t)
	prepare(t, d, claim("u1", grouped("cpudevnuma000", "3")))
	prepare(t, d, claim("u2", grouped("cpudevnuma001", "2")))
	prepare(t, d, claim("u1", grouped("cpudevnuma000", "3"))) // again: reuses its CPUs
	want := metrics.AllocationState{AllocatedCPUs: 5, AvailableCPUs: 5, ReservedCPUs: 2, ActiveResourceClaims: 2}
	if f.last() != want {
		t.Fatalf("state %+v, want %+v", f.last(), want)
	}
	if fmt.Sprint(f.claimCPUs) != "[3 2]" {
		t.Fatalf("claim sizes %v", f.claimCPUs)
	}
}

func TestMetricsUnprepareResults(t *testing.T) {
	d, f := metered(t)
	prepare(t, d, claim("u1", grouped("cpudevnuma000", "2")))
	if _, err := d.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{
		{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c-u1"}, UID: "u1"}}); err != nil {
		t.Fatal(err)
	}
	want := metrics.AllocationState{AllocatedCPUs: 0, AvailableCPUs: 10, ReservedCPUs: 2, ActiveResourceClaims: 0}
	if fmt.Sprint(f.unprepares) != "[success]" || f.last() != want {
		t.Fatalf("unprepare %v, state %+v", f.unprepares, f.last())
	}
}

// Synchronize (the driver's restart) publishes the state of the claims it knows; v0.2.0's
// StopContainer releases a claim's CPUs, so they count as available again.
func TestMetricsNRIAllocationState(t *testing.T) {
	d, f := metered(t)
	prepare(t, d, claim("u1", grouped("cpudevnuma000", "2")))
	f.states = nil
	if _, err := d.Synchronize(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.states) != 1 || f.last().AllocatedCPUs != 2 || f.last().ActiveResourceClaims != 1 {
		t.Fatalf("after Synchronize: %+v", f.states)
	}
	d.flavor = config.FlavorV02
	pod := &api.PodSandbox{Id: "p", Name: "vm", Namespace: "ns", Uid: "pu"}
	ctr := &api.Container{Id: "c", Name: "x", Env: []string{"DRA_CPUSET_u1=2-3"}}
	if _, _, err := d.CreateContainer(context.Background(), pod, ctr); err != nil {
		t.Fatal(err)
	}
	if _, err := d.StopContainer(context.Background(), pod, ctr); err != nil {
		t.Fatal(err)
	}
	if f.last().AllocatedCPUs != 0 || f.last().AvailableCPUs != 10 {
		t.Fatalf("after v0.2 StopContainer: %+v", f.last())
	}
}

// --- operation ids, upstream's logcheck rules ---

var kvPairRE = regexp.MustCompile(`(\w+)=("([^"]*)"|(\S+))`)

type logLine struct{ message, kv string }

func parseLog(raw string) []logLine {
	var out []logLine
	for _, l := range strings.Split(raw, "\n") {
		parts := strings.SplitN(l, "] ", 2)
		if len(parts) != 2 || !strings.HasPrefix(parts[1], `"`) {
			continue
		}
		end := strings.Index(parts[1][1:], `"`)
		out = append(out, logLine{parts[1][1 : end+1], strings.TrimSpace(parts[1][end+2:])})
	}
	return out
}

// checkOperations is logcheck's DuplicateKeys, ImbalancedFlowTags and DemuxFlows plus the suite's
// begin-first/end-last rule; it returns the operations (opID -> messages) and the problems found.
func checkOperations(lines []logLine) (map[string][]string, []string) {
	ops := map[string][]string{}
	var problems []string
	balance := map[string]int{}
	for _, l := range lines {
		seen := map[string]bool{}
		for _, m := range kvPairRE.FindAllStringSubmatch(l.kv, -1) {
			if seen[m[1]] {
				problems = append(problems, "duplicate key "+m[1]+" in "+l.message)
			}
			seen[m[1]] = true
			if m[1] == "opID" {
				if !regexp.MustCompile(`^[0-9a-f]+$`).MatchString(m[3]) {
					problems = append(problems, "invalid opID "+m[0])
				}
				ops[m[3]] = append(ops[m[3]], l.message)
			}
		}
		if op, ok := strings.CutPrefix(l.message, "begin: "); ok {
			balance[op]++
		} else if op, ok := strings.CutPrefix(l.message, "end: "); ok {
			balance[op]--
		}
	}
	for op, n := range balance {
		if n != 0 {
			problems = append(problems, "begin/end imbalance for "+op)
		}
	}
	for id, msgs := range ops {
		if !strings.HasPrefix(msgs[0], "begin: ") || !strings.HasPrefix(msgs[len(msgs)-1], "end: ") {
			problems = append(problems, fmt.Sprintf("operation %s: %q", id, msgs))
		}
	}
	return ops, problems
}

func TestOperationIDsAsUpstreamsContextualLoggingCheck(t *testing.T) {
	var buf bytes.Buffer
	ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(
		textlogger.Output(&buf), textlogger.Verbosity(4))).WithValues("driver", DriverName))
	d := newDriver(t, config.ModeGrouped, t.TempDir())
	if _, err := d.PrepareResourceClaims(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim("u1", grouped("cpudevnuma000", "2")),
		claim("u2", grouped("cpudevnuma000", "99"))}); err != nil {
		t.Fatal(err)
	}
	pod := &api.PodSandbox{Id: "p", Name: "vm", Namespace: "ns", Uid: "pu"}
	ctr := &api.Container{Id: "c", Name: "x", Env: []string{"DRA_CPUSET_u1=2-3"}}
	if _, _, err := d.CreateContainer(ctx, pod, ctr); err != nil {
		t.Fatal(err)
	}
	_, _ = d.StopContainer(ctx, pod, ctr)
	_ = d.RemoveContainer(ctx, pod, ctr)
	if _, err := d.Synchronize(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{
		{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c-u1"}, UID: "u1"}}); err != nil {
		t.Fatal(err)
	}
	ops, problems := checkOperations(parseLog(buf.String()))
	if len(problems) > 0 {
		t.Fatalf("%s\nlog:\n%s", strings.Join(problems, "\n"), buf.String())
	}
	begins := map[string]int{}
	for id, msgs := range ops {
		if len(id) != opIDLen {
			t.Errorf("opID %q is not %d hex digits", id, opIDLen)
		}
		begins[msgs[0]]++
	}
	for _, op := range []string{"preparing resource claims", "unpreparing resource claims", "CreateContainer",
		"StopContainer", "RemoveContainer", "synchronize state with the runtime"} {
		want := 1
		if op == "preparing resource claims" {
			want = 2
		}
		if begins["begin: "+op] != want {
			t.Errorf("%d operations %q, want %d (ops %v)", begins["begin: "+op], op, want, ops)
		}
	}
}

// Negative controls for checkOperations: a line of an operation before its begin, an operation
// without its end, a repeated key and an opID that is not hex are each reported.
func TestCheckOperationsRefuses(t *testing.T) {
	for name, raw := range map[string]string{
		"before begin": "I0 x.go:1] \"prepared claim\" opID=\"ab\"\nI0 x.go:2] \"begin: p\" opID=\"ab\"\nI0 x.go:3] \"end: p\" opID=\"ab\"",
		"no end":       "I0 x.go:1] \"begin: p\" opID=\"ab\"\nI0 x.go:2] \"prepared\" opID=\"ab\"",
		"dup key":      "I0 x.go:1] \"begin: p\" opID=\"ab\" claim=\"a\" claim=\"b\"\nI0 x.go:3] \"end: p\" opID=\"ab\"",
		"not hex":      "I0 x.go:1] \"begin: p\" opID=\"XY\"\nI0 x.go:3] \"end: p\" opID=\"XY\"",
	} {
		if _, problems := checkOperations(parseLog(raw)); len(problems) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}
