"""CRI-O on a real node (spec key `runtime: cri-o`, issue 32): the files its crio reads.

Owns: whether CRI-O nodes can start here (Debian's conmon present), the node's registries.conf
(every MIRRORED registry name pulls from the cluster's registry, as containerd's hosts files do) and
its crio.conf (private storage and state under the node's directory, NRI and CDI on as kubevirtci's
CRI-O has them, runc through the CPU-mapping wrapper with conmon, cgroupfs).
Must not: start or stop anything, or write files (cluster_real_node_config.py writes what these return).
"""
import os

from cluster_images import PAUSE_IMAGE

CONMON = "/usr/bin/conmon"   # Debian's conmon (hack/setup.sh installs it): CRI-O's container monitor
CRIO_SOCK = "/run/crio/crio.sock"   # in the node's own /run/crio (cluster_host_state.FIXED)
# the registry names a CRI-O node's registries.conf sends to the cluster's registry (containerd's
# _default hosts file covers every name; registries.conf has no catch-all): the pause and driver
# images' (cluster_images.py) and the usual public ones
MIRRORED = ["registry.k8s.io", "us-central1-docker.pkg.dev", "docker.io", "quay.io", "gcr.io", "ghcr.io"]


def crio_problem(specs, conmon=None):
    """Why the CRI-O nodes of `specs` cannot start here, or None (asked before anything starts)."""
    conmon = conmon or CONMON
    if any(s["runtime"] == "cri-o" for s in specs.values()) and not os.access(conmon, os.X_OK):
        names = ", ".join(n for n, s in specs.items() if s["runtime"] == "cri-o")
        return (f"real node(s) {names} run CRI-O, which needs Debian's conmon at {conmon}: "
                "make deps (hack/setup.sh installs it), or apt-get install conmon")
    return None


def registries_conf(registry):
    """A CRI-O node's registries.conf (containers-registries.conf(5)): every MIRRORED name pulls from
    `registry` (plain HTTP), keeping the repository path, as containerd's hosts files do."""
    out = 'unqualified-search-registries = ["docker.io"]\nshort-name-mode = "permissive"\n'
    for name in MIRRORED:
        out += (f'\n[[registry]]\nprefix = "{name}"\nlocation = "{name}"\n'
                f'[[registry.mirror]]\nlocation = "{registry}"\ninsecure = true\n')
    return out


def crio_conf(nd, dirs, cluster_id):
    """CRI-O's --config for node dir `nd`: private storage and state, NRI and CDI on (as kubevirtci's
    CRI-O has them: the NRI socket at /var/run/nri/nri.sock, where the driver's chart mounts it; the
    CDI spec dirs /etc/cdi and /var/run/cdi), runc through the CPU-mapping wrapper with Debian's
    conmon, cgroupfs as the kubelet, the sandbox image pinned, nothing read from /etc/crio or
    /etc/containers (CRI-O makes every directory it is given that is missing: each is the node's)."""
    return f"""# written by tests/cluster/cluster_real_node_config.py (tests/cluster/cluster_crio.py)
[crio]
root = "{nd}/crio/storage"
runroot = "/run/crio/storage"
storage_driver = "overlay"
log_dir = "{nd}/crio/log"
version_file = "/run/crio/version"
version_file_persist = "{nd}/crio/version"
clean_shutdown_file = "{nd}/crio/clean.shutdown"
internal_wipe = true

[crio.api]
listen = "{CRIO_SOCK}"
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
default_runtime = "runc"
cgroup_manager = "cgroupfs"
conmon_cgroup = "pod"
selinux = false
apparmor_profile = "unconfined"
seccomp_profile = ""
log_to_journald = false
hooks_dir = ["{nd}/crio/hooks.d"]
namespaces_dir = "/run/crio/ns"
pinns_path = "{dirs['crio']}/pinns"
container_exits_dir = "/run/crio/exits"
container_attach_socket_dir = "/run/crio"
cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
irqbalance_config_file = ""
irqbalance_config_restore_file = "disable"
enable_criu_support = false
disable_hostport_mapping = true
decryption_keys_path = "{nd}/crio/keys"

[crio.runtime.runtimes.runc]
runtime_path = "{nd}/runc-cpumap"
runtime_type = "oci"
runtime_root = "{nd}/runc"
monitor_path = "{CONMON}"
monitor_cgroup = "pod"
monitor_env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "DRACPU_CLUSTER_ID={cluster_id}"]

[crio.image]
pause_image = "{PAUSE_IMAGE}"
pinned_images = ["{PAUSE_IMAGE}"]
signature_policy = "{nd}/crio/policy.json"
signature_policy_dir = "{nd}/crio/policies"
namespaced_auth_dir = "{nd}/crio/auth"
short_name_mode = "disabled"
big_files_temporary_dir = "{nd}/crio/tmp"

[crio.network]
network_dir = "{nd}/cni/net.d"
plugin_dirs = ["{dirs['cni']}"]

[crio.metrics]
enable_metrics = false

[crio.nri]
enable_nri = true
nri_listen = "/var/run/nri/nri.sock"
nri_plugin_dir = "{nd}/crio/nri/plugins"
nri_plugin_config_dir = "{nd}/crio/nri/conf.d"
"""
