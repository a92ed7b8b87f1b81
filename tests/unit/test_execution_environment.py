# SPDX-License-Identifier: Apache-2.0
"""meta/execution-environment.yml and the example EE definition docs/execution-environment.yml:
`ansible-builder create` writes a build context that installs this collection, and
`ansible-builder introspect` (what the image build runs on the installed collections) finds the
collection's Python and system requirements. The image itself is not built (no container registry)."""

import os
import re
import subprocess

import pytest
import yaml

from collection_artifact import REPO, build, install, tool


def builder(*args, cwd):
    assert os.path.exists(tool("ansible-builder")), (
        f"{tool('ansible-builder')} is missing: this venv predates requirements-dev.txt, run `make deps`")
    proc = subprocess.run([tool("ansible-builder"), *args], cwd=str(cwd), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"ansible-builder {' '.join(args)} failed:\n{proc.stdout[-3000:]}"
    return proc.stdout


def _requirement_names(path):
    with open(path) as fh:
        return {re.split(r"[=<>~!\s\[]", ln.strip(), maxsplit=1)[0].lower() for ln in fh
                if ln.strip() and not ln.lstrip().startswith("#")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The built artifact installed into an empty collections path; returns that path."""
    base = tmp_path_factory.mktemp("ee")
    install(build(base), base / "collections")
    return base / "collections"


def test_meta_points_at_the_runtime_requirements():
    with open(os.path.join(REPO, "meta", "execution-environment.yml")) as fh:
        meta = yaml.safe_load(fh)
    assert meta == {"version": 1, "dependencies": {"python": "requirements.txt", "system": "bindep.txt"}}


def test_introspect_finds_the_collection_requirements(installed, tmp_path):
    builder("introspect", str(installed), "--write-pip", str(tmp_path / "pip.txt"),
            "--write-bindep", str(tmp_path / "bindep.txt"), cwd=tmp_path)
    pip = (tmp_path / "pip.txt").read_text()
    bindep = (tmp_path / "bindep.txt").read_text()
    # ansible-builder drops the libraries every EE already has (ansible-core brings PyYAML)
    wanted = _requirement_names(os.path.join(REPO, "requirements.txt")) - {"pyyaml"}
    for name in wanted:
        assert re.search(rf"^{name}\S*\s+# from collection kubevirtci\.dra_cpu$", pip, re.M | re.I), pip
    assert re.search(r"^tar \[.*\]\s+# from collection kubevirtci\.dra_cpu$", bindep, re.M), bindep


def test_create_writes_a_build_context_that_installs_the_collection(tmp_path):
    out = builder("create", "-f", os.path.join(REPO, "docs", "execution-environment.yml"),
                  "-c", "context", "--output-filename", "Containerfile", cwd=tmp_path)
    assert "Complete!" in out, out
    context = tmp_path / "context"
    containerfile = (context / "Containerfile").read_text()
    with open(context / "_build" / "requirements.yml") as fh:
        galaxy = yaml.safe_load(fh)
    names = {c["name"]: c.get("version") for c in galaxy["collections"]}
    with open(os.path.join(REPO, "galaxy.yml")) as fh:
        depends = yaml.safe_load(fh)["dependencies"]
    assert names == {"kubevirtci.dra_cpu": None, "kubernetes.core": depends["kubernetes.core"]}
    assert "ansible-galaxy collection install" in containerfile
    # the collections' requirements.txt / bindep.txt are gathered and installed inside the build
    assert "introspect" in containerfile and "install-from-bindep" in containerfile
    assert 'ANSIBLE_INSTALL_REFS="ansible-core>=2.19,<2.22 ansible-runner"' in containerfile
    assert (context / "_build" / "scripts" / "introspect.py").is_file()
