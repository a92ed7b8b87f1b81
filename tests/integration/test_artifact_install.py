"""The collection as a user installs it: the tarball `ansible-galaxy collection build` makes,
installed with `ansible-galaxy collection install` into an empty collections path, used from a
directory outside the checkout (no ansible.cfg of the repository) against the session test cluster:
`ansible-playbook kubevirtci.dra_cpu.install`, the role inside a user's own bring-up playbook, and
`kubevirtci.dra_cpu.uninstall`. kubernetes.core (and ansible.posix for the json callback) come from
the `ansible` PyPI bundle's site-packages, as for a pip user (Galaxy is not reachable here).

Tests in this module run in order and share the installed artifact.

Nodes: the session cluster's real node, real01 (a real kubelet + containerd; the driver a real
kubelet plugin).
"""
import importlib.util
import json
import os
import subprocess

import pytest

from ansible_run import BIN, REPO, PlaybookResult, cluster_vars
from cluster_reset import remove_driver

pytestmark = pytest.mark.timeout(1200)

_spec = importlib.util.spec_from_file_location(
    "collection_artifact", os.path.join(REPO, "tests", "unit", "collection_artifact.py"))
artifact = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(artifact)

NS = "dra-driver-cpu"

BRING_UP = """\
- name: My cluster's add-ons
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Something of mine before the driver
      ansible.builtin.set_fact:
        my_addons: [cni, storage]

    - name: DRA CPU driver
      ansible.builtin.include_role:
        name: kubevirtci.dra_cpu.dra_cpu
      vars:
        dra_cpu_enabled: true

    - name: Use what the role published
      ansible.builtin.assert:
        that:
          - dra_cpu_topology.max_vm_host_cpus | int > 0
          - my_addons | length == 2
        success_msg: "largest VM: {{ dra_cpu_topology.max_vm_host_cpus }} host CPUs"
"""


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """A user's world: the installed collection and a working directory outside the checkout."""
    base = tmp_path_factory.mktemp("artifact-user")
    tarball = artifact.build(base / "dist")
    installed = artifact.install(tarball, base / "collections")
    home = base / "work"
    home.mkdir()
    (home / "site.yml").write_text(BRING_UP)
    assert not str(home).startswith(REPO) and not (home / "ansible.cfg").exists()
    return {"collections": str(base / "collections"), "installed": installed, "cwd": str(home)}


def user_run(cluster, user, playbook):
    """ansible-playbook <playbook> as the user runs it, pointed at the test cluster."""
    env = cluster.run_env()
    env = artifact.user_env(os.pathsep.join([user["collections"], artifact.bundled_collections_root()]), env)
    env.update({"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_FORCE_COLOR": "0",
                "KUBEVIRT_USE_DRA_CPU": "true", "PATH": BIN + os.pathsep + env.get("PATH", "")})
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), playbook, "-e", json.dumps(cluster_vars(cluster))],
                          env=env, cwd=user["cwd"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=900, check=False)
    return PlaybookResult(proc)


def task_paths(result):
    return [task["task"]["path"] for play in result.data.get("plays", []) for task in play.get("tasks", [])]


def assert_ran_from_the_installed_copy(result, user):
    paths = [p for p in task_paths(result) if p]
    assert paths, result
    for path in paths:
        assert not path.startswith(REPO + os.sep), path
        assert path.startswith(user["installed"] + os.sep) or path.startswith(user["cwd"] + os.sep), path
    assert any(p.startswith(os.path.join(user["installed"], "roles", "dra_cpu") + os.sep) for p in paths), paths


def namespaces(cluster):
    from kubernetes import client
    return {n.metadata.name for n in client.CoreV1Api(cluster.api_client).list_namespace().items}


def test_artifact_resolves_to_the_installed_copy_only(cluster, user):
    env = artifact.user_env(os.pathsep.join([user["collections"], artifact.bundled_collections_root()]))
    out = artifact.galaxy("collection", "list", "--format", "json", cwd=user["cwd"], env=env)
    found = json.loads(out[out.index("{"):])
    where = [path for path, colls in found.items() if "kubevirtci.dra_cpu" in colls]
    assert where == [os.path.join(user["collections"], "ansible_collections")], found
    core = [colls["kubernetes.core"]["version"] for colls in found.values() if "kubernetes.core" in colls]
    assert core == [artifact.bundled_version("kubernetes", "core")], found


def test_install_playbook_of_the_installed_collection(cluster, user):
    remove_driver(cluster)
    r = user_run(cluster, user, "kubevirtci.dra_cpu.install")
    assert r.rc == 0, r
    assert_ran_from_the_installed_copy(r, user)
    assert r.fact("dra_cpu_topology")["max_vm_host_cpus"] == 6, r
    assert NS in namespaces(cluster)


def test_role_inside_a_users_bring_up_playbook(cluster, user):
    r = user_run(cluster, user, "site.yml")
    assert r.rc == 0, r
    assert_ran_from_the_installed_copy(r, user)
    assert r.changed == 0, r.changed_tasks()      # installed by the previous test: nothing to do
    assert "largest VM: 6 host CPUs" in r.result("Use what the role published")["msg"], r


def test_uninstall_playbook_of_the_installed_collection(cluster, user):
    r = user_run(cluster, user, "kubevirtci.dra_cpu.uninstall")
    assert r.rc == 0, r
    assert_ran_from_the_installed_copy(r, user)
    assert r.changed > 0, r
    assert NS not in namespaces(cluster)
