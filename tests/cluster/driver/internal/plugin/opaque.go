// opaque.go owns machine grouping's only way to prepare a claim: an opaque cpuset configuration
// per request in the claim's allocation (written by an external scheduler, upstream
// docs/user/configuration.md and docs/user/opaque-cpuset-overrides.md).
//
// Mirrors upstream pkg/driver/dra_hooks.go getOpaqueCPUSet and validateOpaqueCPUSet, and
// api/opaque_config.go ParseOpaqueConfig (api/v1alpha1 OpaqueConfig). Two flavours of matching:
//   - main: resourceclaim.ConfigForResult (a config with no requests applies to every request, a
//     subrequest matches its base request), then this driver's configs; a DeviceClass config is refused.
//   - v0.2.0: every config of this driver in the allocation; a DeviceClass config is refused, each
//     must name exactly one request, and those naming this request count.
//
// Both: exactly one config must target the request, else `opaque config: request "<r>" is
// targeted by <n> configurations, must be targeted by exactly 1`.
package plugin

import (
	"encoding/json"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/utils/cpuset"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
)

// opaqueAPIVersion is upstream api/v1alpha1 APIVersion.
const opaqueAPIVersion = "v1alpha1"

// opaqueConfig is upstream api/v1alpha1 OpaqueConfig.
type opaqueConfig struct {
	APIVersion string `json:"apiVersion"`
	CPUConfig  struct {
		CPUSet string `json:"cpuset,omitempty"`
	} `json:"cpuConfig"`
}

// parseOpaqueConfig is upstream api.ParseOpaqueConfig.
func parseOpaqueConfig(raw []byte) (cpuset.CPUSet, error) {
	var c opaqueConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return cpuset.New(), fmt.Errorf("failed to unmarshal opaque config: %w", err)
	}
	if c.APIVersion != opaqueAPIVersion {
		return cpuset.New(), fmt.Errorf("unsupported opaque config apiVersion: %q", c.APIVersion)
	}
	if c.CPUConfig.CPUSet == "" {
		return cpuset.New(), fmt.Errorf("opaque config: cpuConfig.cpuset is empty or missing")
	}
	set, err := cpuset.Parse(c.CPUConfig.CPUSet)
	if err != nil {
		return cpuset.New(), fmt.Errorf("opaque config: failed to parse cpuset %q: %w", c.CPUConfig.CPUSet, err)
	}
	return set, nil
}

var errDeviceClassConfig = fmt.Errorf("opaque config: configuration from DeviceClass is not supported by this driver, custom cpusets must be defined per ResourceClaim request")

// matchOpaqueConfigs returns the configs of this driver that target the result's request.
func (d *Driver) matchOpaqueConfigs(all []resourceapi.DeviceAllocationConfiguration, r resourceapi.DeviceRequestAllocationResult) ([]resourceapi.DeviceAllocationConfiguration, error) {
	var out []resourceapi.DeviceAllocationConfiguration
	if d.flavor == config.FlavorMain {
		for _, c := range resourceclaim.ConfigForResult(all, r) {
			if c.Opaque.Driver != d.driverName {
				continue
			}
			if c.Source != resourceapi.AllocationConfigSourceClaim {
				return nil, errDeviceClassConfig
			}
			out = append(out, c)
		}
		return out, nil
	}
	for _, c := range all {
		if c.Opaque == nil || c.Opaque.Driver != d.driverName {
			continue
		}
		if c.Source != resourceapi.AllocationConfigSourceClaim {
			return nil, errDeviceClassConfig
		}
		if len(c.Requests) != 1 {
			return nil, fmt.Errorf("opaque config: parameters block must target exactly 1 request using the 'requests' field, found %d", len(c.Requests))
		}
		if c.Requests[0] == r.Request {
			out = append(out, c)
		}
	}
	return out, nil
}

// opaqueCPUSet is upstream getOpaqueCPUSet followed by the "no opaque cpuset configuration
// found" check of prepareGroupedResourceClaim.
func (d *Driver) opaqueCPUSet(alloc *resourceapi.AllocationResult, r resourceapi.DeviceRequestAllocationResult) (cpuset.CPUSet, error) {
	notFound := fmt.Errorf("no opaque cpuset configuration found for allocation request %q", r.Request)
	if alloc == nil {
		return cpuset.New(), notFound
	}
	matched, err := d.matchOpaqueConfigs(alloc.Devices.Config, r)
	if err != nil {
		return cpuset.New(), err
	}
	if len(matched) != 1 {
		return cpuset.New(), fmt.Errorf("opaque config: request %q is targeted by %d configurations, must be targeted by exactly 1", r.Request, len(matched))
	}
	if raw := matched[0].Opaque.Parameters.Raw; len(raw) > 0 {
		return parseOpaqueConfig(raw)
	}
	return cpuset.New(), notFound
}

// validateOpaqueCPUSet is upstream's: size = the consumed capacity, online, not reserved, not
// already in this claim, not prepared for another claim.
func (d *Driver) validateOpaqueCPUSet(set, assigned, held cpuset.CPUSet, n int64) error {
	if int64(set.Size()) != n {
		return fmt.Errorf("opaque config cpuset size %d does not match requested capacity %d", set.Size(), n)
	}
	if !set.IsSubsetOf(d.set.Online) {
		return fmt.Errorf("requested CPUs %s from opaque config contain offline cores: %s", set.String(), set.Difference(d.set.Online).String())
	}
	if r := set.Intersection(d.set.Reserved); r.Size() > 0 {
		return fmt.Errorf("requested CPUs %s from opaque config contain reserved cores: %s", set.String(), r.String())
	}
	if set.Intersection(assigned).Size() > 0 {
		return fmt.Errorf("requested CPUs %s from opaque config are already assigned to another device in this claim", set.String())
	}
	if set.Intersection(held).Size() > 0 {
		return fmt.Errorf("requested CPUs %s from opaque config conflict with already allocated claims", set.String())
	}
	return nil
}
