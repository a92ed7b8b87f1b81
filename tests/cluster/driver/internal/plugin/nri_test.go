// Tests of the NRI plugin (nri.go), each naming the upstream behaviour (pkg/driver/nri_hooks.go,
// main unless it says v0.2.0) it mirrors.
package plugin

import (
	"context"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/cpuset"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
)

func cpusOf(t *testing.T, adjust *api.ContainerAdjustment) string {
	t.Helper()
	if adjust == nil || adjust.Linux == nil || adjust.Linux.Resources == nil || adjust.Linux.Resources.Cpu == nil {
		t.Fatalf("no cpuset in the adjustment %v", adjust)
	}
	return adjust.Linux.Resources.Cpu.Cpus
}

func updated(updates []*api.ContainerUpdate) map[string]string {
	out := map[string]string{}
	for _, u := range updates {
		out[u.ContainerId] = u.Linux.Resources.Cpu.Cpus
	}
	return out
}

func prepareGrouped(t *testing.T, d *Driver, uid, dev, n string) string {
	t.Helper()
	if res := prepare(t, d, claim(uid, grouped(dev, n))); res.Err != nil {
		t.Fatalf("prepare %s: %v", uid, res.Err)
	}
	return d.claims[types.UID(uid)].CPUs
}

// upstream parseDRAEnvToClaimAllocations: only DRA_CPUSET_<uid>=<cpuset> entries count; a bad cpuset is an error
func TestParseDRAEnv(t *testing.T) {
	got, err := ParseDRAEnv([]string{"PATH=/bin", "DRA_CPUSET_u1=0-1", "DRA_CPUSET_u2=2,3", "DRA_CPUSETX=9"})
	if err != nil || len(got) != 2 || got["u1"].String() != "0-1" || got["u2"].String() != "2-3" {
		t.Fatalf("got %v %v", got, err)
	}
	if _, err := ParseDRAEnv([]string{"DRA_CPUSET_u1=a-b"}); err == nil {
		t.Fatal("a bad cpuset must be an error")
	}
	if _, err := ParseDRAEnv([]string{"DRA_CPUSET_u1"}); err == nil {
		t.Fatal("an entry without '=' must be an error")
	}
}

// upstream CreateContainer: a shared container gets the available CPUs minus the prepared ones; a
// claim's container gets its claim's CPUs and the shared containers are re-pinned without them
func TestCreateContainerPinsClaimsAndShrinksTheSharedPool(t *testing.T) {
	d := newDriver(t, config.ModeGrouped, t.TempDir())
	ctx := context.Background()
	pod := &api.PodSandbox{Id: "p1", Name: "web", Namespace: "ns", Uid: "pu1"}
	adjust, updates, err := d.CreateContainer(ctx, pod, &api.Container{Id: "shared1", Name: "web"})
	if err != nil || cpusOf(t, adjust) != "2-11" || len(updates) != 0 {
		t.Fatalf("shared container: %v %v %v", adjust, updates, err)
	}
	cpus := prepareGrouped(t, d, "u1", "cpudevnuma000", "2")
	if cpus != "2-3" {
		t.Fatalf("prepared %s", cpus)
	}
	vm := &api.PodSandbox{Id: "p2", Name: "vm", Namespace: "ns", Uid: "pu2"}
	adjust, updates, err = d.CreateContainer(ctx, vm, &api.Container{Id: "vm1", Name: "compute",
		Env: []string{"DRA_CPUSET_u1=2-3"}})
	if err != nil || cpusOf(t, adjust) != "2-3" {
		t.Fatalf("claim container: %v %v", adjust, err)
	}
	if got := updated(updates); len(got) != 1 || got["shared1"] != "4-11" {
		t.Fatalf("shared updates %v", got)
	}
}

