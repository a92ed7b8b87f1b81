// owners.go owns main's claim ownership: each prepared claim is bound to the first container that
// uses it, (pod UID, container name), as upstream main's pkg/store/claim_tracker.go ClaimTracker:
//   - SetOwner binds the claims of a container; a claim bound to another (pod, container) is refused
//     (`claimUID "<uid>" already bound to pod "<pod uid>" container "<name>"`); it returns the claims
//     bound now, none when the container only binds again (a restart), so CreateContainer re-pins the
//     shared containers only on the first CreateContainer after Prepare (nri_hooks.go
//     `if len(newOwners) > 0`), and Synchronize rebinds the running containers;
//   - Cleanup forgets claims: a failed CreateContainer's new bindings, and Unprepare's claim
//     (dra_hooks.go unprepareResourceClaim).
//
// v0.2.0 has no such tracker: it re-pins the shared containers on every claim container's
// CreateContainer (its nri_hooks.go) and binds nothing (the flavour check is in nri.go).
package plugin

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// owner is upstream's OwnerIdent.
type owner struct {
	podUID    types.UID
	container string
}

// setOwner binds claims to (podUID, container); the claims bound now. Call with d.mu held.
func (d *Driver) setOwner(podUID types.UID, container string, claims []types.UID) ([]types.UID, error) {
	if len(claims) == 0 {
		return nil, fmt.Errorf("no claims to bind")
	}
	cur := owner{podUID: podUID, container: container}
	for _, uid := range claims {
		if o, ok := d.owners[uid]; ok && o != cur {
			return nil, fmt.Errorf("claimUID %q already bound to pod %q container %q", uid, o.podUID, o.container)
		}
	}
	var bound []types.UID
	for _, uid := range claims {
		if _, ok := d.owners[uid]; ok {
			continue
		}
		d.owners[uid] = cur
		bound = append(bound, uid)
	}
	return bound, nil
}

// cleanupOwners forgets the claims' bindings. Call with d.mu held.
func (d *Driver) cleanupOwners(claims ...types.UID) {
	for _, uid := range claims {
		delete(d.owners, uid)
	}
}
