# SPDX-License-Identifier: Apache-2.0
"""scripts/install_dra_driver_cpu.sh without a cluster: the switch, the input errors, a fetch
failure, and the embedded lock against the pins `make test` runs (hack/installer_lock.py).

Each run gets an environment stripped to PATH=/usr/bin:/bin (plus a spy directory where a test needs
one), a temporary HOME and KUBEVIRTCI_CONFIG_PATH; the tests assert what the script left there.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import time

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(REPO, "scripts", "install_dra_driver_cpu.sh")

_spec = importlib.util.spec_from_file_location("installer_lock", os.path.join(REPO, "hack", "installer_lock.py"))
installer_lock = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(installer_lock)


def tree(path):
    return sorted(os.path.relpath(os.path.join(root, name), path)
                  for root, dirs, files in os.walk(path) for name in dirs + files)


@pytest.fixture
def host(tmp_path):
    """A kubevirtci host's environment: /usr/bin:/bin, an empty HOME and config path."""
    home, config, spy = tmp_path / "home", tmp_path / "ci-configs", tmp_path / "spy"
    for d in (home, config, spy):
        d.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBEVIRTCI_CONFIG_PATH": str(config),
           "KUBEVIRT_PROVIDER": "k8s-1.36"}
    return {"home": home, "config": config, "spy": spy, "env": env}


def run(host, timeout=120, **env):
    full = dict(host["env"])
    full.update(env)
    start = time.monotonic()
    proc = subprocess.run(["/bin/bash", SCRIPT], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, check=False)
    proc.seconds = time.monotonic() - start
    return proc


def lock_entries(function):
    """name==version of each entry of the script's embedded lock function, and its hashes."""
    with open(SCRIPT) as fh:
        text = fh.read()
    body = re.search(function + r"\(\) \{\n  cat <<'LOCK'\n(.*?)\nLOCK\n\}", text, re.S).group(1)
    entries = {}
    for block in re.split(r"\n(?=\S)", body):
        spec = block.split(";")[0].split("\\")[0].strip()
        entries[spec] = re.findall(r"--hash=sha256:([0-9a-f]{64})", block)
    return entries


@pytest.mark.parametrize("value", [None, "", "false", "TRUE", "True", "yes", "1", " true", "true "])
def test_switch_not_exactly_true_exits_0_at_once_touching_nothing(host, value):
    # a python3 (and pip) that records being started: the switch must act before either
    for name in ("python3", "pip", "pip3", "curl"):
        path = host["spy"] / name
        path.write_text("#!/bin/sh\ntouch %s/started-%s\nexit 99\n" % (host["spy"], name))
        path.chmod(0o755)
    env = {"PATH": "%s:/usr/bin:/bin" % host["spy"]}
    if value is not None:
        env["KUBEVIRT_USE_DRA_CPU"] = value
    r = run(host, **env)
    assert r.returncode == 0, r.stderr
    assert r.seconds < 0.2, r.seconds
    assert "KUBEVIRT_USE_DRA_CPU is not 'true'" in r.stdout
    assert "not installing dra-driver-cpu" in r.stdout
    assert not [n for n in os.listdir(host["spy"]) if n.startswith("started-")]
    assert tree(host["home"]) == [] and tree(host["config"]) == []


def test_missing_provider_is_refused_before_anything(host):
    env = dict(host["env"])
    del env["KUBEVIRT_PROVIDER"]
    host["env"] = env
    r = run(host, KUBEVIRT_USE_DRA_CPU="true")
    assert r.returncode == 2
    assert "KUBEVIRT_PROVIDER is not set" in r.stderr
    assert tree(host["home"]) == [] and tree(host["config"]) == []


@pytest.mark.parametrize("value", ["/nonexistent/kubevirtci-dra_cpu-0.1.0.tar.gz", "kubevirtci/dra_cpu", "a b"])
def test_bad_collection_source_names_the_variable_and_value(host, value):
    r = run(host, KUBEVIRT_USE_DRA_CPU="true", DRA_CPU_COLLECTION=value)
    assert r.returncode == 2
    assert "DRA_CPU_COLLECTION='%s' is neither a collection tarball" % value in r.stderr
    assert tree(host["home"]) == [] and tree(host["config"]) == []


def test_python_too_old_is_refused_naming_it(host):
    old = host["spy"] / "python3.9"
    # what `python3.9 -c <the script's version check>` prints and returns
    old.write_text("#!/bin/sh\necho 3.9.18\nexit 1\n")
    old.chmod(0o755)
    r = run(host, KUBEVIRT_USE_DRA_CPU="true", DRA_CPU_PYTHON=str(old))
    assert r.returncode == 2
    assert "DRA_CPU_PYTHON='%s' is Python 3.9.18; ansible-core 2.19 needs 3.11 or newer" % old in r.stderr
    assert tree(host["config"]) == []


