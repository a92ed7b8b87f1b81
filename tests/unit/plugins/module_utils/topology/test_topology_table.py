# SPDX-License-Identifier: Apache-2.0
"""The table cpu_topology returns as ``summary`` (and the role prints) is the text the role's Jinja
template printed before the rendering moved into the module: the template is kept here as the reference.

The largest-VM line is the exception: its prefix is the template's, but what follows it now says why,
per device mode (a grouped claim is one device; an individual-mode claim holds at most 32 devices,
Kubernetes' AllocationResultsMaxSize, and is one line for the node and one NUMA-aligned), and then the
same size in KubeVirt's vCPUs (common/kubevirt_sizes.py); in individual mode a warning follows (KubeVirt's
synthesized claims need grouped mode, VEP 152 as merged). And the
template's largest/smallest cell line is left out for a single node, whose rows show the same cells."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import jinja2
import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import fact as t
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.table import (
    EMPTY,
    INDIVIDUAL_WARNING,
    render_table,
)
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.topology.fact_helpers import build_topology

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
    "{%- set l = t.largest_cell | default({}) -%} "
    "{%- set m = t.smallest_cell | default({}) -%} "
    "{%- if l %}{{ dra_cpu__nl }}largest cell: {{ l.node }} cell {{ l.id }}, {{ l.allocatable_cpus }} CPUs"
    "{% endif -%} {%- if m %}; smallest cell: {{ m.node }} cell {{ m.id }}, {{ m.allocatable_cpus }} CPUs"
    "{% endif -%}")


GROUPED_NUMA = ", all from one device (one NUMA cell)"
# KubeVirt's hostCPUs = vCPUs + IO threads + emulator-thread CPUs, for the sizes of these fixtures
VCPUS_6 = " = 6 vCPUs, 5 with isolateEmulatorThread (5 with even parity)"
VCPUS_8 = " = 8 vCPUs, 7 with isolateEmulatorThread (7 with even parity)"
VCPUS_10 = " = 10 vCPUs, 9 with isolateEmulatorThread (9 with even parity)"
VCPUS_32 = " = 32 vCPUs, 31 with isolateEmulatorThread (31 with even parity)"
INDIVIDUAL_NODE = "on one node (at most 32 devices, one per CPU)"
ALIGNED = "host CPUs (all its devices from one NUMA cell)"


def role_lines(topology, sizing):
    """The template's lines, ``sizing`` (a list of lines) standing in for its largest-VM line; for
    one node without the largest/smallest cell line."""
    text = jinja2.Environment().from_string(ROLE_TEMPLATE).render(dra_cpu_topology=topology, dra_cpu__nl="\n")
    lines = text.strip().split("\n")
    if len(topology["nodes"]) == 1:
        lines = [line for line in lines if not line.startswith("largest cell:")]
    at = [i for i, line in enumerate(lines) if line.startswith("largest VM that fits:")]
    assert len(at) == 1, lines
    return lines[:at[0]] + sizing + lines[at[0] + 1:]


# fixture -> its largest-VM lines: (grouped) the template's line and why; (individual) the node, then NUMA-aligned
FIXTURES = {
    "reference_grouped_numanode.yaml": ["largest VM that fits: 6 host CPUs" + GROUPED_NUMA + VCPUS_6],
    "reference_individual.yaml": ["largest VM that fits: 10 host CPUs " + INDIVIDUAL_NODE + VCPUS_10,
                                  "largest NUMA-aligned VM: 6 " + ALIGNED + VCPUS_6, INDIVIDUAL_WARNING],
    "grouped_socket_smt.yaml": ["largest VM that fits: 8 host CPUs, all from one device ("
                                "one socket)" + VCPUS_8],
    # a release the role no longer installs (validate refuses machine grouping), still read and reported
    "grouped_machine.yaml": ["largest VM that fits: 10 host CPUs, all from one device ("
                             "the machine)" + VCPUS_10],
    # cells of 78 and 80 CPUs, 158 on the node: one claim gets 32 devices, Kubernetes' limit
    "individual_smt_chunks.yaml": ["largest VM that fits: 32 host CPUs " + INDIVIDUAL_NODE + VCPUS_32,
                                   "largest NUMA-aligned VM: 32 " + ALIGNED + VCPUS_32, INDIVIDUAL_WARNING],
    "two_generations.yaml": ["largest VM that fits: 6 host CPUs" + GROUPED_NUMA + VCPUS_6],
    "v010_names_two_nodes.yaml": ["largest VM that fits: 6 host CPUs" + GROUPED_NUMA + VCPUS_6],
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_same_text_as_the_role_template(slices, name):
    topology = build_topology(slices(name))
    assert topology["nodes"]
    assert render_table(topology) == role_lines(topology, FIXTURES[name])


def test_long_node_names_and_device_lists(slices):
    topology = build_topology(slices("reference_individual.yaml"))
    topology = copy.deepcopy(topology)
    topology["nodes"]["a-much-longer-node-name"] = topology["nodes"].pop("node-a")
    lines = render_table(topology)
    assert lines == role_lines(topology, FIXTURES["reference_individual.yaml"])
    assert lines[1] == "a-much-longer-node-name     0  cpudev000,cpudev0...  4"


def test_readme_example(slices):
    topology = build_topology(slices("reference_grouped_numanode.yaml"))
    topology["nodes"]["node01"] = topology["nodes"].pop("node-a")
    for ref in ("largest_cell", "smallest_cell"):
        topology[ref]["node"] = "node01"
    assert render_table(topology) == [
        "NODE    CELL  DEVICES               ALLOCATABLE CPUS",
        "node01     0  cpudevnuma000         4",
        "node01     1  cpudevnuma001         6",
        "node01  total                       10",
        "largest VM that fits: 6 host CPUs, all from one device (one NUMA cell) = 6 vCPUs, "
        "5 with isolateEmulatorThread (5 with even parity)",
    ]


def test_two_nodes_name_the_largest_and_smallest_cell(slices):
    topology = build_topology(slices("v010_names_two_nodes.yaml"))
    assert len(topology["nodes"]) == 2
    big, small = topology["largest_cell"], topology["smallest_cell"]
    assert render_table(topology)[-1] == "largest cell: %s cell %s, %s CPUs; smallest cell: %s cell %s, %s CPUs" % (
        big["node"], big["id"], big["allocatable_cpus"], small["node"], small["id"], small["allocatable_cpus"])


def test_one_node_has_no_cell_line(slices):
    lines = render_table(build_topology(slices("reference_grouped_numanode.yaml")))
    assert lines[-1].startswith("largest VM that fits:")
    assert not [line for line in lines if line.startswith("largest cell:")]


def test_no_nodes():
    assert render_table(build_topology([])) == [EMPTY]


def test_many_nodes_are_summed_up_in_one_line(slices):
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.table import MAX_NODES
    one = build_topology(slices("reference_grouped_numanode.yaml"))["nodes"]["node-a"]
    names = ["node%04d" % i for i in range(MAX_NODES + 7)]
    topology = t.cluster_topology(dict((n, copy.deepcopy(one)) for n in names))
    lines = render_table(topology)
    assert len(lines) == 1 + MAX_NODES * 3 + 1 + 2
    assert lines[-3] == ("... and 7 more node(s), node%04d to node%04d: their cells are in the "
                         "dra_cpu_topology fact" % (MAX_NODES, MAX_NODES + 6))
    assert lines[-2].startswith("largest VM that fits: 6 host CPUs")
    # up to MAX_NODES nodes, the role's text as it was
    small = t.cluster_topology(dict((n, copy.deepcopy(one)) for n in names[:MAX_NODES]))
    assert render_table(small) == role_lines(small, FIXTURES["reference_grouped_numanode.yaml"])


@pytest.mark.parametrize("host_cpus, words", [
    (0, " = no VM"),
    (1, " = 1 vCPU, none with isolateEmulatorThread"),
    (2, " = 2 vCPUs, 1 with isolateEmulatorThread (1 with even parity)"),
    (4, " = 4 vCPUs, 3 with isolateEmulatorThread (3 with even parity)"),
    # odd: 4 vCPUs + 1 emulator CPU fit in 5, but even parity makes that 4 + 2
    (5, " = 5 vCPUs, 4 with isolateEmulatorThread (3 with even parity)"),
    (6, VCPUS_6),
    (11, " = 11 vCPUs, 10 with isolateEmulatorThread (9 with even parity)"),
    ("?", ""),
])
def test_the_largest_vm_in_kubevirt_vcpus(host_cpus, words):
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.table import in_vcpus
    assert in_vcpus(host_cpus) == words


def test_a_cluster_without_cpus_says_no_vm(slices):
    one = build_topology(slices("reference_grouped_numanode.yaml"))["nodes"]["node-a"]
    empty = dict(copy.deepcopy(one), cells=[], allocatable_cpus=0)
    assert render_table(t.cluster_topology({"node01": empty}))[-1] == (
        "largest VM that fits: 0 host CPUs, all from one device (one NUMA cell) = no VM")
