"""scripts/install_dra_driver_cpu.sh as kubevirtci's `up()` runs it, against the session test cluster.

The host is stripped to PATH=/usr/bin:/bin (no helm, no Ansible, Debian's python3), with a temporary
HOME and KUBEVIRTCI_CONFIG_PATH, the cluster's kubeconfig at $KUBEVIRTCI_CONFIG_PATH/$KUBEVIRT_PROVIDER/
.kubeconfig and the collection from the tarball `ansible-galaxy collection build` makes. Only the
machine's own pip settings (PIP_*) are passed through: they say how this host reaches PyPI.

Tests in this module run in order: the first builds the private environment the others reuse.

Nodes: the session cluster's real node, real01 (a real kubelet + containerd; the driver a real
kubelet plugin).
"""
import glob
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from ansible_run import REPO, run_playbook
from cluster_reset import remove_driver
from test_artifact_install import artifact

pytestmark = pytest.mark.timeout(1500)

SCRIPT = os.path.join(REPO, "scripts", "install_dra_driver_cpu.sh")
PROVIDER = "k8s-1.36"
NS = "dra-driver-cpu"


def kubevirtci_host(cluster, base):
    """kubevirtci's host for ``cluster`` under ``base``: ``(home, config, env, args)``, the
    environment `up()` gives the script (the cluster's own vCPU and NUMA settings) and the
    ansible-playbook arguments for the test cluster's plain-HTTP registry and helm mirror."""
    home, config = base / "home", base / "ci-configs"
    home.mkdir()
    (config / PROVIDER).mkdir(parents=True)
    shutil.copy(cluster.kubeconfig, config / PROVIDER / ".kubeconfig")
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    env.update({
        "PATH": "/usr/bin:/bin", "HOME": str(home), "KUBEVIRTCI_CONFIG_PATH": str(config),
        "KUBEVIRT_PROVIDER": PROVIDER, "KUBEVIRT_USE_DRA_CPU": "true",
        "KUBEVIRT_NUM_VCPU": cluster.env["KUBEVIRT_NUM_VCPU"],
        "KUBEVIRT_NUM_NUMA_NODES": cluster.env["KUBEVIRT_NUM_NUMA_NODES"],
        "DRA_CPU_CHART": cluster.chart, "HELM_VERSION": cluster.env["CLUSTER_HELM_VERSION"],
        "DRA_CPU_COLLECTION": artifact.build(base / "dist"),
    })
    args = ["-e", "dra_cpu_chart_plain_http=true", "-e", "dra_cpu_helm_mirror_allow_http=true",
            "-e", "dra_cpu_helm_mirror=" + cluster.env["CLUSTER_HELM_MIRROR"]]
    return home, config, env, args


@pytest.fixture(scope="module")
def host(cluster, tmp_path_factory):
    home, config, env, args = kubevirtci_host(cluster, tmp_path_factory.mktemp("kubevirtci-host"))
    remove_driver(cluster)
    yield {"home": home, "config": config, "env": env, "args": args, "tools": config / ".tools",
           "since": time.time()}
    remove_driver(cluster)


def start(host, **env):
    full = dict(host["env"], **env)
    return subprocess.Popen(["/bin/bash", SCRIPT, *host["args"]], env=full, cwd=str(host["home"].parent),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc, first=""):
    out, _ = proc.communicate(timeout=1200)
    return proc.returncode, first + out


def run(host, **env):
    began = time.monotonic()
    rc, out = finish(start(host, **env))
    return rc, out, time.monotonic() - began


def recap_changed(out):
    found = re.findall(r"localhost\s+: ok=\d+\s+changed=(\d+)", out)
    assert len(found) == 1, out[-3000:]
    return int(found[0])


def env_dir(host):
    found = [p for p in host["tools"].iterdir() if p.name.startswith("dra-cpu-ansible-") and p.is_dir()]
    assert len(found) == 1, found
    return found[0]


def assert_only_tools_changed(host):
    assert list(host["home"].iterdir()) == []
    assert sorted(p.name for p in host["config"].iterdir()) == [".tools", PROVIDER]
    assert [p.name for p in (host["config"] / PROVIDER).iterdir()] == [".kubeconfig"]
    # kubernetes.core's discovery cache of this cluster goes to the temporary directory: the script's is
    # under .tools, and the host's /tmp copy (other tests' runs) was not written since the module started
    ours = [os.path.basename(p) for p in glob.glob(str(host["tools"] / "*" / "home" / "tmp" / "k8srcp-*.json"))]
    assert ours
    assert [n for n in ours if os.path.exists("/tmp/" + n) and os.path.getmtime("/tmp/" + n) >= host["since"]] == []


