// What the node's runc wrapper does to the DRA driver's own container, and only to it: the parts of
// a node of its own that these test nodes share, given back to whichever driver binary runs there
// (upstream's v0.2.0 or the project's stand-in), so neither needs to know it runs on a test node.
//
//   - --driver-sysfs <dir> (a node whose CPU hardware is simulated): the node's fake
//     <dir>/devices/system/{cpu,node} bind-mounted read-only over the container's
//     /sys/devices/system/{cpu,node}. The node's own mount namespace has the same binds (the kubelet
//     reads them), but a container gets a sysfs mount of its own, which shows the machine's CPUs.
//     Upstream v0.2.0 reads its online CPUs from /sys itself (pkg/driver/driver.go Start,
//     os.DirFS(device.SysfsRoot)), and its topology from $HOST_ROOT/sys, "/" unset, as its image
//     leaves it (pkg/cpuinfo/cpuinfo.go hostRoot); with the binds both are the node's CPUs.
//   - --driver-bind-host <ip> (a cluster with several real nodes: they share one network namespace):
//     the driver's `--bind-address=:<port>` (every chart passes its healthzPort so) becomes
//     `<ip>:<port>`, the node's own address. On a machine of its own ":<port>" and the node's
//     address are the same; here a second node's driver would fail to bind ":<port>" (upstream binds
//     it before it starts, cmd/dracpu/app.go) and the kubelet's probe of that node would reach the
//     first node's driver.
//
// The driver's container is the one whose process runs /dracpu (every chart's args, upstream's
// image's CMD). Each change is one line of the wrapper's log.
package main

import (
	"path/filepath"
	"strings"
)

// DriverBinary is the program every chart runs as the driver's container.
const DriverBinary = "/dracpu"

// IsDriver tells whether spec (an OCI config.json) is the driver's container.
func IsDriver(spec map[string]any) bool {
	proc, _ := spec["process"].(map[string]any)
	args, _ := proc["args"].([]any)
	if len(args) == 0 {
		return false
	}
	first, _ := args[0].(string)
	return first == DriverBinary
}

// BindSysfs appends read-only binds of <dir>/devices/system/{cpu,node} over the container's
// /sys/devices/system/{cpu,node} (after its /sys mount, so they win); returns the destinations bound.
func BindSysfs(spec map[string]any, dir string) []string {
	mounts, _ := spec["mounts"].([]any)
	var bound []string
	for _, d := range []string{"cpu", "node"} {
		dest := "/sys/devices/system/" + d
		mounts = append(mounts, map[string]any{
			"destination": dest,
			"type":        "bind",
			"source":      filepath.Join(dir, "devices", "system", d),
			"options":     []any{"rbind", "ro", "nosuid", "nodev", "noexec"},
		})
		bound = append(bound, dest)
	}
	spec["mounts"] = mounts
	return bound
}

// BindHost turns the process's `--bind-address=:<port>` (or `--bind-address :<port>`) into
// `<host>:<port>`; an address that names a host stays. Returns the old and new values and whether
// it changed.
func BindHost(spec map[string]any, host string) (from, to string, changed bool) {
	proc, _ := spec["process"].(map[string]any)
	args, _ := proc["args"].([]any)
	for i, a := range args {
		s, _ := a.(string)
		switch {
		case strings.HasPrefix(s, "--bind-address=:") || strings.HasPrefix(s, "-bind-address=:"):
			flag, value, _ := strings.Cut(s, "=")
			args[i] = flag + "=" + host + value
			return value, host + value, true
		case (s == "--bind-address" || s == "-bind-address") && i+1 < len(args):
			value, _ := args[i+1].(string)
			if strings.HasPrefix(value, ":") {
				args[i+1] = host + value
				return value, host + value, true
			}
		}
	}
	return "", "", false
}
