//go:build tools

// Package tools pins crane, which builds the real nodes' images (pause) and pushes them to the
// cluster's local registry.
package tools

import (
	_ "github.com/google/go-containerregistry/cmd/crane"
)
