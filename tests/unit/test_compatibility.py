# SPDX-License-Identifier: Apache-2.0
"""The version claims (meta/runtime.yml, galaxy.yml, the role's meta, tests/config.yml, the
requirements files, README's compatibility matrix) agree with each other and with the Ansible this
test runs on: `make unit` checks the ansible 12 row, `make newest` the ansible 14 row."""

import os
import re
import sys

import yaml
from ansible.release import __version__ as ansible_core_version
from packaging.specifiers import SpecifierSet

from collection_artifact import REPO, bundled_version


def _yaml(rel):
    with open(os.path.join(REPO, rel)) as fh:
        return yaml.safe_load(fh)


def _text(rel):
    with open(os.path.join(REPO, rel)) as fh:
        return fh.read()


def _pins(rel):
    return dict(re.findall(r"^([\w.-]+)==(\S+)", _text(rel), re.M))


def matrix_rows():
    """README "Compatibility" table: one dict per tested row, keyed by the header."""
    section = _text("README.md").split("\n## Compatibility\n", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for ln in lines[2:]:
        cells = [c.strip().strip("`") for c in ln.strip("|").split("|")]
        rows.append(dict(zip(header, cells)))
    return rows


def _version(cell):
    return cell.split()[0].strip("`")


def test_requires_ansible_is_the_oldest_tested_ansible_core():
    tested = [_pins(rel)["ansible-core"] for rel in ("requirements-dev.txt", "requirements-newest.txt")]
    oldest = min(tested, key=lambda v: tuple(int(p) for p in v.split(".")))
    major_minor = ".".join(oldest.split(".")[:2])
    assert _yaml("meta/runtime.yml")["requires_ansible"] == f">={major_minor}.0" == ">=2.19.0"
    assert _yaml("roles/dra_cpu/meta/main.yml")["galaxy_info"]["min_ansible_version"] == major_minor


def test_this_ansible_is_inside_every_claim():
    assert ansible_core_version in SpecifierSet(_yaml("meta/runtime.yml")["requires_ansible"])
    core = bundled_version("kubernetes", "core")
    assert core in SpecifierSet(_yaml("galaxy.yml")["dependencies"]["kubernetes.core"])
    python = "%d.%d.%d" % sys.version_info[:3]
    assert python in SpecifierSet(_yaml("tests/config.yml")["modules"]["python_requires"])


def test_readme_matrix_has_the_row_of_this_ansible():
    core = bundled_version("kubernetes", "core")
    python = "%d.%d" % sys.version_info[:2]
    rows = [r for r in matrix_rows() if _version(r["ansible-core"]) == ansible_core_version]
    assert rows, f"no README matrix row for ansible-core {ansible_core_version}"
    for row in rows:
        assert _version(row["kubernetes.core"]) == core, row
        assert python in re.findall(r"3\.\d+", row["Python"]), row


def test_readme_matrix_rows_match_the_pinned_toolchains():
    pins = {}
    for rel in ("requirements-dev.txt", "requirements-newest.txt"):
        p = _pins(rel)
        pins[p["ansible-core"]] = p["ansible"]
    rows = matrix_rows()
    assert {_version(r["ansible-core"]) for r in rows} == set(pins)
    for row in rows:
        assert f"ansible {pins[_version(row['ansible-core'])]}" in row["ansible-core"], row
    for rel in ("requirements-dev.txt", "requirements-newest.txt"):
        assert "-r requirements.txt" in _text(rel).splitlines()


def test_runtime_requirements_are_only_the_modules_libraries():
    names = {re.split(r"[=<>~!\s]", ln, maxsplit=1)[0].lower() for ln in _text("requirements.txt").splitlines()
             if ln.strip() and not ln.startswith("#")}
    assert names == {"kubernetes", "jsonpatch", "pyyaml"}


def test_galaxy_requirements_file_asks_for_the_same_kubernetes_core():
    wanted = {c["name"]: c["version"] for c in _yaml("requirements.yml")["collections"]}
    assert wanted == _yaml("galaxy.yml")["dependencies"]
