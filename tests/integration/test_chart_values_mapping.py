"""Values from the chart itself (issue 11 items 1, 3, 7) on the session test cluster.

Re-versioned copies of the fixture charts are packaged in a temp dir and pushed from here to the
test cluster's registry under a path of their own (so no other test and no `cluster.py up` sees
them): the 0.2.0 chart (only `args.*`) as 0.3.5, the 0.3.0 chart (`driverConfig`) as 0.2.5. The
version-number rule would map both wrongly; reading the chart maps both right, and the driver
(a real kubelet plugin on the session cluster's real node) honours the reserved CPUs: 4 + 6 allocatable, not 6 + 6.
Each test starts from an empty cluster (cluster_reset.remove_driver; the uninstall has tests of its own).
"""
import os
import subprocess

import pytest
import yaml

from ansible_run import run_playbook
from chart_sources import copy_chart
from cluster_reset import remove_driver

pytestmark = pytest.mark.timeout(1200)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEST_REPO = "values-mapping-test/charts"
NS = "dra-driver-cpu"


@pytest.fixture(scope="module")
def charts(cluster, tmp_path_factory):
    """{'args-0.3.5': oci ref, 'driverConfig-0.2.5': oci ref}: pushed once for the module."""
    tmp = tmp_path_factory.mktemp("values-charts")
    helm = cluster.env["CLUSTER_HELM_BINARY"]
    env = dict(os.environ, HELM_CACHE_HOME=str(tmp / "cache"), HELM_CONFIG_HOME=str(tmp / "config"),
               HELM_DATA_HOME=str(tmp / "data"))
    for source, version in (("0.2.0", "0.3.5"), ("0.3.0", "0.2.5")):
        src = tmp / f"src-{version}" / "dra-driver-cpu"
        copy_chart(source, str(src))
        meta = yaml.safe_load((src / "Chart.yaml").read_text())
        meta["version"] = version
        (src / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
        subprocess.run([helm, "package", str(src), "-d", str(tmp)], check=True, env=env, capture_output=True)
        r = subprocess.run([helm, "push", str(tmp / f"dra-driver-cpu-{version}.tgz"),
                            f"oci://{cluster.env['CLUSTER_REGISTRY']}/{TEST_REPO}", "--plain-http"],
                           env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    return f"oci://{cluster.env['CLUSTER_REGISTRY']}/{TEST_REPO}/dra-driver-cpu"


def install(cluster, chart, version, **extra):
    extra.update(dra_cpu_chart=chart, dra_cpu_chart_version=version)
    return run_playbook(cluster, "install", extra_vars=extra)


def release_values(cluster):
    from kubernetes import client
    ds = client.AppsV1Api(cluster.api_client).list_namespaced_daemon_set(NS).items
    assert len(ds) == 1, [d.metadata.name for d in ds]
    return ds[0]


def cells(topology, node="real01"):
    """The fact's cells of a node as (id, allocatable CPUs), in the fact's (id) order."""
    return [(int(i), cpus) for i, cpus in topology["nodes"][node]["cells"].items()]


def release_report(r):
    """The release stage's report lines (release, image, then the chart stage's lines)."""
    return r.result("Install or upgrade release")["report"]


def test_args_only_chart_versioned_035_gets_args(cluster, charts):
    remove_driver(cluster)
    r = install(cluster, charts, "0.3.5", dra_cpu_reserved_cpus="0-1")
    assert r.rc == 0, r
    layout = r.result("Map the settings onto the values of chart")
    assert layout["layout"]["values_key"] == "args", layout
    assert layout["release_values"]["args"]["reservedCPUs"] == "0-1"
    assert "driverConfig" not in layout["release_values"]
    assert any(line.startswith("chart 0.3.5 (values onto args.*), image (") for line in release_report(r)), release_report(r)
    assert cells(r.fact("dra_cpu_topology")) == [(0, 4), (1, 6)]
    args = release_values(cluster).spec.template.spec.containers[0].args
    assert "--reserved-cpus=0-1" in args, args


def test_driver_config_chart_versioned_025_gets_driver_config(cluster, charts):
    remove_driver(cluster)
    r = install(cluster, charts, "0.2.5", dra_cpu_reserved_cpus="0-1", dra_cpu_group_by="numanode")
    assert r.rc == 0, r
    layout = r.result("Map the settings onto the values of chart")
    assert layout["layout"]["values_key"] == "driverConfig", layout
    assert layout["release_values"]["driverConfig"] == {"reservedCPUs": "0-1", "cpuDeviceMode": "grouped",
                                                        "groupBy": "numanode"}
    assert any(line.startswith("chart 0.2.5 (values onto driverConfig.*), image (") for line in release_report(r)), \
        release_report(r)
    assert cells(r.fact("dra_cpu_topology")) == [(0, 4), (1, 6)]


def test_unusable_image_fails_before_any_write(cluster, charts):
    remove_driver(cluster)
    r = install(cluster, charts, "0.3.5", dra_cpu_image="registry.example/dra-driver-cpu@sha256:" + "0" * 64)
    assert r.rc != 0
    msg = " ".join(r.failure_messages())
    assert "dra_cpu_image" in msg and "digest" in msg, msg
    from kubernetes import client
    assert NS not in [n.metadata.name for n in client.CoreV1Api(cluster.api_client).list_namespace().items]


def test_node_selector_only_where_the_chart_has_it_020(cluster):
    """0.2.0 has no nodeSelector value: a nodeSelector in dra_cpu_chart_values matches no node, but
    the DaemonSet ignores it and covers real01, and so does preflight's eligible-nodes count."""
    remove_driver(cluster)
    selector = {"nodeSelector": {"example.org/no-such-label": "x"}}
    r = run_playbook(cluster, "install", extra_vars={"dra_cpu_chart_version": "0.2.0",
                                                     "dra_cpu_chart_values": selector})
    assert r.rc == 0, r
    pre = r.result("Check the cluster's prerequisites")
    assert pre["checked_nodes"] == ["real01"], pre
    assert r.result("Map the settings onto the values of chart")["node_selector"] == {}
    assert cells(r.fact("dra_cpu_topology")) == [(0, 4), (1, 6)]
    # 0.3.0 has one: there the same selector leaves no eligible node and preflight refuses
    r = run_playbook(cluster, "install", extra_vars={"dra_cpu_chart_version": "0.3.0",
                                                     "dra_cpu_chart_values": selector})
    assert r.rc != 0
    pre = r.result("Check the cluster's prerequisites")
    assert pre["checked_nodes"] == [], pre


def test_image_is_reported_and_overridden_through_the_chart_keys(cluster):
    r = run_playbook(cluster, "install", extra_vars={"dra_cpu_chart_version": "0.3.0"})
    assert r.rc == 0, r
    assert ("chart 0.3.0 (values onto driverConfig.*), image (the chart's default): "
            "registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.3.0") in release_report(r)
    image = "mirror.example:5000/dra-driver-cpu/dra-driver-cpu:v0.3.0"
    r = run_playbook(cluster, "install", extra_vars={"dra_cpu_chart_version": "0.3.0", "dra_cpu_image": image})
    assert r.rc == 0, r
    assert f"chart 0.3.0 (values onto driverConfig.*), image (dra_cpu_image): {image}" in release_report(r)
    assert release_values(cluster).spec.template.spec.containers[0].image == image
    assert r.result("Install or upgrade release")["image"] == image
