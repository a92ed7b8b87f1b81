# SPDX-License-Identifier: Apache-2.0
"""The table cpu_topology returns as ``summary`` (and the role prints) is the text the role's Jinja
template printed before the rendering moved into the module: the template is kept here as the reference."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import jinja2
import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils import topology as t
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology_table import EMPTY, render_table

# roles/dra_cpu/tasks/topology.yml until the table moved into the module (the `>-` scalar folded)
ROLE_TEMPLATE = (
    "{%- set t = dra_cpu_topology -%} {%- set w = ([4] + (t.nodes | list | map('length') | list)) | max -%} "
    "{{ '%-*s' | format(w, 'NODE') }}  CELL  DEVICES               ALLOCATABLE CPUS{{ dra_cpu__nl }} "
    "{%- for name, node in t.nodes | dictsort -%} {%-   for cell in node.cells | default([]) -%} "
    "{%-     set devices = cell.devices | default([]) | join(',') | truncate(20, true, '...', 0) -%} "
    "{{ '%-*s' | format(w, name) }}  {{ '%4s' | format(cell.id) }}  {{ '%-20s' | format(devices) }}  "
    "{{ cell.allocatable_cpus }}{{ dra_cpu__nl }} {%-   endfor -%} "
    "{{ '%-*s' | format(w, name) }}  total                       {{ node.allocatable_cpus | default('?') }}"
    "{{ dra_cpu__nl }} {%- endfor -%} largest VM that fits: {{ t.max_vm_host_cpus | default('?') }} host CPUs "
    "(a claim takes all its CPUs from one cell) {%- set l = t.largest_cell | default({}) -%} "
    "{%- set m = t.smallest_cell | default({}) -%} "
    "{%- if l %}{{ dra_cpu__nl }}largest cell: {{ l.node }} cell {{ l.id }}, {{ l.allocatable_cpus }} CPUs"
    "{% endif -%} {%- if m %}; smallest cell: {{ m.node }} cell {{ m.id }}, {{ m.allocatable_cpus }} CPUs"
    "{% endif -%}")


def role_lines(topology):
    text = jinja2.Environment().from_string(ROLE_TEMPLATE).render(dra_cpu_topology=topology, dra_cpu__nl="\n")
    return text.strip().split("\n")


FIXTURES = ["reference_grouped_numanode.yaml", "reference_individual.yaml", "grouped_socket_smt.yaml",
            "grouped_machine.yaml", "individual_smt_chunks.yaml", "two_generations.yaml",
            "v010_names_two_nodes.yaml"]


@pytest.mark.parametrize("name", FIXTURES)
def test_same_text_as_the_role_template(slices, name):
    topology = t.build_topology(slices(name))
    assert topology["nodes"]
    assert render_table(topology) == role_lines(topology)


def test_long_node_names_and_device_lists(slices):
    topology = t.build_topology(slices("reference_individual.yaml"))
    topology = copy.deepcopy(topology)
    topology["nodes"]["a-much-longer-node-name"] = topology["nodes"].pop("node-a")
    lines = render_table(topology)
    assert lines == role_lines(topology)
    assert lines[1] == "a-much-longer-node-name     0  cpudev000,cpudev0...  4"


def test_readme_example(slices):
    topology = t.build_topology(slices("reference_grouped_numanode.yaml"))
    topology["nodes"]["node01"] = topology["nodes"].pop("node-a")
    for ref in ("largest_cell", "smallest_cell"):
        topology[ref]["node"] = "node01"
    assert render_table(topology) == [
        "NODE    CELL  DEVICES               ALLOCATABLE CPUS",
        "node01     0  cpudevnuma000         4",
        "node01     1  cpudevnuma001         6",
        "node01  total                       10",
        "largest VM that fits: 6 host CPUs (a claim takes all its CPUs from one cell)",
        "largest cell: node01 cell 1, 6 CPUs; smallest cell: node01 cell 0, 4 CPUs",
    ]


def test_no_nodes():
    assert render_table(t.build_topology([])) == [EMPTY]


def test_many_nodes_are_summed_up_in_one_line(slices):
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology_table import MAX_NODES
    one = t.build_topology(slices("reference_grouped_numanode.yaml"))["nodes"]["node-a"]
    names = ["node%04d" % i for i in range(MAX_NODES + 7)]
    topology = t.cluster_topology(dict((n, copy.deepcopy(one)) for n in names))
    lines = render_table(topology)
    assert len(lines) == 1 + MAX_NODES * 3 + 1 + 2
    assert lines[-3] == ("... and 7 more node(s), node%04d to node%04d: their cells are in the "
                         "dra_cpu_topology fact" % (MAX_NODES, MAX_NODES + 6))
    assert lines[-2].startswith("largest VM that fits: 6 host CPUs")
    # up to MAX_NODES nodes, the role's text as it was
    small = t.cluster_topology(dict((n, copy.deepcopy(one)) for n in names[:MAX_NODES]))
    assert render_table(small) == role_lines(small)
