#!/usr/bin/env python
"""Every relative link and anchor in README.md and docs/*.md resolves.

A link is `[text](target)` outside fenced code blocks. Links with a scheme (https:, mailto:) are
not followed. A target's path is taken relative to the document that holds it and must exist; its
`#anchor` must be a heading of the target Markdown file (or of the same document for `#anchor`
alone), slugged as GitHub does: lower case, punctuation dropped, spaces as hyphens, a repeated
heading suffixed -1, -2, ...

    hack/check_doc_links.py     check; exit 1 and print each broken link (part of `make lint`;
                                tests/unit/test_doc_links.py runs it)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def documents(root=ROOT):
    """README.md and docs/*.md, the pages whose links are checked."""
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def prose_lines(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """The anchors of a Markdown document's headings, repeated ones numbered as GitHub does."""
    seen: dict = {}
    found = set()
    for _number, line in prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text):
    """(line number, target) of every link outside fenced code blocks."""
    for number, line in prose_lines(text):
        for match in LINK.finditer(line):
            yield number, match.group(1)


def broken(path, root=ROOT):
    """The broken relative links of one document, as 'file:line: target: why'."""
    problems = []
    text = path.read_text()
    rel = path.relative_to(root)
    for number, target in links(text):
        if SCHEME.match(target):
            continue
        file_part, _sep, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{rel}:{number}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file")
            continue
        if not anchor:
            continue
        if dest.suffix != ".md" or not dest.is_file():
            problems.append(f"{where}: an anchor into a file that is not Markdown")
        elif anchor not in anchors(dest.read_text()):
            problems.append(f"{where}: no heading with anchor #{anchor}")
    return problems


def check(root=ROOT):
    problems = []
    for path in documents(root):
        if path.is_file():
            problems += broken(path, root)
    return problems


def main():
    problems = check()
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} broken link(s) in README.md and docs/*.md")
        return 1
    print(f"links resolve: README.md and {len(documents()) - 1} pages under docs/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