def test_copied_alone_into_kubevirtci_it_says_what_could_not_be_fetched_and_from_where(host, tmp_path):
    """The one-file swap: the script copied alone to cluster-up/cluster/dra-cpu/ of a kubevirtci tree,
    KUBEVIRTCI_CONFIG_PATH unset (default <kubevirtci>/_ci-configs), a pip index that does not answer."""
    kubevirtci = tmp_path / "kubevirtci"
    target = kubevirtci / "cluster-up" / "cluster" / "dra-cpu" / "install_dra_driver_cpu.sh"
    target.parent.mkdir(parents=True)
    shutil.copy(SCRIPT, target)
    tarball = tmp_path / "kubevirtci-dra_cpu-0.1.0.tar.gz"
    tarball.write_bytes(b"not reached")
    env = dict(host["env"], KUBEVIRT_USE_DRA_CPU="true", DRA_CPU_COLLECTION=str(tarball),
               PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0", PIP_TIMEOUT="2")
    del env["KUBEVIRTCI_CONFIG_PATH"]
    r = subprocess.run(["/bin/bash", str(target)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120, check=False)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "could not fetch the pinned Python packages of" in r.stderr
    assert "from http://127.0.0.1:9/simple" in r.stderr
    assert tree(host["home"]) == []
    # only <kubevirtci>/_ci-configs/.tools was made, and no environment in it is marked ready
    assert sorted(os.listdir(kubevirtci)) == ["_ci-configs", "cluster-up"]
    assert os.listdir(kubevirtci / "_ci-configs") == [".tools"]
    assert not [p for p in tree(kubevirtci / "_ci-configs") if p.endswith(".ready")]


def test_shipped_version_is_galaxy_yml_version():
    with open(os.path.join(REPO, "galaxy.yml")) as fh:
        version = yaml.safe_load(fh)["version"]
    with open(SCRIPT) as fh:
        assert "\nSHIPPED_VERSION=%s " % version in fh.read()


def test_lock_pins_what_make_test_runs_each_with_hashes():
    lock = lock_entries("requirements_lock")
    top = installer_lock.pins("requirements-dev.txt", {"ansible-core", "cryptography"}) + installer_lock.pins("requirements.txt")
    for pin in top:
        name = re.split(r"[<>=]", pin)[0].lower()
        found = [spec for spec in lock if spec.split("==")[0].lower() == name]
        assert found, pin
        if "==" in pin:
            assert found == [pin], (pin, found)
    assert all(hashes for hashes in lock.values()), [spec for spec, h in lock.items() if not h]
    assert list(lock_entries("bundle_lock")) == installer_lock.pins("requirements-dev.txt", {"ansible"})
    assert all(lock_entries("bundle_lock").values())


def test_kubevirtci_page_names_the_locked_versions():
    lock, bundle = lock_entries("requirements_lock"), lock_entries("bundle_lock")
    core = [spec.split("==")[1] for spec in lock if spec.startswith("ansible-core==")]
    with open(os.path.join(REPO, "docs", "kubevirtci.md")) as fh:
        readme = fh.read()
    assert "(ansible-core %s and the" % core[0] in readme
    assert "hash-pinned `ansible` %s wheel" % list(bundle)[0].split("==")[1] in readme


@pytest.mark.parametrize("filename, wanted", [
    ("jsonpatch-1.47-py2.py3-none-any.whl", True),
    ("cryptography-50.0.2-cp311-abi3-manylinux_2_28_x86_64.whl", True),
    ("cryptography-50.0.2-cp38-abi3-manylinux_2_34_aarch64.whl", True),
    ("cryptography-50.0.2-cp314-abi3-manylinux_2_28_x86_64.whl", False),   # needs 3.14: not for 3.11
    ("pyyaml-6.0.4-cp313-cp313-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", True),
    ("pyyaml-6.0.4-cp313-cp313t-manylinux_2_17_x86_64.whl", False),         # free-threaded build
    ("pyyaml-6.0.4-cp310-cp310-manylinux_2_17_x86_64.whl", False),          # Python 3.10
    ("pyyaml-6.0.4-cp312-cp312-musllinux_1_2_x86_64.whl", False),
    ("pyyaml-6.0.4-cp312-cp312-win_amd64.whl", False),
    ("pyyaml-6.0.4.tar.gz", False),
])
def test_lock_keeps_the_wheels_a_kubevirtci_host_can_install(filename, wanted):
    assert installer_lock.wanted(filename) is wanted
