// node.go owns one simulated node's driver in publish mode: what cmd/dracpu's run does before
// the kubelet plugin starts (flags, config, node name, topology, devices, the same log lines) and
// then what kubeletplugin.Helper.PublishResources does (a resourceslice controller owned by the
// Node named after the pool). No kubelet, no gRPC, no NRI: a simulated node has no containers.
package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/devices"
	"kubevirtci.io/dra-cpu/testdriver/internal/topology"
)

// DriverName is the driver's name (as internal/plugin's).
const DriverName = "dra.cpu"

// lineWriter turns the logger's output into lines: kept for a reply while starting, emitted as
// log events afterwards.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	keep bool
	kept []string
	emit func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.Reset()
			w.buf.WriteString(line)
			break
		}
		line = strings.TrimRight(line, "\n")
		if w.keep {
			w.kept = append(w.kept, line)
		} else if w.emit != nil {
			w.emit(line)
		}
	}
	return len(p), nil
}

// take returns the kept lines and switches to emitting.
func (w *lineWriter) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.kept
	w.kept, w.keep = nil, false
	return out
}

// nodeDriver is the driver of one simulated node: the last started driver container.
type nodeDriver struct {
	name   string
	server *Server

	mu     sync.Mutex
	pod    string
	pool   string
	set    devices.Set
	logger klog.Logger
	faulty bool // slices written by faults.go, not by the controller

	// the controller: StartController blocks until its informer synced (>= 1 s), so it starts in
	// a goroutine (requests for other nodes and this node's stop do not wait); cancel/done are
	// set while one runs or starts, ctrl once it started (the goroutine never takes mu)
	cancel context.CancelFunc
	done   chan struct{}
	ctrl   atomic.Pointer[resourceslice.Controller]
}

// start is cmd/dracpu main + run up to the kubelet plugin, for a driver container on this node.
// A failed start leaves the node's running driver alone (a new pod that crash-loops beside the
// old one); a successful one replaces it, as the new container's own controller would.
func (n *nodeDriver) start(ctx context.Context, req Request, reply Event) Event {
	w := &lineWriter{keep: true}
	flavor := req.Flavor
	if flavor == "" {
		flavor = config.FlavorMain
	}
	fail := func(exit int, err error) Event {
		reply.Exit, reply.Log = exit, w.take()
		if err != nil {
			reply.Error = err.Error()
		}
		return reply
	}
	if flavor != config.FlavorMain && flavor != config.FlavorV02 {
		fmt.Fprintf(w, "DRACPU_FLAVOR=%q: must be %q or %q\n", flavor, config.FlavorV02, config.FlavorMain)
		return fail(1, fmt.Errorf("unknown flavour %q", flavor))
	}
	p, err := config.Parse(flavor, req.Args, w)
	if err != nil {
		if config.IsHelp(err) {
			return fail(0, err)
		}
		return fail(2, err) // the flag package printed the error and the usage
	}
	lc := textlogger.NewConfig(textlogger.Output(w))
	_ = lc.Verbosity().Set(p.Logging.Verbosity().String())
	logger := textlogger.NewLogger(lc)
	// the container's files are what the kubelet mounted (--config, --sysfs-overlay)
	readFile := func(name string) ([]byte, error) {
		if data, ok := req.Files[path.Clean(name)]; ok {
			return []byte(data), nil
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOENT} // as os.ReadFile says it
	}
	cfg, err := p.ResolveWith(readFile)
	if err != nil {
		logger.Error(err, "failed to load configuration")
		return fail(1, err)
	}
	set, pool, err := prepare(logger, flavor, cfg, req.HostRoot, n.name, readFile)
	if err != nil {
		logger.Error(err, "failed to run")
		return fail(1, err)
	}
	pod := req.Pod // this logger is this container's: its lines go to its pod (never n.mu: callers hold it)
	w.emit = func(line string) { n.server.Emit(Event{Event: "log", Node: n.name, Pod: pod, Line: line}) }
	n.stop()
	n.mu.Lock()
	n.pod, n.pool, n.set, n.logger = req.Pod, pool, set, logger.WithValues("driver", DriverName)
	n.mu.Unlock()
	reply.OK, reply.Log, reply.Pool, reply.Devices, reply.Slices = true, w.take(), pool, len(set.Devices), len(set.Chunks)
	return reply
}

