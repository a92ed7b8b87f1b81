//go:build tools

// Package tools pins CRI-O for the test cluster's real nodes that run it instead of containerd
// (CLUSTER_REAL_NODE_OVERRIDES '{"realNN": {"runtime": "cri-o"}}'). build.sh builds cmd/crio
// with CGO and pinns (C, the same module's pinns/) with the system compiler.
package tools

import (
	_ "github.com/cri-o/cri-o/cmd/crio"
)
