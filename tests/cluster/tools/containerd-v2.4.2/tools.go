//go:build tools

// Package tools pins containerd, its runc shim and ctr for the test cluster's real nodes
// (`go install` refuses containerd: its go.mod has replace directives).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