// upstream CreateContainer (ValidateResourceClaimAllocations): only claims this driver prepared,
// with the CPUs it prepared, are trusted
func TestCreateContainerRefusesAClaimItDidNotPrepare(t *testing.T) {
	d := newDriver(t, config.ModeGrouped, t.TempDir())
	pod := &api.PodSandbox{Id: "p", Name: "vm", Namespace: "ns", Uid: "pu"}
	if _, _, err := d.CreateContainer(context.Background(), pod, &api.Container{Id: "c", Name: "x",
		Env: []string{"DRA_CPUSET_nope=2-3"}}); err == nil || !strings.Contains(err.Error(), "not prepared") {
		t.Fatalf("want a refusal, got %v", err)
	}
	prepareGrouped(t, d, "u1", "cpudevnuma000", "2")
	if _, _, err := d.CreateContainer(context.Background(), pod, &api.Container{Id: "c", Name: "x",
		Env: []string{"DRA_CPUSET_u1=4-5"}}); err == nil || !strings.Contains(err.Error(), "mismatch") {
		t.Fatalf("want a mismatch, got %v", err)
	}
}

// upstream StopContainer: main keeps the claim's CPUs until Unprepare and updates no one (TODO #279);
// v0.2.0 releases them at once and re-pins the shared containers
func TestStopContainerPerFlavour(t *testing.T) {
	for _, flavor := range []string{config.FlavorMain, config.FlavorV02} {
		d := newDriver(t, config.ModeGrouped, t.TempDir())
		d.flavor = flavor
		ctx := context.Background()
		pod := &api.PodSandbox{Id: "p", Name: "vm", Namespace: "ns", Uid: "pu"}
		d.CreateContainer(ctx, pod, &api.Container{Id: "shared1", Name: "web"})
		prepareGrouped(t, d, "u1", "cpudevnuma000", "2")
		ctr := &api.Container{Id: "vm1", Name: "compute", Env: []string{"DRA_CPUSET_u1=2-3"}}
		if _, _, err := d.CreateContainer(ctx, pod, ctr); err != nil {
			t.Fatal(err)
		}
		updates, err := d.StopContainer(ctx, pod, ctr)
		if err != nil {
			t.Fatal(err)
		}
		got := updated(updates)
		if flavor == config.FlavorMain && (len(got) != 0 || d.SharedCPUs().String() != "4-11") {
			t.Fatalf("main: updates %v, shared %s", got, d.SharedCPUs())
		}
		if flavor == config.FlavorV02 && (got["shared1"] != "2-11" || len(got) != 1) {
			t.Fatalf("v0.2: updates %v", got)
		}
	}
}

