package main

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func node(name string, addrs ...v1.NodeAddress) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Addresses: addrs}}
}

// Two real nodes of the test cluster in one network namespace: each driver binds its own node's
// address, so the kubelet's readiness probe of a node reaches that node's driver.
func TestNodeBindAddress(t *testing.T) {
	client := fake.NewSimpleClientset(
		node("real01", v1.NodeAddress{Type: v1.NodeHostName, Address: "real01"},
			v1.NodeAddress{Type: v1.NodeInternalIP, Address: "10.9.249.1"}),
		node("real02", v1.NodeAddress{Type: v1.NodeInternalIP, Address: "10.9.249.2"}),
		node("bare"))
	ctx := context.Background()
	for _, tc := range []struct{ node, addr, want string }{
		{"real01", ":8080", "10.9.249.1:8080"},
		{"real02", ":8080", "10.9.249.2:8080"},
		{"real01", "127.0.0.1:8080", "127.0.0.1:8080"}, // a host given: as given (upstream)
		{"bare", ":8080", ":8080"},                     // no InternalIP: as given
		{"missing", ":8080", ":8080"},                  // no Node: as given
		{"real01", "8080", "8080"},                     // not host:port: as given (ListenAndServe says why)
	} {
		if got := nodeBindAddress(ctx, client, tc.node, tc.addr); got != tc.want {
			t.Errorf("nodeBindAddress(%s, %q) = %q, want %q", tc.node, tc.addr, got, tc.want)
		}
	}
}
