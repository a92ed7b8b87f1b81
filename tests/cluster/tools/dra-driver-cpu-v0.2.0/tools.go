//go:build tools

// Package tools pins upstream's dra-driver-cpu v0.2.0 (the only version the Go module proxy serves):
// its driver (cmd/dracpu) and its e2e test image's programs (test/image/dracpuinfo, dracputester),
// built by tests/cluster/build.sh upstream; its chart and e2e suite are read from the module directory.
package tools

import (
	_ "github.com/kubernetes-sigs/dra-driver-cpu/cmd/dracpu"
	_ "github.com/kubernetes-sigs/dra-driver-cpu/test/image/dracpuinfo"
	_ "github.com/kubernetes-sigs/dra-driver-cpu/test/image/dracputester"
)
