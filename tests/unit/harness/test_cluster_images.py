"""The driver image names the harness pushes come from the fixture charts (tests/cluster/cluster_images.py):
each chart's default image (values.yaml image.repository and tag, else Chart.yaml appVersion) with the
registry host dropped, as containerd's mirror asks for it (`/v2/<path>/manifests/<tag>?ns=<host>`)."""
import os
import sys

import yaml

CLUSTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster"))
if CLUSTER_DIR not in sys.path:
    sys.path.insert(0, CLUSTER_DIR)

import cluster_images  # noqa: E402  pylint: disable=wrong-import-position


def chart(tmp_path, version, repository, tag="", app_version=None):
    d = tmp_path / version
    d.mkdir()
    (d / "Chart.yaml").write_text(yaml.safe_dump({"name": "dra-driver-cpu", "version": version,
                                                  "appVersion": app_version or "v" + version}))
    (d / "values.yaml").write_text(yaml.safe_dump({"image": {"repository": repository, "tag": tag}}))


def test_each_fixture_charts_default_image_is_pushed_under_its_path():
    assert cluster_images.driver_images() == [
        ("k8s-staging-images/dra-driver-cpu/dra-driver-cpu", "v0.2.0", "v0.2"),   # chart 0.2.0's default
        ("dra-driver-cpu/dra-driver-cpu", "v0.3.0", "main"),                       # chart 0.3.0's default
        ("dra-driver-cpu/dra-driver-cpu", "v0.2.0", "v0.2"),                       # the extra name
    ]


def test_a_new_chart_brings_its_own_name_tag_and_flavour(tmp_path):
    chart(tmp_path, "0.2.1", "quay.example:5000/dra/driver", tag="v0.2.1-rc1")
    chart(tmp_path, "0.4.0", "registry.k8s.io/dra-driver-cpu/dra-driver-cpu")
    chart(tmp_path, "0.5.0", "dracpu/driver", app_version="v0.5.0")
    got = cluster_images.driver_images(str(tmp_path))
    assert got[:3] == [("dra/driver", "v0.2.1-rc1", "v0.2"),
                       ("dra-driver-cpu/dra-driver-cpu", "v0.4.0", "main"),
                       ("dracpu/driver", "v0.5.0", "main")]
    assert got[3:] == [(path, tag, "v0.2") for path, tag in cluster_images.EXTRA_DRIVER_IMAGES]
