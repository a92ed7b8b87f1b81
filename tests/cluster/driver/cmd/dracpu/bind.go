// bind.go owns one adaptation of the test driver to the test cluster, not to upstream: where the
// healthz server listens. Upstream listens on --bind-address as given (the chart's ":8080", every
// address of the node's network namespace), and on a real machine each node has a namespace of its
// own. The test cluster's real nodes share one network namespace (tests/cluster/cluster_netns.py),
// so a second node's driver could not bind ":8080" ("address already in use") and the kubelet's
// readiness probe of that node (podIP = the node's address, the pod is hostNetwork) would be
// answered by the first node's driver. With an empty host part, the driver binds its own node's
// InternalIP instead (read from its Node, which the chart's ClusterRole lets it get), so each
// probe reaches the driver of its own node, as on separate machines.
package main

import (
	"context"
	"net"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// nodeBindAddress is addr with its empty host replaced by node's InternalIP; addr unchanged when
// it names a host, is not host:port, or the Node has no InternalIP (or cannot be read in 10 s).
func nodeBindAddress(ctx context.Context, client kubernetes.Interface, node, addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return addr
	}
	for _, a := range n.Status.Addresses {
		if a.Type == v1.NodeInternalIP && a.Address != "" {
			return net.JoinHostPort(a.Address, port)
		}
	}
	return addr
}
