// metadata.go owns the KEP-5304 device metadata of a prepared claim (main flavour only; v0.2.0
// writes none): the library option that makes k8s.io/dynamic-resource-allocation's kubeletplugin
// write the files, and the attributes this driver hands it per prepared device.
//
// Mirrors upstream pkg/driver/driver.go Start (kubeletplugin.EnableDeviceMetadata(true,
// []schema.GroupVersion{metadata v1beta1}), since 9ae50da / fa69d1e), dra_hooks.go prepareDevices
// (Metadata = the device's published attributes plus dra.cpu/allocatedNumCPUs = the consumed
// capacity when the result has one, i.e. grouped mode) and getDeviceAttributes, and
// pkg/device/attributes.go AttributeAllocatedNumCPUs (metadata only, never published).
//
// The library then writes, per request, for claim <ns>/<name> (uid U), request R:
//   - <plugin dir>/dra-device-metadata/<ns>_<name>/R/metadata.json (a DeviceMetadata stream)
//   - /var/run/cdi/dra.cpu_metadata_U_R.json, CDI kind dra.cpu/metadata, device U_R, a read-only
//     bind mount of that file at
//     /var/run/kubernetes.io/dra-device-attributes/resourceclaims/<name>/R/dra.cpu-metadata.json
//     (resourceclaimtemplates/<pod claim name>/... for a claim made from a template)
//
// and adds that CDI device to the prepared devices of R; unprepare removes both.
package plugin

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/devices"
)

// AttrAllocatedNumCPUs is upstream device.AttributeAllocatedNumCPUs.
const AttrAllocatedNumCPUs = resourceapi.QualifiedName("dra.cpu/allocatedNumCPUs")

// MetadataVersions are the metadata API versions written (upstream: v1beta1 only).
var MetadataVersions = []schema.GroupVersion{metadatav1beta1.SchemeGroupVersion}

// metadataOptions are the kubeletplugin options for the flavour's device metadata.
func metadataOptions(flavor string) []kubeletplugin.Option {
	if flavor != config.FlavorMain {
		return nil
	}
	return []kubeletplugin.Option{kubeletplugin.EnableDeviceMetadata(true, MetadataVersions)}
}

// deviceAttributes is upstream getDeviceAttributes: the published attributes of a device.
func (d *Driver) deviceAttributes(name string) (map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, bool) {
	for _, dev := range d.set.Devices {
		if dev.Name == name {
			return dev.Attributes, true
		}
	}
	return nil, false
}

// deviceMetadata is the Metadata of one prepared device (nil: v0.2, unknown device, no attributes).
func (d *Driver) deviceMetadata(r resourceapi.DeviceRequestAllocationResult) *kubeletplugin.DeviceMetadata {
	if d.flavor != config.FlavorMain {
		return nil
	}
	attrs, ok := d.deviceAttributes(r.Device)
	if !ok || len(attrs) == 0 {
		return nil
	}
	out := make(map[string]resourceapi.DeviceAttribute, len(attrs)+1)
	for k, v := range attrs {
		out[string(k)] = v
	}
	if q, ok := r.ConsumedCapacity[devices.CPUResource]; ok {
		n := q.Value()
		out[string(AttrAllocatedNumCPUs)] = resourceapi.DeviceAttribute{IntValue: &n}
	}
	return &kubeletplugin.DeviceMetadata{Attributes: out}
}