// upstream Synchronize: the runtime's containers are re-pinned from their DRA env (claims it did
// not prepare ignored), every shared container to the shared pool
func TestSynchronizeRebuildsFromTheEnvironment(t *testing.T) {
	d := newDriver(t, config.ModeGrouped, t.TempDir())
	prepareGrouped(t, d, "u1", "cpudevnuma001", "3")
	updates, err := d.Synchronize(context.Background(), nil, []*api.Container{
		{Id: "vm1", PodSandboxId: "p1", Name: "compute", Env: []string{"DRA_CPUSET_u1=6-8"}},
		{Id: "web", PodSandboxId: "p2", Name: "web"},
		{Id: "stale", PodSandboxId: "p3", Name: "old", Env: []string{"DRA_CPUSET_gone=9"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := updated(updates)
	want := map[string]string{"vm1": "6-8", "web": "2-5,9-11", "stale": "2-5,9-11"}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("updates %v, want %v", got, want)
		}
	}
	if d.SharedCPUs().String() != cpuset.New(2, 3, 4, 5, 9, 10, 11).String() {
		t.Fatalf("shared %s", d.SharedCPUs())
	}
}

// upstream main nri_hooks_test.go (the restarted container): the first CreateContainer after Prepare
// binds the claim and re-pins the shared containers; a restart of the same container (same pod and
// name, a new id) binds again and updates no one (`if len(newOwners) > 0`); v0.2.0 re-pins every time
func TestCreateContainerRepinsTheSharedPoolOnlyOnTheFirstOwnerOnMain(t *testing.T) {
	for _, flavor := range []string{config.FlavorMain, config.FlavorV02} {
		d := newDriver(t, config.ModeGrouped, t.TempDir())
		d.flavor = flavor
		ctx := context.Background()
		pod := &api.PodSandbox{Id: "p", Name: "vm", Namespace: "ns", Uid: "pu"}
		d.CreateContainer(ctx, &api.PodSandbox{Id: "s", Uid: "su"}, &api.Container{Id: "shared1", Name: "web"})
		prepareGrouped(t, d, "u1", "cpudevnuma000", "2")
		first := &api.Container{Id: "vm1", Name: "compute", Env: []string{"DRA_CPUSET_u1=2-3"}}
		if _, updates, err := d.CreateContainer(ctx, pod, first); err != nil || len(updated(updates)) != 1 {
			t.Fatalf("%s first: %v %v", flavor, updates, err)
		}
		d.StopContainer(ctx, pod, first)
		restarted := &api.Container{Id: "vm2", Name: "compute", Env: []string{"DRA_CPUSET_u1=2-3"}}
		adjust, updates, err := d.CreateContainer(ctx, pod, restarted)
		if err != nil || cpusOf(t, adjust) != "2-3" {
			t.Fatalf("%s restart: %v %v", flavor, adjust, err)
		}
		if flavor == config.FlavorMain && len(updates) != 0 {
			t.Fatalf("main: a restart must update no one, got %v", updated(updates))
		}
		if flavor == config.FlavorV02 && len(updated(updates)) != 1 {
			t.Fatalf("v0.2: updates %v", updated(updates))
		}
	}
}

// upstream main pkg/store/claim_tracker.go SetOwner: a claim bound to one container is refused to
// another ("already bound"), and a refused CreateContainer keeps no binding; Unprepare
// (dra_hooks.go unprepareResourceClaim, claimTracker.Cleanup) forgets the claim's owner
func TestMainBindsAClaimToOneContainer(t *testing.T) {
	d := newDriver(t, config.ModeGrouped, t.TempDir())
	ctx := context.Background()
	pod := &api.PodSandbox{Id: "p", Name: "vm", Namespace: "ns", Uid: "pu"}
	prepareGrouped(t, d, "u1", "cpudevnuma000", "2")
	if _, _, err := d.CreateContainer(ctx, pod, &api.Container{Id: "c1", Name: "compute",
		Env: []string{"DRA_CPUSET_u1=2-3"}}); err != nil {
		t.Fatal(err)
	}
	_, _, err := d.CreateContainer(ctx, pod, &api.Container{Id: "c2", Name: "sidecar", Env: []string{"DRA_CPUSET_u1=2-3"}})
	if err == nil || err.Error() != `claimUID "u1" already bound to pod "pu" container "compute"` {
		t.Fatalf("want the refusal, got %v", err)
	}
	// a mismatching cpuset is refused after binding: the new binding is dropped again
	prepareGrouped(t, d, "u2", "cpudevnuma001", "2")
	if _, _, err := d.CreateContainer(ctx, pod, &api.Container{Id: "c3", Name: "other",
		Env: []string{"DRA_CPUSET_u2=0-1"}}); err == nil || !strings.Contains(err.Error(), "mismatch") {
		t.Fatalf("want a mismatch, got %v", err)
	}
	if _, bound := d.owners["u2"]; bound {
		t.Fatal("a refused CreateContainer must not keep its binding")
	}
	if _, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{
		{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c-u1"}, UID: "u1"}}); err != nil {
		t.Fatal(err)
	}
	if _, bound := d.owners["u1"]; bound {
		t.Fatal("Unprepare must forget the claim's owner")
	}
}