// prepare is run()'s part before the plugin starts: the same log lines, node name, topology and
// devices. hostRoot is the node's fake root (its sys/devices/system tree).
func prepare(logger klog.Logger, flavor string, cfg config.Config, hostRoot, node string,
	readFile func(string) ([]byte, error)) (devices.Set, string, error) {
	logger.Info("dracpu test driver (tests/cluster/driver, not the upstream binary; publish mode: simulated node)",
		"flavor", flavor, "node", node)
	logger.Info("configuration successfully loaded", "configuration", cfg.Dump())
	opts, err := devices.OptionsFrom(cfg, flavor)
	if err != nil {
		return devices.Set{}, "", err
	}
	sfs, err := topology.WithOverlayRead(os.DirFS(path.Join(hostRoot, "sys")), cfg.SysFSOverlay, readFile)
	if err != nil {
		return devices.Set{}, "", err
	}
	// the container's hostname is the node's (hostNetwork): nodeutil.GetHostname of the override
	pool := strings.ToLower(strings.TrimSpace(node))
	if cfg.HostnameOverride != "" {
		if pool, err = nodeutil.GetHostname(cfg.HostnameOverride); err != nil {
			return devices.Set{}, "", fmt.Errorf("can not obtain the node name, use the hostname-override flag if you want to set it to a specific value: %w", err)
		}
	}
	topo, err := topology.Read(logger, sfs)
	if err != nil {
		return devices.Set{}, "", fmt.Errorf("driver failed to initialize: %w", err)
	}
	logger.Info("CPU topology", "hostRoot", hostRoot, "topology", topo.Summary())
	if err := devices.ProbePCIe(logger, sfs, topo, &opts); err != nil {
		return devices.Set{}, "", fmt.Errorf("driver failed to initialize: %w", err)
	}
	set := devices.Build(topo, opts)
	for _, d := range set.Devices {
		logger.V(2).Info("device", "name", d.Name, "cpus", set.CPUs[d.Name].String())
	}
	logger.Info("driver started", "node", pool)
	return set, pool, nil
}

// resources is internal/plugin PublishResources' pool: one pool named after the node.
func (n *nodeDriver) resources(generation int64) *resourceslice.DriverResources {
	slices := make([]resourceslice.Slice, 0, len(n.set.Chunks))
	for _, c := range n.set.Chunks {
		slices = append(slices, resourceslice.Slice{Devices: c})
	}
	return &resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		n.pool: {Slices: slices, Generation: generation}}}
}

// publish is internal/plugin PublishResources (fault "" or "normal"), or a fault (faults.go).
func (n *nodeDriver) publish(ctx context.Context, fault string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.logger.GetSink() == nil {
		return errors.New("no driver started on this node")
	}

	switch {
	case fault == "" || fault == "normal":
		return n.publishNormal(ctx)
	case fault == "bump":
		return n.bump(ctx)
	case strings.HasPrefix(fault, "partial:"):
		return n.partial(ctx, strings.TrimPrefix(fault, "partial:"))
	}
	return fmt.Errorf("unknown fault %q", fault)
}

func (n *nodeDriver) publishNormal(ctx context.Context) error {
	logger := n.logger
	if n.set.Chunks == nil {
		logger.Info("no devices to publish or error occurred")
		return nil
	}
	if n.cancel != nil {
		return nil // published already: the controller keeps the pool as it is
	}
	n.faulty = false // the controller replaces what a fault left (obsolete slices go first)
	logger.Info("publishing resources", "pool", n.pool, "devices", len(n.set.Devices), "slices", len(n.set.Chunks))
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cctx = klog.NewContext(cctx, klog.LoggerWithName(logger, "ResourceSlice controller"))
	owner := resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: n.pool}
	opts := resourceslice.Options{
		DriverName: DriverName, KubeClient: n.server.client, Owner: &owner, Resources: n.resources(0),
		ErrorHandler: func(ctx context.Context, err error, msg string) {
			// kubeletplugin: every publishing error is recoverable (logged, retried)
			klog.FromContext(ctx).Error(err, msg)
		},
	}
	done := make(chan struct{})
	n.cancel, n.done = cancel, done
	go func() {
		defer close(done)
		ctrl, err := resourceslice.StartController(cctx, opts)
		if err != nil {
			if cctx.Err() == nil {
				logger.Error(err, "error publishing resources")
			}
			return
		}
		n.ctrl.Store(ctrl)
	}()
	return nil
}

// controller waits for the controller's start; nil if it failed or none was started.
func (n *nodeDriver) controller() *resourceslice.Controller {
	if n.done != nil {
		<-n.done
	}
	return n.ctrl.Load()
}

// stopLocked ends the node's controller (n.mu held); its slices stay.
func (n *nodeDriver) stopLocked() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	if ctrl := n.controller(); ctrl != nil {
		ctrl.Stop()
	}
	n.ctrl.Store(nil)
	n.cancel, n.done = nil, nil
}

// stop ends the node's controller (the driver container is gone); its slices stay.
func (n *nodeDriver) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopLocked()
}
