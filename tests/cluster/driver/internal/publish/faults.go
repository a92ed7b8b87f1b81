// faults.go owns the harness's fault modes of a simulated node's driver, which no upstream
// release has: "bump" (republish the same devices as the next generation, through the
// controller's Pool.Generation) and "partial:<k>" (a pool that never completes: its devices spread
// over at least k+1 slices, only the first k written, resourceSliceCount = all of them). The
// devices are the driver's (internal/devices); only their split and the writes are the fault's.
package publish

import (
	"context"
	"fmt"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
)

// poolSlices lists the slices of the node's pool (the controller's own field selector).
func (n *nodeDriver) poolSlices(ctx context.Context) ([]resourceapi.ResourceSlice, int64, error) {
	sel := fields.Set{resourceapi.ResourceSliceSelectorDriver: DriverName,
		resourceapi.ResourceSliceSelectorNodeName: n.pool}.String()
	list, err := n.server.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, 0, fmt.Errorf("list ResourceSlices of pool %q: %w", n.pool, err)
	}
	var gen int64
	for _, s := range list.Items {
		gen = max(gen, s.Spec.Pool.Generation)
	}
	return list.Items, gen, nil
}

// bump asks the running controller for the next generation of the same devices.
func (n *nodeDriver) bump(ctx context.Context) error {
	if n.cancel == nil {
		if err := n.publishNormal(ctx); err != nil {
			return err
		}
	}
	ctrl := n.controller()
	if ctrl == nil {
		return fmt.Errorf("pool %q: no running ResourceSlice controller to bump", n.pool)
	}
	_, gen, err := n.poolSlices(ctx)
	if err != nil {
		return err
	}
	n.logger.Info("simulated driver-mode bump: republishing the same devices as the next generation",
		"pool", n.pool, "generation", gen+1)
	ctrl.Update(n.resources(gen + 1))
	return nil
}

// spread cuts devs into count slices as evenly as possible (some may be empty).
func spread(devs []resourceapi.Device, count int) [][]resourceapi.Device {
	out := make([][]resourceapi.Device, count)
	for i := range count {
		out[i] = devs[i*len(devs)/count : (i+1)*len(devs)/count]
	}
	return out
}

// partial writes the first k of at least k+1 slices (no controller: it would complete the pool).
func (n *nodeDriver) partial(ctx context.Context, arg string) error {
	k, err := strconv.Atoi(arg)
	if err != nil || k < 0 {
		return fmt.Errorf("partial:%s: want a whole number of slices", arg)
	}
	n.stopLocked()
	count := max(k+1, len(n.set.Chunks))
	chunks := spread(n.set.Devices, count)
	old, gen, err := n.poolSlices(ctx)
	if err != nil {
		return err
	}
	node, err := n.server.client.CoreV1().Nodes().Get(ctx, n.pool, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %q: %w", n.pool, err)
	}
	for _, s := range old {
		if err := n.server.client.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete ResourceSlice %s: %w", s.Name, err)
		}
	}
	n.faulty = true
	pool := resourceapi.ResourcePool{Name: n.pool, Generation: gen + 1, ResourceSliceCount: int64(count)}
	for i := range k {
		slice := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName: fmt.Sprintf("%05x-%s-%s-", i, DriverName, n.pool),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name,
					UID: node.UID, Controller: ptr.To(true)}},
			},
			Spec: resourceapi.ResourceSliceSpec{Driver: DriverName, NodeName: ptr.To(n.pool), Pool: pool,
				Devices: chunks[i]},
		}
		if _, err := n.server.client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ResourceSlice %d of pool %q: %w", i, n.pool, err)
		}
	}
	n.logger.Info("simulated driver-mode partial: the pool never completes", "pool", n.pool,
		"generation", gen+1, "written", k, "resourceSliceCount", count)
	return nil
}
