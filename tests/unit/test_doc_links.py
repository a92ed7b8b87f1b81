"""Every relative link and anchor in README.md and docs/*.md resolves (hack/check_doc_links.py),
and the checker finds a broken one."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_doc_links", ROOT / "hack" / "check_doc_links.py")
check_doc_links = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_doc_links)


def test_every_link_of_the_repository_resolves():
    assert check_doc_links.check() == []


@pytest.mark.parametrize("heading, anchor", [
    ("## RBAC: what the role needs", "rbac-what-the-role-needs"),
    ("### The kubevirtci flow, rewritten with this collection", "the-kubevirtci-flow-rewritten-with-this-collection"),
    ("## `dra_cpu_topology` and CPU sets", "dra_cpu_topology-and-cpu-sets"),
    ("# Set-up", "set-up"),
])
def test_anchor_of_a_heading(heading, anchor):
    assert check_doc_links.anchors(heading + "\n") == {anchor}


def test_repeated_headings_are_numbered():
    assert check_doc_links.anchors("# A\n## A\n### A\n") == {"a", "a-1", "a-2"}


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## Some section\n\nback to [the front](../README.md#top)\n")
    (tmp_path / "README.md").write_text("# Top\n\nsee [page](docs/page.md#some-section)\n")
    return tmp_path


def test_a_good_tree_has_no_findings(tree):
    assert check_doc_links.check(tree) == []


@pytest.mark.parametrize("link, why", [
    ("[gone](docs/missing.md)", "no such file"),
    ("[bad anchor](docs/page.md#no-such-section)", "no heading with anchor #no-such-section"),
    ("[here](#nowhere)", "no heading with anchor #nowhere"),
    ("[into a file](LICENSE#x)", "an anchor into a file that is not Markdown"),
])
def test_a_broken_link_is_found(tree, link, why):
    (tree / "LICENSE").write_text("x\n")
    with (tree / "README.md").open("a") as fd:
        fd.write("\n" + link + "\n")
    target = link.split("](")[1].rstrip(")")
    assert check_doc_links.check(tree) == [f"README.md:5: {target}: {why}"]


def test_links_in_code_blocks_and_with_a_scheme_are_not_followed(tree):
    with (tree / "docs" / "page.md").open("a") as fd:
        fd.write("```\n[not a link](nowhere.md)\n```\n[web](https://example.com/x.md#y)\n")
    assert check_doc_links.check(tree) == []
