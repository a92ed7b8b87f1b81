// nri.go owns the NRI plugin: which CPUs each container is pinned to, through the node's
// container runtime (containerd's NRI socket /var/run/nri/nri.sock).
//
// Mirrors upstream pkg/driver/nri_hooks.go (main; v0.2.0 where it differs) and driver.go's NRI
// start (stub.New with plugin name "dra.cpu" and index "00", runNRIPluginWithRetry: 5 runs, then
// the driver exits):
//   - a container whose environment holds DRA_CPUSET_<claim uid>=<cpuset> (the CDI spec of a claim
//     prepared by this driver, cdi.go) is pinned to the union of its claims' CPUs
//     (CreateContainer); the claims must be ones this driver prepared, with those CPUs, and (main)
//     not bound to another container (owners.go);
//   - every other container is "shared": pinned to the available CPUs (all but the reserved ones)
//     minus the CPUs prepared for claims; when a claim's first container is created the running
//     shared containers are updated to the smaller set (main: only when the container bound a claim
//     now, not when it restarts; v0.2.0: on every claim container);
//   - StopContainer forgets the container; main keeps the claim's CPUs until Unprepare and updates
//     no one (upstream TODO #279), v0.2.0 releases them at once and updates the shared containers;
//   - Synchronize (the runtime's state when the plugin connects) rebuilds the container states
//     from their environment and re-pins every container.
//
// Not ported: upstream's metrics and the CDI cache refresh.
package plugin

import (
	"context"
	"fmt"
	"strings"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
)

const nriMaxAttempts = 5

// containerState is one container the runtime told us about: its pod and the claims it holds.
type containerState struct {
	pod    string
	claims []types.UID
}

// ParseDRAEnv returns the claim -> cpuset entries of a container's environment (upstream
// parseDRAEnvToClaimAllocations: entries without the DRA_CPUSET_ prefix are ignored, a malformed one is an error).
func ParseDRAEnv(envs []string) (map[types.UID]cpuset.CPUSet, error) {
	out := map[types.UID]cpuset.CPUSet{}
	for _, env := range envs {
		if !strings.HasPrefix(env, CDIEnvVarPrefix) {
			continue
		}
		key, value, ok := strings.Cut(env, "=")
		if !ok {
			return nil, fmt.Errorf("malformed DRA env entry %q", env)
		}
		uid, ok := strings.CutPrefix(key, CDIEnvVarPrefix+"_")
		if !ok {
			continue
		}
		set, err := cpuset.Parse(value)
		if err != nil {
			return nil, fmt.Errorf("failed to parse cpuset value %q from env %q: %w", value, env, err)
		}
		out[types.UID(uid)] = set
	}
	return out, nil
}

// SharedCPUs are the CPUs of containers without a claim: the available CPUs minus the prepared ones.
// Call with d.mu held.
func (d *Driver) SharedCPUs() cpuset.CPUSet {
	return d.set.Available().Difference(d.held(""))
}

// sharedUpdates re-pins every shared container but skip to the shared CPUs. Call with d.mu held.
func (d *Driver) sharedUpdates(skip string) []*api.ContainerUpdate {
	shared := d.SharedCPUs().String()
	var out []*api.ContainerUpdate
	for id, st := range d.containers {
		if id == skip || len(st.claims) > 0 {
			continue
		}
		u := &api.ContainerUpdate{ContainerId: id}
		u.SetLinuxCPUSetCPUs(shared)
		out = append(out, u)
	}
	return out
}

// checkPrepared refuses a claim this driver did not prepare with exactly these CPUs (upstream
// ValidateResourceClaimAllocations). Call with d.mu held.
func (d *Driver) checkPrepared(claims map[types.UID]cpuset.CPUSet) error {
	for uid, cpus := range claims {
		prev, ok := d.claims[uid]
		if !ok {
			return fmt.Errorf("claim %s was not prepared by this driver", uid)
		}
		if prev.CPUs != cpus.String() {
			return fmt.Errorf("claim %s: cpuset mismatch (prepared %q, container asks %q)", uid, prev.CPUs, cpus.String())
		}
	}
	return nil
}

// Synchronize implements the NRI plugin: the runtime's pods and containers when the plugin connects.
func (d *Driver) Synchronize(ctx context.Context, pods []*api.PodSandbox, containers []*api.Container) ([]*api.ContainerUpdate, error) {
	_, logger := withOpID(ctx)
	logger.Info("begin: synchronize state with the runtime", "numPods", len(pods), "numContainers", len(containers))
	defer logger.Info("end: synchronize state with the runtime", "numPods", len(pods), "numContainers", len(containers))
	d.mu.Lock()
	defer d.mu.Unlock()
	d.containers = map[string]containerState{}
	podUIDs := map[string]types.UID{}
	for _, p := range pods {
		podUIDs[p.Id] = types.UID(p.Uid)
	}
	var updates []*api.ContainerUpdate
	for _, c := range containers {
		claims, err := ParseDRAEnv(c.Env)
		if err != nil {
			logger.Error(err, "ignoring container with malformed DRA env during synchronize", "container", c.Name)
			continue
		}
		st := containerState{pod: c.PodSandboxId}
		all := cpuset.New()
		for uid, cpus := range claims {
			if err := d.checkPrepared(map[types.UID]cpuset.CPUSet{uid: cpus}); err != nil {
				logger.Error(err, "ignoring claim not prepared by this driver during synchronize", "container", c.Name)
				continue
			}
			st.claims = append(st.claims, uid)
			all = all.Union(cpus)
		}
		if len(st.claims) > 0 && d.flavor == config.FlavorMain {
			// main rebinds the running containers' claims (upstream returns the refusal)
			if _, err := d.setOwner(podUIDs[c.PodSandboxId], c.Name, st.claims); err != nil {
				return nil, err
			}
		}
		d.containers[c.Id] = st
		if len(st.claims) > 0 {
			u := &api.ContainerUpdate{ContainerId: c.Id}
			u.SetLinuxCPUSetCPUs(all.String())
			updates = append(updates, u)
		}
	}
	d.refreshAllocationMetrics()
	return append(updates, d.sharedUpdates("")...), nil
}

