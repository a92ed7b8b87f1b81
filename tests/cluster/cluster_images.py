"""Images the real nodes pull, pushed to the local registry under the names the charts use by default.

Owns: the pause image, the busybox of verify's test pod, the driver images (upstream's own v0.2.0
where it can be had, else the project's driver), upstream's e2e test image and the project's image
for upstream's e2e suite. Must not: build binaries (build.sh) or touch the nodes.
"""
import os
import sys
import tarfile

from chart_sources import chart_file, chart_sources
from cluster_state import p, run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "sim"))
from sim_driver_pod import image_flavor  # noqa: E402  (the flavour an image tag carries)

PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"
# the same image under the role's default dra_cpu_verify_image (playbooks/verify.yml's test pod)
PAUSE_TAGS = ["3.10.1", "3.10"]
HOST_ROOT = "/var/lib/kubelet/plugins/dracpu-host"
# the role's default dra_cpu_verify_image (roles/dra_cpu/defaults/main.yml), Kubernetes' own e2e busybox
# name (k8s.io/kubernetes test/utils/image/manifest.go, BusyBox); the binary from Debian's
# busybox-static (hack/setup.sh installs it), /bin/busybox and a symlink per applet
BUSYBOX_IMAGE = "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"
BUSYBOX_BINARY = "/bin/busybox"
# besides each chart's default (driver_images): the 0.2.0 release under its final name, for a 0.3.0
# chart pointed at tag v0.2.0 (repository path behind the mirror, tag)
EXTRA_DRIVER_IMAGES = [("dra-driver-cpu/dra-driver-cpu", "v0.2.0")]


def driver_images(sources=None):
    """(repository path behind the mirror, tag, flavour) of each chart's default image, read from its
    values.yaml (image.repository, image.tag, else Chart.yaml's appVersion), then EXTRA_DRIVER_IMAGES:
    the charts say which names the nodes pull, not a list kept by hand. The flavour (which release's
    flags and config.yaml the driver accepts) is the simulator's rule by image tag,
    sim_driver_pod.image_flavor. For example chart 0.3.0's default is
    registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.3.0, chart 0.2.0's
    us-central1-docker.pkg.dev/k8s-staging-images/dra-driver-cpu/dra-driver-cpu:v0.2.0. A mirror request
    keeps the repository path and drops the registry host (`?ns=<host>`), so each is pushed as
    <registry>/<path>:<tag>."""
    images = []
    for source in (sources if sources is not None else chart_sources()).values():
        chart = chart_file(source, "Chart.yaml")
        image = chart_file(source, "values.yaml").get("image") or {}
        repository = str(image["repository"])
        host, _, path = repository.partition("/")
        if "." not in host and ":" not in host and host != "localhost":
            path = repository   # no registry host: Docker Hub's library path, as containerd names it
        entry = (path, str(image.get("tag") or chart["appVersion"]))
        if entry not in images:
            images.append(entry)
    images += [e for e in EXTRA_DRIVER_IMAGES if e not in images]
    return [(path, tag, image_flavor("%s:%s" % (path, tag))) for path, tag in images]


def _one_file_layer(src, arcname, layer):
    os.makedirs(os.path.dirname(layer), exist_ok=True)
    with tarfile.open(layer, "w", format=tarfile.USTAR_FORMAT) as t:
        ti = t.gettarinfo(src, arcname=arcname)
        ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname, ti.mode = 0, 0, 0, "", "", 0o755
        with open(src, "rb") as f:
            t.addfile(ti, f)
    return layer


def _push(crane, layer, ref, *mutate):
    """Pushes `layer` as `ref` with the mutations: appended under a staging tag, mutated into `ref` in
    one push, so `ref` never names the image without them. Every cluster's registry shares one storage
    (cluster_registry_charts.registry_config): appending to `ref` itself let a node of another cluster,
    starting meanwhile, pull a pause image with no entrypoint ("invalid empty entrypoint and cmd in
    image config", the stress test's run of 4a028c1)."""
    staging = f"{ref}-unmutated"
    run([crane, "append", "--insecure", "-f", layer, "-t", staging])
    run([crane, "mutate", "--insecure", "--set-platform", "linux/amd64", *mutate, "-t", ref, staging])


