#!/usr/bin/env python3
"""The dead-code check of `make lint`: vulture over plugins/ with hack/vulture_whitelist.py.

A key of a class-form ``TypedDict`` declares a shape (a module's result, a fact) that its readers,
often Ansible tasks or a user's playbook, read by name: vulture cannot see those reads, so the keys
of every ``TypedDict`` class defined under plugins/ (directly or through another such class), and the
fields of every dataclass, are not reported. Everything else vulture finds at the confidence given is reported; exit 1 when anything is.
"""

from __future__ import annotations

import ast
import pathlib
import sys

from vulture import core

MIN_CONFIDENCE = 60


def shape_spans(paths: list[pathlib.Path]) -> dict[str, list[tuple[int, int]]]:
    """``{file: [(first line, last line)]}`` of the TypedDict classes and dataclasses in ``paths``."""
    classes: list[tuple[str, ast.ClassDef]] = []
    for path in paths:
        tree = ast.parse(path.read_text(), str(path))
        classes += [(str(path), node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    typed = {"TypedDict"}
    fields = set()  # dataclasses: their fields are a declared shape too
    for _, node in classes:
        if any((d.id if isinstance(d, ast.Name) else getattr(d, "attr", "")) == "dataclass" for d in node.decorator_list):
            fields.add(node.name)
    grew = True
    while grew:  # a class counts once one of its bases is a TypedDict (any order of definition)
        grew = False
        for _, node in classes:
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
            if node.name not in typed and bases & typed:
                typed.add(node.name)
                grew = True
    spans: dict[str, list[tuple[int, int]]] = {}
    for path, node in classes:
        if node.name in typed or node.name in fields:
            spans.setdefault(str(pathlib.Path(path).resolve()), []).append((node.lineno, node.end_lineno or node.lineno))
    return spans


def main(argv: list[str]) -> int:
    roots = argv or ["plugins/", "hack/vulture_whitelist.py"]
    scanner = core.Vulture()
    scanner.scavenge(roots)
    files = [p for r in roots for p in (pathlib.Path(r).rglob("*.py") if pathlib.Path(r).is_dir() else [pathlib.Path(r)])]
    spans = shape_spans(files)
    found = 0
    for item in scanner.get_unused_code(min_confidence=MIN_CONFIDENCE):
        if item.typ == "variable" and any(a <= item.first_lineno <= b for a, b in spans.get(str(pathlib.Path(item.filename).resolve()), [])):
            continue
        print(item.get_report())
        found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
