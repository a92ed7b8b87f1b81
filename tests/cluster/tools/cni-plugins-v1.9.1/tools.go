//go:build tools

// Package tools pins the CNI plugins the test cluster's real nodes use (bridge, host-local, loopback).
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
)