def push_pause(dirs, registry):
    """registry.k8s.io/pause:<tag> for each PAUSE_TAGS (through the mirror: <registry>/pause:<tag>)."""
    layer = _one_file_layer(os.path.join(dirs["pause"], "pause"), "pause", p("real-nodes", "pause-layer.tar"))
    refs = [f"{registry}/pause:{tag}" for tag in PAUSE_TAGS]
    for ref in refs:
        _push(os.path.join(dirs["crane"], "crane"), layer, ref, "--entrypoint=/pause")
    return " ".join(refs)


def busybox_layer(binary, layer, applets):
    """A layer of /bin/busybox and /bin/<applet> -> busybox for each applet (sh, cat, grep, env, sleep, ...)."""
    os.makedirs(os.path.dirname(layer), exist_ok=True)
    with tarfile.open(layer, "w", format=tarfile.USTAR_FORMAT) as t:
        d = tarfile.TarInfo("bin")
        d.type, d.mode = tarfile.DIRTYPE, 0o755
        t.addfile(d)
        ti = t.gettarinfo(binary, arcname="bin/busybox")
        ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname, ti.mode = 0, 0, 0, "", "", 0o755
        with open(binary, "rb") as f:
            t.addfile(ti, f)
        for name in sorted(set(applets) - {"busybox"}):
            if "/" in name or not name:
                continue
            link = tarfile.TarInfo("bin/" + name)
            link.type, link.linkname, link.mode = tarfile.SYMTYPE, "busybox", 0o777
            t.addfile(link)
    return layer


def push_busybox(dirs, registry, binary=BUSYBOX_BINARY):
    """BUSYBOX_IMAGE through the mirror (<registry>/e2e-test-images/busybox:<tag>), from Debian's static busybox."""
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"{binary} is missing: install Debian's busybox-static (hack/setup.sh does)")
    applets = run([binary, "--list"]).stdout.split()
    layer = busybox_layer(binary, p("real-nodes", "busybox-layer.tar"), applets)
    path = BUSYBOX_IMAGE.split("/", 1)[1]
    ref = f"{registry}/{path}"
    _push(os.path.join(dirs["crane"], "crane"), layer, ref, "--env=PATH=/bin")
    return ref


def push_driver(dirs, registry):
    """The driver image under each driver_images() name; returns the references pushed. A v0.2
    name is upstream's own v0.2.0 (build.sh real-node's `upstream` directory), laid out as its
    Dockerfile lays it out (/dracpu and /dracpu-gatherinfo, CMD /dracpu, no HOST_ROOT: the node's
    runc wrapper shows it the node's sysfs, cluster_node_hw.runc_cpu_args); every other name is the
    project's driver (main: upstream main's releases cannot be had here), laid out as upstream's
    Dockerfile too (main's is v0.2.0's: the binary as /dracpu and /dracpu-gatherinfo, CMD /dracpu;
    upstream main's e2e gatherinfo spec execs /dracpu-gatherinfo in the driver's pod), with
    DRACPU_FLAVOR (which release's flags and config the driver accepts) and HOST_ROOT (where it reads
    the node's fake sysfs, inside the kubelet plugins directory every chart mounts; cluster_node_hw.py)."""
    crane = os.path.join(dirs["crane"], "crane")
    binary = os.path.join(dirs["driver"], "dracpu")
    project = files_layer([(binary, n) for n in UPSTREAM_DRIVER_FILES], p("real-nodes", "driver-layer.tar"))
    upstream = upstream_driver_layer(dirs["upstream"], p("real-nodes", "upstream-driver-layer.tar"))
    refs = []
    for path, tag, flavor in driver_images():
        ref = f"{registry}/{path}:{tag}"
        if flavor == "v0.2":
            _push(crane, upstream, ref, "--cmd=/dracpu")
        else:
            _push(crane, project, ref, "--cmd=/dracpu", f"--env=DRACPU_FLAVOR={flavor}", f"--env=HOST_ROOT={HOST_ROOT}")
        refs.append(ref)
    return refs


