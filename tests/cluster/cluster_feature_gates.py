"""The control plane's feature gates: what the test cluster turns on by Kubernetes version, then
CLUSTER_FEATURE_GATES (which wins, so `DRAListTypeAttributes=false` turns a default off).

Owns: DEFAULT_GATES (gate -> the first version that knows it) and control_plane_gates(settings), the
`--feature-gates` value of kube-apiserver, kube-controller-manager and kube-scheduler. A gate is only
passed to a version that knows it (a component refuses an unknown gate and does not start):
DRAListTypeAttributes (KEP-5491) is alpha, off by default, in 1.36 and 1.37 and unknown to 1.35
(`kube-apiserver --help` of the cached v1.35.4, v1.36.3, v1.37.2). It lets the driver's
resource.kubernetes.io/pcieRoot list (dra_cpu_expose_pcie_roots) through the API server.
Must not: start anything (cluster_control_plane.py passes the value on).
"""

DEFAULT_GATES = {"DRAListTypeAttributes": (1, 36)}


def _minor(version):
    """(major, minor) of `v1.36.3`."""
    parts = version.lstrip("v").split(".")
    return int(parts[0]), int(parts[1])


def parse(gates):
    """`A=true,B=false` -> {A: 'true', B: 'false'} (the order kept)."""
    out = {}
    for item in filter(None, (g.strip() for g in (gates or "").split(","))):
        key, _, value = item.partition("=")
        out[key.strip()] = value.strip()
    return out


def control_plane_gates(settings):
    """The `--feature-gates` value for CLUSTER_K8S_VERSION: the defaults it knows, then
    CLUSTER_FEATURE_GATES over them; '' for none."""
    version = _minor(settings["CLUSTER_K8S_VERSION"])
    gates = {name: "true" for name, first in DEFAULT_GATES.items() if version >= first}
    gates.update(parse(settings.get("CLUSTER_FEATURE_GATES")))
    return ",".join(f"{k}={v}" for k, v in gates.items())
