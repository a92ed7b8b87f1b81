"""The driver image names the harness pushes come from the charts the registry serves (tests/cluster/cluster_images.py):
each chart's default image (values.yaml image.repository and tag, else Chart.yaml appVersion) with the
registry host dropped, as containerd's mirror asks for it (`/v2/<path>/manifests/<tag>?ns=<host>`)."""
import os
import sys
import tarfile

import pytest
import yaml

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
if CLUSTER_DIR not in sys.path:
    sys.path.insert(0, CLUSTER_DIR)

import chart_sources  # noqa: E402  pylint: disable=wrong-import-position
import cluster_images  # noqa: E402  pylint: disable=wrong-import-position


def chart(tmp_path, version, repository, tag="", app_version=None):
    d = tmp_path / version
    d.mkdir()
    (d / "Chart.yaml").write_text(yaml.safe_dump({"name": "dra-driver-cpu", "version": version,
                                                  "appVersion": app_version or "v" + version}))
    (d / "values.yaml").write_text(yaml.safe_dump({"image": {"repository": repository, "tag": tag}}))


def test_each_charts_default_image_is_pushed_under_its_path():
    assert cluster_images.driver_images() == [
        ("k8s-staging-images/dra-driver-cpu/dra-driver-cpu", "v0.2.0", "v0.2"),   # chart 0.2.0's default
        ("dra-driver-cpu/dra-driver-cpu", "v0.3.0", "main"),                       # chart 0.3.0's default
        ("dra-driver-cpu/dra-driver-cpu", "v0.2.0", "v0.2"),                       # the extra name
    ]


def test_a_new_chart_brings_its_own_name_tag_and_flavour(tmp_path):
    chart(tmp_path, "0.2.1", "quay.example:5000/dra/driver", tag="v0.2.1-rc1")
    chart(tmp_path, "0.4.0", "registry.k8s.io/dra-driver-cpu/dra-driver-cpu")
    chart(tmp_path, "0.5.0", "dracpu/driver", app_version="v0.5.0")
    got = cluster_images.driver_images({v: str(tmp_path / v) for v in ("0.2.1", "0.4.0", "0.5.0")})
    assert got[:3] == [("dra/driver", "v0.2.1-rc1", "v0.2"),
                       ("dra-driver-cpu/dra-driver-cpu", "v0.4.0", "main"),
                       ("dracpu/driver", "v0.5.0", "main")]
    assert got[3:] == [(path, tag, "v0.2") for path, tag in cluster_images.EXTRA_DRIVER_IMAGES]


def test_a_v02_name_is_upstreams_own_binary_and_every_other_the_project_driver(tmp_path, monkeypatch):
    """Upstream's v0.2.0 under every v0.2 name, as its Dockerfile lays it out (/dracpu, /dracpu-gatherinfo,
    CMD /dracpu, no HOST_ROOT); the project's driver (main) under the others, laid out the same way (upstream
    main's Dockerfile is v0.2.0's; its e2e gatherinfo spec execs /dracpu-gatherinfo), with its environment."""
    for d, names in (("driver", ["dracpu"]), ("upstream", ["dracpu", "dracpu-gatherinfo"])):
        (tmp_path / d).mkdir()
        for n in names:
            (tmp_path / d / n).write_bytes(d.encode())
    pushed = []
    monkeypatch.setattr(cluster_images, "_push", lambda crane, layer, ref, *mutate: pushed.append((layer, ref, mutate)))
    monkeypatch.setattr(cluster_images, "p", lambda *parts: str(tmp_path.joinpath("state", *parts)))
    dirs = {"crane": str(tmp_path / "crane"), "driver": str(tmp_path / "driver"), "upstream": str(tmp_path / "upstream")}
    refs = cluster_images.push_driver(dirs, "reg:5000")
    assert refs == [f"reg:5000/{image[0]}:{image[1]}" for image in cluster_images.driver_images()]
    for layer, ref, mutate in pushed:
        with tarfile.open(layer) as t:
            files = {m.name: t.extractfile(m).read() for m in t.getmembers()}
        if ref.endswith(":v0.2.0"):
            assert files == {"dracpu": b"upstream", "dracpu-gatherinfo": b"upstream"} and mutate == ("--cmd=/dracpu",)
        else:
            assert files == {"dracpu": b"driver", "dracpu-gatherinfo": b"driver"}, files
            assert mutate[0] == "--cmd=/dracpu" and "--env=DRACPU_FLAVOR=main" in mutate
            assert f"--env=HOST_ROOT={cluster_images.HOST_ROOT}" in mutate
    assert sum(push[1].endswith(":v0.2.0") for push in pushed) == 2


def test_chart_020_is_upstreams_own_release_and_a_fixture_of_it_is_refused(tmp_path):
    sources = chart_sources.chart_sources()
    assert sources["0.2.0"].endswith("/dra-driver-cpu/v0.2.0/chart/dra-driver-cpu-0.2.0.tgz")
    assert chart_sources.chart_file(sources["0.2.0"], "Chart.yaml")["home"] == "https://github.com/kubernetes-sigs/dra-driver-cpu"
    assert "maintainers" in chart_sources.chart_file(sources["0.2.0"], "Chart.yaml")   # upstream's, not a fixture's
    assert os.path.isdir(sources["0.3.0"]) and "0.2.0" not in os.listdir(chart_sources.FIXTURES_DIR)
    chart(tmp_path, "0.2.0", "x/y")
    with pytest.raises(RuntimeError, match="upstream's own 0.2.0 is served, remove the fixture"):
        chart_sources.chart_sources(str(tmp_path))


def test_the_busybox_image_is_kubernetes_e2e_name_and_the_roles_default():
    """verify's default test image (roles/dra_cpu/defaults/main.yml) is the name the harness pushes."""
    defaults = yaml.safe_load(open(os.path.join(CLUSTER_DIR, "..", "..", "roles", "dra_cpu", "defaults", "main.yml")))
    assert defaults["dra_cpu_verify_image"] == cluster_images.BUSYBOX_IMAGE
    assert cluster_images.BUSYBOX_IMAGE.startswith("registry.k8s.io/e2e-test-images/busybox:")


def test_the_busybox_layer_has_the_binary_and_one_link_per_applet(tmp_path):
    import tarfile
    binary = tmp_path / "busybox"
    binary.write_bytes(b"\x7fELF")
    layer = cluster_images.busybox_layer(str(binary), str(tmp_path / "l.tar"), ["busybox", "sh", "cat", "grep"])
    with tarfile.open(layer) as t:
        members = dict((m.name, m) for m in t.getmembers())
    assert members["bin/busybox"].isfile() and members["bin/busybox"].mode == 0o755
    assert sorted(n for n, m in members.items() if m.issym()) == ["bin/cat", "bin/grep", "bin/sh"]
    assert members["bin/sh"].linkname == "busybox"