// CreateContainer implements the NRI plugin: pin the new container, re-pin the shared ones when a
// claim's CPUs leave the shared pool.
func (d *Driver) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	// upstream's keys and messages (the CPUs a container got are in the log at --v=2, the charts run --v=4)
	_, logger := withOpID(ctx, "pod", klog.KRef(pod.Namespace, pod.Name), "podUID", pod.Uid,
		"container", ctr.Name, "containerID", ctr.Id)
	logger.V(2).Info("begin: CreateContainer")
	defer logger.V(2).Info("end: CreateContainer")
	claims, err := ParseDRAEnv(ctr.Env)
	if err != nil {
		logger.Error(err, "error parsing DRA env for container")
		return nil, nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	adjust := &api.ContainerAdjustment{}
	if len(claims) == 0 {
		shared := d.SharedCPUs()
		d.containers[ctr.Id] = containerState{pod: pod.Id}
		logger.V(2).Info("no guaranteed CPUs found, using shared CPUs", "sharedCPUs", shared.String())
		adjust.SetLinuxCPUSetCPUs(shared.String())
		return adjust, nil, nil
	}
	all := cpuset.New()
	st := containerState{pod: pod.Id}
	for uid, cpus := range claims {
		all = all.Union(cpus)
		st.claims = append(st.claims, uid)
	}
	// main binds the claims to this container first (owners.go); v0.2.0 has no owners
	var bound []types.UID
	if d.flavor == config.FlavorMain {
		if bound, err = d.setOwner(types.UID(pod.Uid), ctr.Name, st.claims); err != nil {
			return nil, nil, err
		}
	}
	if err := d.checkPrepared(claims); err != nil {
		d.cleanupOwners(bound...)
		return nil, nil, err
	}
	d.containers[ctr.Id] = st
	logger.V(2).Info("guaranteed CPUs found", "cpus", all.String())
	adjust.SetLinuxCPUSetCPUs(all.String())
	// main: a new owner means the first CreateContainer after Prepare; on a restart the shared
	// cpuset has not changed (nri_hooks.go `if len(newOwners) > 0`). v0.2.0: always
	if d.flavor == config.FlavorMain && len(bound) == 0 {
		return adjust, nil, nil
	}
	return adjust, d.sharedUpdates(ctr.Id), nil
}

// StopContainer implements the NRI plugin (v0.2.0: the claim's CPUs go back to the shared pool now).
func (d *Driver) StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	_, logger := withOpID(ctx, "pod", klog.KRef(pod.Namespace, pod.Name), "podUID", pod.Uid,
		"container", ctr.Name, "containerID", ctr.Id)
	logger.V(2).Info("begin: StopContainer")
	defer logger.V(2).Info("end: StopContainer")
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.containers[ctr.Id]
	delete(d.containers, ctr.Id)
	if !ok || len(st.claims) == 0 || d.flavor == config.FlavorMain {
		return nil, nil
	}
	for _, uid := range st.claims {
		if c, had := d.claims[uid]; had {
			c.Released = true
			d.claims[uid] = c
		}
	}
	d.refreshAllocationMetrics()
	return d.sharedUpdates(ctr.Id), nil
}

// RemoveContainer implements the NRI plugin.
func (d *Driver) RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	_, logger := withOpID(ctx, "pod", klog.KRef(pod.Namespace, pod.Name), "podUID", pod.Uid,
		"container", ctr.Name, "containerID", ctr.Id)
	logger.V(2).Info("begin: RemoveContainer")
	defer logger.V(2).Info("end: RemoveContainer")
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.containers, ctr.Id)
	return nil
}

// startNRI connects to the runtime's NRI socket and runs the plugin in the background; after
// nriMaxAttempts failed runs it sends the error on the returned channel (upstream: the driver exits).
func (d *Driver) startNRI(ctx context.Context) (<-chan error, error) {
	logger := klog.FromContext(ctx)
	s, err := stub.New(d, stub.WithPluginName(d.driverName), stub.WithPluginIdx("00"),
		stub.WithOnClose(func() { logger.Info("NRI plugin closed") }))
	if err != nil {
		return nil, fmt.Errorf("failed to create plugin stub: %w", err)
	}
	d.nri = s
	failed := make(chan error, 1)
	go func() {
		for i := 0; i < nriMaxAttempts; i++ {
			err := s.Run(ctx)
			if ctx.Err() != nil {
				logger.Info("NRI plugin stopped", "reason", "context cancelled")
				return
			}
			if err != nil {
				logger.Error(err, "NRI plugin failed, restarting", "attempt", i+1, "maxAttempts", nriMaxAttempts)
			}
		}
		failed <- fmt.Errorf("NRI plugin failed for %d times to be restarted", nriMaxAttempts)
	}()
	return failed, nil
}