# upstream's own dra-driver-cpu v0.2.0 e2e test image (tests/cluster/build.sh upstream; test/image/Dockerfile:
# /dracpuinfo, /dracputester, CMD /dracputester), under a name of its own. Both programs are static
# (CGO_ENABLED=0), so the distroless base adds nothing they read. Upstream's driver image is every v0.2.0
# name push_driver pushes (upstream_driver_layer).
UPSTREAM_TEST_IMAGE = "registry.k8s.io/dra-driver-cpu/upstream/dra-driver-cpu-test:v0.2.0"
UPSTREAM_DRIVER_FILES = ("dracpu", "dracpu-gatherinfo")   # upstream's Dockerfile: the binary twice, CMD /dracpu


def files_layer(files, layer):
    """A layer of the given (source path, name in the image) files, each mode 0755 at the root."""
    os.makedirs(os.path.dirname(layer), exist_ok=True)
    with tarfile.open(layer, "w", format=tarfile.USTAR_FORMAT) as t:
        for src, arcname in files:
            ti = t.gettarinfo(src, arcname=arcname)
            ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname, ti.mode = 0, 0, 0, "", "", 0o755
            with open(src, "rb") as f:
                t.addfile(ti, f)
    return layer


def upstream_driver_layer(upstream_dir, layer):
    """Upstream's driver image's one layer, as its Dockerfile lays it out (UPSTREAM_DRIVER_FILES)."""
    return files_layer([(os.path.join(upstream_dir, n), n) for n in UPSTREAM_DRIVER_FILES], layer)


def push_upstream_test_image(crane_dir, registry, upstream_dir, work_dir):
    """UPSTREAM_TEST_IMAGE through the mirror, from build.sh upstream's directory (the layer written
    under work_dir); returns the name the nodes pull."""
    name = UPSTREAM_TEST_IMAGE.split("/", 1)[1]
    layer = files_layer([(os.path.join(upstream_dir, n), n) for n in ("dracpuinfo", "dracputester")],
                        os.path.join(work_dir, "upstream-test-image.tar"))
    _push(os.path.join(crane_dir, "crane"), layer, f"{registry}/{name}", "--cmd=/dracputester")
    return UPSTREAM_TEST_IMAGE


# the project's driver (tests/cluster/driver), its main flavour, as the image of upstream's 0.2.0 chart
# under upstream's e2e suite (issue 39 item 4): /dracpu and a copy /dracpu-gatherinfo, as upstream's
# Dockerfile lays them out (the binary's debug report by its argv[0], internal/gatherinfo; a spec
# upstream's binary passes and this one fails is a bug in the port), HOST_ROOT as every driver image here
PROJECT_E2E_DRIVER_IMAGE = "registry.k8s.io/dra-driver-cpu/project/dra-driver-cpu:main"


def push_project_main(crane_dir, registry, driver_dir, work_dir):
    """PROJECT_E2E_DRIVER_IMAGE through the mirror, from build.sh driver's directory; returns its name."""
    name = PROJECT_E2E_DRIVER_IMAGE.split("/", 1)[1]
    binary = os.path.join(driver_dir, "dracpu")
    layer = files_layer([(binary, "dracpu"), (binary, "dracpu-gatherinfo")], os.path.join(work_dir, "project-main.tar"))
    _push(os.path.join(crane_dir, "crane"), layer, f"{registry}/{name}", "--cmd=/dracpu",
          "--env=DRACPU_FLAVOR=main", f"--env=HOST_ROOT={HOST_ROOT}")
    return PROJECT_E2E_DRIVER_IMAGE
