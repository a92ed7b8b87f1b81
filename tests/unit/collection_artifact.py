# SPDX-License-Identifier: Apache-2.0
"""Build and install the collection artifact the way a user does, with the ansible-galaxy of the
Python running the tests (.venv for `make test`, .venv-newest for `make newest`).

Used by tests/unit/test_artifact.py, tests/unit/test_execution_environment.py and
tests/integration/test_artifact_install.py.
"""

import glob
import json
import os
import subprocess
import sys
import tarfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
# Galaxy is not reachable here: kubernetes.core comes from the `ansible` PyPI bundle's
# site-packages, so installs skip dependency resolution (--no-deps) and the tests check the
# bundled kubernetes.core against galaxy.yml's range instead.
NO_DEPS = "--no-deps"


def tool(name):
    """Path of a console script installed next to this interpreter."""
    return os.path.join(BIN, name)


def galaxy(*args, cwd=None, env=None):
    proc = subprocess.run([tool("ansible-galaxy"), *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"ansible-galaxy {' '.join(args)} failed:\n{proc.stdout[-3000:]}"
    return proc.stdout


def build(dest):
    """`ansible-galaxy collection build` of the checkout into dest; returns the tarball's path."""
    os.makedirs(str(dest), exist_ok=True)
    galaxy("collection", "build", REPO, "--output-path", str(dest), "--force", cwd=str(dest))
    found = glob.glob(os.path.join(str(dest), "kubevirtci-dra_cpu-*.tar.gz"))
    assert len(found) == 1, found
    return found[0]


def user_env(collections_path, base=None):
    """The environment of a user outside the checkout: no ansible.cfg of the repository (which
    would make the checkout itself the installed collection), collections from collections_path."""
    env = dict(os.environ if base is None else base)
    env.pop("ANSIBLE_CONFIG", None)
    env["ANSIBLE_COLLECTIONS_PATH"] = str(collections_path)
    return env


def install(tarball, collections_dir):
    """`ansible-galaxy collection install` of the tarball into an empty collections path."""
    os.makedirs(str(collections_dir), exist_ok=True)
    out = galaxy("collection", "install", NO_DEPS, "-p", str(collections_dir), tarball,
                 cwd=str(collections_dir), env=user_env(collections_dir))
    assert "was installed successfully" in out, out
    return os.path.join(str(collections_dir), "ansible_collections", "kubevirtci", "dra_cpu")


def members(tarball):
    """The regular files of the artifact, as paths relative to the collection root."""
    with tarfile.open(tarball) as tar:
        return sorted(m.name for m in tar.getmembers() if m.isfile())


def read_member(tarball, name):
    with tarfile.open(tarball) as tar:
        return tar.extractfile(name).read().decode()


def manifest(tarball):
    return json.loads(read_member(tarball, "MANIFEST.json"))["collection_info"]


def bundled_collections_root():
    """The site-packages directory holding the `ansible` bundle's ansible_collections/, by its real
    path: `.venv` is a link to the venv in the cache (hack/venv.sh) and the venv's console scripts
    (ansible-galaxy, ansible-playbook) run under the real path, so their own site-packages is named so;
    named through the link, the same directory would be a second collections root to them."""
    from ansible_collections.kubernetes import core  # pylint: disable=import-outside-toplevel
    core_dir = os.path.realpath(list(core.__path__)[0])
    return os.path.dirname(os.path.dirname(os.path.dirname(core_dir)))


def bundled_version(namespace, name):
    path = os.path.join(bundled_collections_root(), "ansible_collections", namespace, name, "MANIFEST.json")
    with open(path) as fh:
        return json.load(fh)["collection_info"]["version"]
