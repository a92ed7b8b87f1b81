// Package plugin owns the kubelet plugin: start, registration wait, publication and the
// DRAPlugin callbacks (prepare.go), built on k8s.io/dynamic-resource-allocation kubeletplugin.
//
// Mirrors upstream pkg/driver/driver.go (New, Start, registrarDir, pluginDataDir,
// checkSocketPathFits, waitForRegistration, Stop), dra_hooks.go PublishResources and HandleError;
// the NRI plugin is nri.go; device metadata (main) is metadata.go; operation ids and metrics are
// observe.go. Not ported: device health (WatchHealthStatus answers "not supported").
package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/nri/pkg/stub"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/devices"
	"kubevirtci.io/dra-cpu/testdriver/internal/metrics"
)

const (
	DriverName               = "dra.cpu"
	registrationPollInterval = time.Second
	registrationTimeout      = 30 * time.Second
	unixPathMax              = 107
)

// Driver is the running plugin.
type Driver struct {
	driverName, nodeName, flavor, mode string
	groupBy                            string
	kubeletRootDir, dataDir, cdiDir    string
	set                                devices.Set
	client                             kubernetes.Interface
	helper                             *kubeletplugin.Helper

	mu         sync.Mutex
	claims     map[types.UID]preparedClaim
	containers map[string]containerState // by container id (nri.go)
	owners     map[types.UID]owner       // main: the container each claim is bound to (owners.go)
	nri        stub.Stub

	// Metrics records the driver's metrics (main: internal/metrics on the default registry; nil: none)
	Metrics metrics.Recorder
}

// New prepares the driver (no listener yet); set holds the devices built from the topology.
func New(client kubernetes.Interface, nodeName string, cfg config.Config, flavor string, set devices.Set) *Driver {
	return &Driver{driverName: DriverName, nodeName: nodeName, flavor: flavor, mode: cfg.CPUDeviceMode, groupBy: cfg.GroupBy,
		kubeletRootDir: cfg.KubeletRootDir, dataDir: PluginDataDir(cfg.KubeletRootDir, DriverName),
		cdiDir: CDISpecDir, set: set, client: client, claims: map[types.UID]preparedClaim{},
		containers: map[string]containerState{}, owners: map[types.UID]owner{}}
}

// RegistrarDir is <kubelet-root>/plugins_registry.
func RegistrarDir(root string) string { return filepath.Join(root, "plugins_registry") }

// PluginDataDir is <kubelet-root>/plugins/<driver> (the DRA socket dra.sock lives there).
func PluginDataDir(root, driver string) string { return filepath.Join(root, "plugins", driver) }

func checkSocketPathFits(root, driver string) error {
	socket := filepath.Join(RegistrarDir(root), driver+"-reg.sock")
	if len(socket) > unixPathMax {
		return fmt.Errorf("kubelet registrar socket path %q is %d bytes, over the %d-byte limit for a Unix socket path: kubeletRootDir has %d bytes to spend and is using %d",
			socket, len(socket), unixPathMax, unixPathMax-(len(socket)-len(root)), len(root))
	}
	return nil
}

