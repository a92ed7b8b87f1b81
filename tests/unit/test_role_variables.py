"""The variable table of docs/usage.md == meta/argument_specs.yml == defaults/main.yml, and no other
page holds one (hack/check_variables.py)."""

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_variables", ROOT / "hack" / "check_variables.py")
check_variables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_variables)


@pytest.fixture
def tree(tmp_path):
    """A copy of the three sources that a test may break."""
    for rel in ("README.md", "docs/usage.md", "roles/dra_cpu/defaults/main.yml", "roles/dra_cpu/meta/argument_specs.yml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    return tmp_path


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_the_repository_is_consistent():
    assert check_variables.check() == []


def test_main_exits_zero(capsys):
    assert check_variables.main([]) == 0
    assert "consistent" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name, expected",
    [
        ("dra_cpu_enabled", False),
        ("dra_cpu_reserved_cpus", "0-1"),
        ("dra_cpu_group_by", ""),
        ("dra_cpu_chart", "oci://registry.k8s.io/dra-driver-cpu/charts/dra-driver-cpu"),
        ("dra_cpu_chart_version", "0.3.0"),
        ("dra_cpu_namespace", "dra-driver-cpu"),
        ("dra_cpu_release_name", "dra-driver-cpu"),
        ("dra_cpu_helm_version", "v3.22.0"),
        ("dra_cpu_kubeconfig", ""),
        ("dra_cpu_num_vcpu", ""),
        ("dra_cpu_num_numa_nodes", ""),
        ("dra_cpu_helm_timeout", "5m"),
    ],
)
def test_defaults_in_an_empty_environment(name, expected):
    assert check_variables.load_defaults()[name]["default"] == expected


@pytest.mark.parametrize(
    "name, env",
    [
        ("dra_cpu_enabled", ["KUBEVIRT_USE_DRA_CPU"]),
        ("dra_cpu_reserved_cpus", ["DRA_CPU_RESERVED_CPUS"]),
        ("dra_cpu_group_by", ["DRA_CPU_GROUP_BY"]),
        ("dra_cpu_chart", ["DRA_CPU_CHART"]),
        ("dra_cpu_chart_version", ["DRA_CPU_CHART_VERSION"]),
        ("dra_cpu_namespace", ["DRA_CPU_DRIVER_NAMESPACE"]),
        ("dra_cpu_release_name", ["DRA_CPU_RELEASE_NAME"]),
        ("dra_cpu_helm_version", ["HELM_VERSION"]),
        ("dra_cpu_kubeconfig", ["KUBEVIRTCI_CONFIG_PATH", "KUBEVIRT_PROVIDER"]),
        ("dra_cpu_num_vcpu", ["KUBEVIRT_NUM_VCPU"]),
        ("dra_cpu_num_numa_nodes", ["KUBEVIRT_NUM_NUMA_NODES"]),
    ],
)
def test_seed_environment_variables_are_mapped(name, env):
    assert check_variables.load_defaults()[name]["env"] == sorted(env)


def test_table_default_drift_is_reported(tree):
    _edit(tree / "docs/usage.md", "| `dra_cpu_reserved_cpus` | `0-1` |", "| `dra_cpu_reserved_cpus` | `0-2` |")
    problems = check_variables.check(tree)
    assert any(p.startswith("dra_cpu_reserved_cpus: docs/usage.md default") for p in problems), problems


def test_a_second_table_is_reported(tree):
    row = next(line for line in (tree / "docs/usage.md").read_text().splitlines()
               if line.startswith("| `dra_cpu_reserved_cpus` |"))
    with (tree / "README.md").open("a") as fd:
        fd.write("\n" + row + "\n")
    assert check_variables.check(tree) == ["README.md: a variable table outside docs/usage.md"]


def test_a_missing_table_is_reported(tree):
    (tree / "docs/usage.md").write_text("# Usage and variables\n")
    problems = check_variables.check(tree)
    assert problems[0] == "docs/usage.md: no variable table between %r and %r" % (
        check_variables.BEGIN, check_variables.END), problems


def test_spec_default_drift_is_reported(tree):
    _edit(tree / "roles/dra_cpu/meta/argument_specs.yml", "default: 300\n", "default: 200\n")
    problems = check_variables.check(tree)
    assert any("dra_cpu_topology_timeout: default differs" in p for p in problems), problems


def test_variable_missing_from_readme_and_spec_is_reported(tree):
    with (tree / "roles/dra_cpu/defaults/main.yml").open("a") as fd:
        fd.write("dra_cpu_brand_new: 1\n")
    problems = check_variables.check(tree)
    assert "dra_cpu_brand_new: in defaults/main.yml but not in meta/argument_specs.yml" in problems
    assert "dra_cpu_brand_new: missing from the variable table of docs/usage.md" in problems


def test_environment_drift_is_reported(tree):
    _edit(tree / "roles/dra_cpu/defaults/main.yml", "'DRA_CPU_GROUP_BY'", "'DRA_CPU_GROUPING'")
    problems = check_variables.check(tree)
    assert any(p.startswith("dra_cpu_group_by: environment differs") for p in problems), problems


def test_generated_table_round_trips():
    specs, problems = check_variables.load_specs()
    assert problems == []
    table = check_variables.render_table(specs)
    for name, option in specs.items():
        row = next(line for line in table.splitlines() if line.startswith(f"| `{name}` |"))
        cell = row.split("|")[2]
        assert check_variables.parse_cell_value(cell) == option.get("default"), name
