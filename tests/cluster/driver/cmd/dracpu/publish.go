// publish.go owns `dracpu publish`: the publish mode for simulated nodes (internal/publish), one
// process for all of them, driven over stdin/stdout by tests/cluster/sim. Its flags:
// --kubeconfig (else $KUBECONFIG), --qps/--burst (the client's rate limit, shared by every node's
// controller).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"kubevirtci.io/dra-cpu/testdriver/internal/publish"
)

func publishMain(args []string) int {
	fs := flag.NewFlagSet("dracpu publish", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "admin kubeconfig of the cluster")
	qps := fs.Float64("qps", 200, "client-side requests per second, all nodes together")
	burst := fs.Int("burst", 400, "client-side burst, all nodes together")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "can not create client-go configuration: %v\n", err)
		return 1
	}
	restConfig.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	restConfig.ContentType = "application/vnd.kubernetes.protobuf"
	restConfig.QPS, restConfig.Burst = float32(*qps), *burst
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "can not create client-go client: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := publish.NewServer(client, os.Stdout).Serve(ctx, os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "reading requests: %v\n", err)
		return 1
	}
	return 0
}