// Start registers the plugin with the kubelet, waits for the registration, starts the NRI plugin
// and publishing. The channel gets an error when the NRI plugin failed for good (the driver exits).
func (d *Driver) Start(ctx context.Context) (<-chan error, error) {
	logger := klog.FromContext(ctx)
	if d.flavor == config.FlavorMain {
		if err := checkSocketPathFits(d.kubeletRootDir, d.driverName); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(d.dataDir, 0o750); err != nil {
		return nil, fmt.Errorf("failed to create plugin path %s: %w", d.dataDir, err)
	}
	claims, err := loadCheckpoint(d.dataDir)
	if err != nil {
		return nil, err
	}
	d.claims = claims
	d.mu.Lock()
	d.refreshAllocationMetrics()
	d.mu.Unlock()
	logger.Info("Initialized CDI manager", "driverName", d.driverName, "cdiDir", d.cdiDir, "preparedClaims", len(claims))
	helper, err := kubeletplugin.Start(ctx, d, d.pluginOptions()...)
	if err != nil {
		return nil, fmt.Errorf("start kubelet plugin: %w", err)
	}
	d.helper = helper
	if err := d.waitForRegistration(ctx); err != nil {
		return nil, err
	}
	nriFailed, err := d.startNRI(ctx)
	if err != nil {
		return nil, err
	}
	go d.PublishResources(ctx)
	return nriFailed, nil
}

// pluginOptions are upstream Start's kubeletplugin options: driver, node, client, registrar and
// plugin data directories, and (main) device metadata.
func (d *Driver) pluginOptions() []kubeletplugin.Option {
	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(d.driverName),
		kubeletplugin.NodeName(d.nodeName),
		kubeletplugin.KubeClient(d.client),
		kubeletplugin.RegistrarDirectoryPath(RegistrarDir(d.kubeletRootDir)),
		kubeletplugin.PluginDataDirectoryPath(d.dataDir),
	}
	return append(opts, metadataOptions(d.flavor)...)
}

// waitForRegistration is upstream's: poll RegistrationStatus every second for 30 s; on timeout
// name the last rejection, or that the kubelet never answered (v0.2: the bare wait error).
func (d *Driver) waitForRegistration(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	var last string
	saw := false
	err := wait.PollUntilContextTimeout(ctx, registrationPollInterval, registrationTimeout, true, func(context.Context) (bool, error) {
		st := d.helper.RegistrationStatus()
		if st == nil {
			return false, nil
		}
		saw = true
		if st.Error != "" && st.Error != last {
			if last != "" {
				logger.Info("kubelet gave a new reason for refusing the plugin", "previous", last, "current", st.Error)
			}
			last = st.Error
		}
		return st.PluginRegistered, nil
	})
	if err == nil || d.flavor != config.FlavorMain || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	switch {
	case last != "":
		return fmt.Errorf("kubelet did not register the plugin, last rejection was %q: %w", last, err)
	case saw:
		return fmt.Errorf("kubelet did not register the plugin and reported no reason: %w", err)
	default:
		return fmt.Errorf("kubelet never reported a registration status, check that it watches %s: %w", RegistrarDir(d.kubeletRootDir), err)
	}
}

// PublishResources publishes one pool named after the node; with no device chunks (every CPU
// reserved, not machine mode) it returns before calling the helper, as upstream does.
func (d *Driver) PublishResources(ctx context.Context) {
	ctx, logger := withOpID(ctx, "deviceMode", d.mode, "groupBy", d.groupBy)
	logger.V(4).Info("begin: publishing resources")
	defer logger.V(4).Info("end: publishing resources")
	if d.set.Chunks == nil {
		logger.Info("no devices to publish or error occurred")
		return
	}
	slices := make([]resourceslice.Slice, 0, len(d.set.Chunks))
	for _, c := range d.set.Chunks {
		slices = append(slices, resourceslice.Slice{Devices: c})
	}
	res := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{d.nodeName: {Slices: slices}}}
	logger.Info("publishing resources", "pool", d.nodeName, "devices", len(d.set.Devices), "slices", len(slices))
	if err := d.helper.PublishResources(ctx, res); err != nil {
		logger.Error(err, "error publishing resources")
	}
}

// HandleError implements kubeletplugin.DRAPlugin: log; exit on an unrecoverable error.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	runtime.HandleErrorWithContext(ctx, err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) {
		klog.FromContext(ctx).Error(err, "fatal unrecoverable error in DRA driver, exiting",
			"driver", d.driverName, "node", d.nodeName, "message", msg)
		klog.Flush()
		os.Exit(1)
	}
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin (required since library v0.37): no device
// health, as upstream's stub in fa69d1e ("adapt to the 1.37 kubeletplugin API").
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

// Stop stops the NRI plugin and the kubelet plugin helper.
func (d *Driver) Stop() {
	if d.nri != nil {
		d.nri.Stop()
	}
	if d.helper != nil {
		d.helper.Stop()
	}
}
