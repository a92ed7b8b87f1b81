# SPDX-License-Identifier: Apache-2.0
"""The packages under plugins/module_utils/ depend on each other one way only.

The role runs its stages in a fixed order (roles/dra_cpu/tasks/main.yml; docs/internals.md "The
stages"): validate, helm, chart, preflight, release, topology, then verify.yml's own stage. A stage
package may import the packages of earlier stages and the shared lower layer (``k8s/``, the API
client, and ``common/``, what several stages share), never a later stage; the lower layer imports no
stage. Parsed with ``ast`` (every import, also one inside a function), nothing is imported.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULE_UTILS = os.path.join(REPO, "plugins", "module_utils")
PREFIX = "ansible_collections.kubevirtci.dra_cpu.plugins.module_utils"

# rank: a package may import only packages of a lower rank (and itself)
LOWER_LAYER = ("common", "k8s")
STAGES = ("validate", "helm", "chart", "preflight", "release", "topology", "verify")
RANK = dict([(name, 0) for name in LOWER_LAYER] + [(name, i + 1) for i, name in enumerate(STAGES)])


def imported_packages(path):
    """The module_utils packages the module at ``path`` imports (every import statement)."""
    with open(path) as fh:
        tree = ast.parse(fh.read(), path)
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from ...module_utils import chart` names the package in the alias
            names = [node.module + "." + alias.name for alias in node.names]
        for name in names:
            if name.startswith(PREFIX + "."):
                found.add(name[len(PREFIX) + 1:].split(".")[0])
    return found


def package_graph(root=MODULE_UTILS):
    """{package: {imported package: [importing file, ...]}} over every .py file under ``root``."""
    graph = {}
    for dirpath, _dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel == ".":
            continue
        package = rel.split(os.sep)[0]
        edges = graph.setdefault(package, {})
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                for target in imported_packages(path) - {package}:
                    edges.setdefault(target, []).append(os.path.relpath(path, REPO))
    return graph


def cycles(graph):
    """Every strongly connected set of more than one package (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def upward_imports(graph):
    """``'<package> -> <package> (<file>, ...)'`` for every import of a later stage or, from the
    lower layer (whose packages do not import each other either), of any other package."""
    bad = []
    for package, edges in sorted(graph.items()):
        for target, files in sorted(edges.items()):
            if package in LOWER_LAYER or target not in RANK or RANK[target] >= RANK.get(package, 0):
                bad.append("%s -> %s (%s)" % (package, target, ", ".join(files)))
    return bad


def test_every_package_has_a_place_in_the_order():
    graph = package_graph()
    assert sorted(set(graph) - set(RANK)) == [], "a package under plugins/module_utils/ without a rank here"


def test_no_import_cycle_between_packages():
    assert cycles(package_graph()) == []


def test_a_stage_imports_only_earlier_stages_and_the_lower_layer():
    assert upward_imports(package_graph()) == []


@pytest.mark.parametrize("graph, found", [
    ({"a": {"b": ["x"]}, "b": {"a": ["y"]}, "c": {"a": ["z"]}}, [["a", "b"]]),
    ({"a": {"b": ["x"]}, "b": {"c": ["y"]}, "c": {}}, []),
])
def test_cycles_finds_a_cycle(graph, found):
    assert cycles(graph) == found


def test_upward_imports_names_the_later_stage_and_the_file():
    graph = {"validate": {"chart": ["plugins/module_utils/validate/settings.py"]},
             "chart": {"validate": ["plugins/module_utils/chart/values.py"]},
             "k8s": {"common": ["plugins/module_utils/k8s/x.py"]}}
    assert upward_imports(graph) == [
        "k8s -> common (plugins/module_utils/k8s/x.py)",
        "validate -> chart (plugins/module_utils/validate/settings.py)",
    ]


def test_imported_packages_reads_every_form(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "import os\n"
        "from %(p)s.chart import values as cv\n"
        "from %(p)s import helm\n"
        "import %(p)s.k8s.client\n"
        "def f():\n"
        "    from %(p)s.topology.fact import DEFAULT_DRIVER\n" % {"p": PREFIX})
    assert imported_packages(str(src)) == {"chart", "helm", "k8s", "topology"}
