// Command dracpu is the test cluster's simulated dra-driver-cpu: a real kubelet plugin that
// publishes the devices upstream would publish for the node's (fake) sysfs and prepares claims
// with CDI specs. It owns the process: flags and config (exit 2 on a flag error, 1 on a config
// error, as upstream), logging, /healthz (503 until Start returned, on --bind-address as given), the
// client, the node name and the signal handling; /metrics beside /healthz (main: internal/metrics); `dracpu publish` is publish.go; the debug report
// (internal/gatherinfo) is dispatched as upstream does: v0.2 by argv[0]'s basename `dracpu-gatherinfo`
// alone, main by the subcommand `gatherinfo` (argv[0] `dracpu-gatherinfo` becomes `dracpu gatherinfo`;
// root flags with a subcommand refused). Mirrors upstream cmd/dracpu/app.go main/run (v0.2.0 and main).
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"kubevirtci.io/dra-cpu/testdriver/internal/config"
	"kubevirtci.io/dra-cpu/testdriver/internal/devices"
	"kubevirtci.io/dra-cpu/testdriver/internal/gatherinfo"
	"kubevirtci.io/dra-cpu/testdriver/internal/metrics"
	"kubevirtci.io/dra-cpu/testdriver/internal/plugin"
	"kubevirtci.io/dra-cpu/testdriver/internal/topology"
)

var ready atomic.Bool

func main() {
	if len(os.Args) > 1 && os.Args[1] == "publish" {
		os.Exit(publishMain(os.Args[2:])) // simulated nodes (publish.go)
	}
	flavor, err := config.FlavorFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == gatherinfo.CommandName {
		if flavor == config.FlavorV02 {
			os.Exit(gatherinfoV02(args)) // v0.2.0: before any flag parsing
		}
		args = append([]string{"gatherinfo"}, args...) // main: the compatibility path of the subcommand
	}
	p, err := config.Parse(flavor, args, os.Stderr)
	if err != nil {
		if config.IsHelp(err) {
			os.Exit(0)
		}
		os.Exit(2) // flag.ExitOnError: the flag package printed the error and the usage
	}
	logger := textlogger.NewLogger(p.Logging)
	klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
	if flavor == config.FlavorMain && p.FlagSet.NArg() > 0 {
		os.Exit(subcommand(logger, p))
	}
	cfg, err := p.Resolve()
	if err != nil {
		logger.Error(err, "failed to load configuration")
		klog.Flush()
		os.Exit(1)
	}
	if err := run(logger, flavor, cfg); err != nil {
		logger.Error(err, "failed to run")
		klog.Flush()
		os.Exit(1)
	}
}

// gatherinfoV02 is v0.2.0's main for argv[0] dracpu-gatherinfo: the default logger, exit 1 on an error.
func gatherinfoV02(args []string) int {
	logger := textlogger.NewLogger(textlogger.NewConfig())
	if err := gatherinfo.Run(args, gatherinfo.Options{Flavor: config.FlavorV02}, logger); err != nil {
		fmt.Fprintf(os.Stderr, "dracpu-gatherinfo: %v\n", err)
		return 1
	}
	return 0
}

// subcommand is upstream main's subcommand dispatch (internal/subcommands Run): root flags refused,
// `gatherinfo` the report; upstream's `introspect` (metrics metadata) is not ported.
func subcommand(logger klog.Logger, p *config.Parsed) int {
	if p.FlagSet.NFlag() > 0 {
		fmt.Fprintln(os.Stderr, "dracpu: root flags cannot be combined with subcommands")
		return 1
	}
	var err error
	switch args := p.FlagSet.Args(); args[0] {
	case "gatherinfo":
		err = gatherinfo.Run(args[1:], gatherinfo.Options{Flavor: config.FlavorMain}, logger)
	default:
		err = fmt.Errorf("unknown subcommand %q; supported subcommands: gatherinfo (introspect is not ported)", args[0])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dracpu: %v\n", err)
		return 1
	}
	return 0
}

// healthMux is upstream run()'s mux: /healthz (503 until ready, then 200) and, in v0.2.0 and main,
// /metrics with promhttp.Handler() (the default registry: the Go and process collectors, and main's
// families, internal/metrics, once registered).
func healthMux(ready *atomic.Bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if ready.Load() {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.Handle("/metrics", promhttp.Handler())
	return mux
}

func run(logger klog.Logger, flavor string, cfg config.Config) error {
	logger.Info("dracpu test driver (tests/cluster/driver, not the upstream binary)", "flavor", flavor)
	logger.Info("configuration successfully loaded", "configuration", cfg.Dump())
	opts, err := devices.OptionsFrom(cfg, flavor)
	if err != nil {
		return err
	}
	sfs, err := topology.WithOverlay(topology.Host(), cfg.SysFSOverlay)
	if err != nil {
		return err
	}
	// upstream's order (cmd/dracpu/app.go): /healthz on --bind-address as given, then the client. Where
	// the test cluster's real nodes share a network namespace, the node's runc wrapper has already put
	// the node's own address into ":<port>" (tests/cluster/driver/cmd/runc-cpumap/driver.go)
	mux := healthMux(&ready)
	server := &http.Server{Addr: cfg.BindAddress, Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	go func() {
		if err := server.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			logger.Error(err, "HTTP server failed")
		}
	}()

	var restConfig *rest.Config
	if cfg.Kubeconfig != "" {
		restConfig, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	} else {
		restConfig, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("can not create client-go configuration: %w", err)
	}
	restConfig.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	restConfig.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("can not create client-go client: %w", err)
	}
	nodeName, err := nodeutil.GetHostname(cfg.HostnameOverride)
	if err != nil {
		return fmt.Errorf("can not obtain the node name, use the hostname-override flag if you want to set it to a specific value: %w", err)
	}

	ctx := klog.NewContext(context.Background(), logger.WithValues("driver", plugin.DriverName))
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	topo, err := topology.Read(logger, sfs)
	if err != nil {
		return fmt.Errorf("driver failed to initialize: %w", err)
	}
	logger.Info("CPU topology", "hostRoot", os.Getenv("HOST_ROOT"), "topology", topo.Summary())
	if err := devices.ProbePCIe(logger, sfs, topo, &opts); err != nil {
		return fmt.Errorf("driver failed to initialize: %w", err)
	}
	set := devices.Build(topo, opts)
	for _, d := range set.Devices {
		logger.V(2).Info("device", "name", d.Name, "cpus", set.CPUs[d.Name].String())
	}
	drv := plugin.New(client, nodeName, cfg, flavor, set)
	if flavor == config.FlavorMain {
		drv.Metrics = metrics.New(prometheus.DefaultRegisterer) // upstream main's driver.Config.Metrics
	}
	nriFailed, err := drv.Start(ctx)
	if err != nil {
		drv.Stop()
		return fmt.Errorf("driver failed to start: %w", err)
	}
	defer drv.Stop()
	ready.Store(true)
	logger.Info("driver started", "node", nodeName)

	select {
	case err := <-nriFailed:
		// upstream: the NRI plugin's last failure ends the driver (exit 1, the pod restarts)
		return fmt.Errorf("driver failed: %w", err)
	case <-ctx.Done():
	}
	stop()
	logger.Info("exiting", "reason", "received signal")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("HTTP server shutdown error: %w", err)
	}
	return nil
}
