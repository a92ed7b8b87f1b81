# SPDX-License-Identifier: Apache-2.0
"""The built collection artifact (galaxy.yml build_ignore): what it holds, its size, its license,
its metadata, and the one repository / issue tracker every document names."""

import os
import re

import pytest
import yaml

from collection_artifact import REPO, build, manifest, members, read_member

# What a user runs (scripts/: the drop-in for kubevirtci), and the runtime requirements
# meta/execution-environment.yml points at.
SHIPPED_DIRS = ("plugins", "roles", "playbooks", "meta", "docs", "changelogs", "scripts")
SHIPPED_FILES = ("README.md", "LICENSE", "requirements.txt", "bindep.txt")
GENERATED = ("MANIFEST.json", "FILES.json")
# the size budget of the built collection (plugins, role, playbooks, docs/, changelogs; the harness stays
# out): a limit that catches a stray file (a fixture, a cache, a binary), set a little above what the
# collection measures (299,928 bytes on 2026-12-07 with PCIe roots, verify's aligned mode and
# docs/upstream.md); git log of this line says how it grew
MAX_BYTES = 304 * 1024
# Projects the documents may link to that are not this collection
OTHER_PROJECTS = {
    "kubernetes-sigs/dra-driver-cpu", "kubernetes/kubernetes", "kubernetes/enhancements",
    "kubevirt/kubevirt", "kubevirt/kubevirtci", "ansible-collections/kubernetes.core",
    "ansible/ansible", "helm/helm",
}


def _galaxy():
    with open(os.path.join(REPO, "galaxy.yml")) as fh:
        return yaml.safe_load(fh)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    return build(tmp_path_factory.mktemp("artifact"))


def test_artifact_holds_only_what_a_user_runs(artifact):
    names = members(artifact)
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == set(SHIPPED_DIRS) | set(SHIPPED_FILES) | set(GENERATED), sorted(tops)
    for dev in ("bench/", "hack/", ".ci/", "tests/", "extensions/", ".venv", ".cluster", ".collections"):
        assert not [n for n in names if n.startswith(dev)], dev
    for dev in ("Makefile", "ansible.cfg", "requirements-dev.txt", "requirements-newest.txt",
                "requirements-dev.lock", "requirements-newest.lock",
                "requirements.yml", ".ansible-lint", ".gitignore"):
        assert dev not in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".tar.gz"))]


def test_artifact_has_every_file_of_the_shipped_directories(artifact):
    names = set(members(artifact))
    expected = set(SHIPPED_FILES)
    for top in SHIPPED_DIRS:
        for root, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for f in files:
                rel = os.path.relpath(os.path.join(root, f), REPO)
                if not f.endswith(".pyc") and rel != "changelogs/.plugin-cache.yaml":
                    expected.add(rel)
    assert expected - names == set()


def test_artifact_stays_within_its_size_budget(artifact):
    size = os.path.getsize(artifact)
    assert size < MAX_BYTES, f"{artifact}: {size} bytes"


def test_license_is_the_apache_2_0_text(artifact):
    text = " ".join(read_member(artifact, "LICENSE").split())
    assert text.startswith("Apache License Version 2.0, January 2004 http://www.apache.org/licenses/")
    assert "END OF TERMS AND CONDITIONS" in text
    assert "APPENDIX: How to apply the Apache License to your work." in text
    assert manifest(artifact)["license"] == ["Apache-2.0"]


def test_manifest_carries_galaxy_yml_metadata(artifact):
    info, galaxy = manifest(artifact), _galaxy()
    assert info["dependencies"] == galaxy["dependencies"] == {"kubernetes.core": ">=6.2.0,<7.0.0"}
    for key in ("repository", "documentation", "issues"):
        assert info[key] == galaxy[key]


def _documents():
    paths = ["README.md", "galaxy.yml", "changelogs/changelog.yaml"]
    paths += ["docs/" + f for f in sorted(os.listdir(os.path.join(REPO, "docs")))]
    paths += ["changelogs/fragments/" + f for f in sorted(os.listdir(os.path.join(REPO, "changelogs", "fragments")))]
    for rel in paths:
        with open(os.path.join(REPO, rel)) as fh:
            yield rel, fh.read()


def test_one_repository_and_issue_tracker_everywhere():
    galaxy = _galaxy()
    repo = galaxy["repository"]
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", repo), repo
    assert galaxy["issues"] == repo + "/issues"
    assert galaxy["documentation"].startswith(repo + "/")
    ours = repo[len("https://github.com/"):]
    seen = {}
    for rel, text in _documents():
        for project in re.findall(r"https?://github\.com/([\w.-]+/[\w.-]+)", text):
            project = project.rstrip(".")
            if project not in OTHER_PROJECTS:
                seen.setdefault(project, []).append(rel)
    assert set(seen) <= {ours}, seen
    with open(os.path.join(REPO, "README.md")) as fh:
        readme = fh.read()
    assert repo in readme and galaxy["issues"] in readme
