"""README.md is a front page (issue 38): short, and a way to every page under docs/."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_doc_links", ROOT / "hack" / "check_doc_links.py")
check_doc_links = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_doc_links)

MAX_LINES = 250


def test_the_front_page_is_at_most_250_lines():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines: move a subject to a page under docs/"


def test_the_front_page_links_every_page_under_docs():
    targets = {target.partition("#")[0] for _number, target in check_doc_links.links((ROOT / "README.md").read_text())}
    pages = {"docs/" + p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages <= targets, pages - targets