def test_first_run_builds_once_while_a_concurrent_start_waits(host):
    first = start(host)
    line = first.stdout.readline()
    assert "building a private Ansible in" in line, line
    second = start(host)
    rc1, out1 = finish(first, line)
    rc2, out2 = finish(second)
    assert rc1 == 0, out1[-4000:]
    assert rc2 == 0, out2[-4000:]
    assert "installing the collection" in out1
    assert "waiting for another install_dra_driver_cpu.sh to finish setting up" in out2
    assert "building a private Ansible" not in out2 and "installing the collection" not in out2
    for out in (out1, out2):       # the report: the cluster, the table, the largest VM
        assert re.search(r"NODE\s+CELL\s+DEVICES\s+ALLOCATABLE CPUS", out), out[-3000:]
        assert "largest VM that fits: 6 host CPUs" in out
    # the two installs ran one after the other: one installed, the other found nothing to change
    assert sorted([recap_changed(out1), recap_changed(out2)])[0] == 0
    assert recap_changed(out1) + recap_changed(out2) > 0
    assert "waiting for another install into" in out1 + out2
    assert (host["tools"] / "dra-cpu-helm").is_dir()       # the helm download stays under .tools
    manifest = env_dir(host) / "collections" / "ansible_collections" / "kubernetes" / "core" / "MANIFEST.json"
    with open(os.path.join(REPO, "docs", "kubevirtci.md")) as fh:
        assert "kubernetes.core %s unpacked" % json.loads(manifest.read_text())["collection_info"]["version"] in fh.read()
    assert_only_tools_changed(host)


def test_second_run_reuses_the_environment_without_pip_or_galaxy(host, tmp_path):
    venv = env_dir(host)
    pip = next(venv.glob("lib/python3*/site-packages/pip"))
    galaxy = venv / "bin" / "ansible-galaxy"
    marker = tmp_path / "galaxy-started"
    pip.rename(pip.with_name("pip.hidden"))       # `python -m pip` now fails: any pip call shows
    galaxy.rename(galaxy.with_name("ansible-galaxy.hidden"))
    galaxy.write_text("#!/bin/sh\ntouch %s\nexit 97\n" % marker)
    galaxy.chmod(0o755)
    try:
        rc, out, _ = run(host)
        assert rc == 0, out[-4000:]
        assert not marker.exists()
        assert "building a private Ansible" not in out and "installing the collection" not in out
        assert recap_changed(out) == 0
        assert "largest VM that fits: 6 host CPUs" in out
    finally:
        galaxy.unlink()
        galaxy.with_name("ansible-galaxy.hidden").rename(galaxy)
        pip.with_name("pip.hidden").rename(pip)
    assert_only_tools_changed(host)


def test_bad_reserved_cpus_fails_like_the_playbook_before_any_change(host, cluster):
    from kubernetes import client
    core = client.CoreV1Api(cluster.api_client)

    def releases():
        return sorted(s.metadata.name for s in core.list_namespaced_secret(NS, label_selector="owner=helm").items)

    before = releases()
    rc, out, _ = run(host, DRA_CPU_RESERVED_CPUS="1-0")
    playbook = run_playbook(cluster, "install", env={"DRA_CPU_RESERVED_CPUS": "1-0"})
    assert rc == 2 and playbook.rc == 2, out[-3000:]
    messages = [m for m in playbook.failure_messages() if "dra_cpu_reserved_cpus: '1-0'" in m]
    assert messages, playbook
    assert messages[0] in out
    assert releases() == before


def test_the_default_collection_source_says_it_could_not_be_fetched_and_from_where(host):
    env = dict(host["env"], ANSIBLE_GALAXY_SERVER="http://127.0.0.1:9")
    del env["DRA_CPU_COLLECTION"]                  # the default: kubevirtci.dra_cpu at the shipped version
    proc = subprocess.run(["/bin/bash", SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stdout
    assert "installing the collection (kubevirtci.dra_cpu:0.1.0)" in proc.stdout
    assert "could not install the collection kubevirtci.dra_cpu:0.1.0 from http://127.0.0.1:9" in proc.stderr
    assert_only_tools_changed(host)
