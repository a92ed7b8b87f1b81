package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the tests run main() in a child process with the argv[0] they choose.
func TestMain(m *testing.M) {
	if os.Getenv("DRACPU_TEST_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hostRoot is a $HOST_ROOT with one CPU and a "dracpu" process (pid 42) started as the 0.2.0 chart does.
func hostRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for rel, text := range map[string]string{
		"proc/42/comm": "dracpu\n", "proc/42/cmdline": "/dracpu\x00--v=4\x00--cpu-device-mode=grouped\x00--reserved-cpus=0\x00",
		"sys/devices/system/cpu/online": "0\n", "sys/devices/system/node/node0/cpulist": "0\n",
		"sys/devices/system/cpu/cpu0/topology/physical_package_id": "0\n",
		"sys/devices/system/cpu/cpu0/topology/core_id":             "0\n",
		"sys/devices/system/cpu/cpu0/node0/.keep":                  "",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Mirrors upstream cmd/dracpu/app.go's dispatch: v0.2.0 by argv[0] dracpu-gatherinfo alone (flag
// errors exit 2); main by the subcommand gatherinfo, argv[0] dracpu-gatherinfo being its
// compatibility path, root flags with a subcommand refused (exit 1), an unknown subcommand exit 1.
func TestGatherinfoDispatch(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := hostRoot(t)
	for _, tc := range []struct {
		flavor string
		argv   []string
		code   int
		want   string
	}{
		{"v0.2", []string{"/dracpu-gatherinfo", "--stdout"}, 0, "  cpuDeviceMode: grouped\n  groupBy: numanode\n  reservedCPUs: \"0\"\n"},
		{"v0.2", []string{"/dracpu-gatherinfo", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"main", []string{"/dracpu-gatherinfo", "--stdout"}, 0, "  kubeletRootDir: /var/lib/kubelet\n  reservedCPUs: \"0\"\n"},
		{"main", []string{"/dracpu", "gatherinfo", "--stdout"}, 0, "layoutVersion: v1\n"},
		{"main", []string{"/dracpu", "--v=4", "gatherinfo", "--stdout"}, 1, "dracpu: root flags cannot be combined with subcommands"},
		{"main", []string{"/dracpu", "introspect", "metrics"}, 1, `dracpu: unknown subcommand "introspect"`},
		{"main", []string{"/dracpu", "gatherinfo", "--stdout", "--output-dir=/tmp"}, 1, "dracpu: --stdout and --output-dir cannot be used together"},
	} {
		cmd := &exec.Cmd{Path: exe, Args: tc.argv, Env: append(os.Environ(), "DRACPU_TEST_RUN_MAIN=1",
			"DRACPU_FLAVOR="+tc.flavor, "HOST_ROOT="+root)}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s %q: exit %d, want %d with %q:\n%s", tc.flavor, tc.argv, code, tc.code, tc.want, out)
		}
	}
}
