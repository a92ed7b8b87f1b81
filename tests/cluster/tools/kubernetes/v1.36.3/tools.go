//go:build tools

// Package tools pins the Kubernetes control-plane commands the test cluster builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy" // the real nodes' kubernetes Service (build.sh real-node)
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet" // the real nodes (build.sh real-node)
)
