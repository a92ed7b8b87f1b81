#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
# Thin module: the chart stage is module_utils/chart/stage.py (fetch.py pulls and caches, layout.py maps,
# helm/schema.py says what its values schema needs from helm); plugins/action/chart_layout.py runs it in-process on a local connection.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: chart_layout
short_description: Map the dra_cpu role's settings onto the values a dra-driver-cpu chart really has
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - Reads a chart's C(Chart.yaml), C(values.yaml) and C(values.schema.json) (a directory, as
    C(helm pull --untar) leaves it, or a packaged C(.tgz)) and maps the driver settings onto
    C(driverConfig.*) when the chart has that value, else onto C(args.*).
  - Fails, naming the chart, its version and the missing key, when a setting that must be passed has no
    key in the chart. Nothing is written anywhere.
  - Without O(path) (the chart could not be read, for example in check mode before helm is downloaded)
    falls back to the version-number rule (C(args) below 0.3.0) and says so.
  - With O(helm) set it gets the chart itself, the chart stage of the dra_cpu role in one call -
    C(helm pull <chart> --destination <tmp> [--version V] [--plain-http]) into a temporary directory
    it removes again (C(SSL_CERT_FILE) set to O(ca_file)); a local chart directory or C(.tgz) is read
    where it is. A chart that cannot be fetched fails naming O(chart) and O(chart_version), with
    helm's error and whether the chart exists but not in this version.
  - The parsed chart (its layout, image defaults and schema requirements) is cached by chart digest in
    C(<cache_dir>/charts/sha256-<hex>.json) - the digest helm prints on an OCI pull, else the sha256 of
    the pulled C(.tgz). helm still pulls the chart on every run (only that tells which digest a
    reference names); the cache saves reading and parsing it. Not written in check mode.
  - Says what validating the chart's C(values.schema.json) needs from helm, RV(schema_requirements);
    M(kubevirtci.dra_cpu.helm_tool) given them keeps, replaces or refuses the helm found. This module
    finds and downloads no helm - it pulls with O(helm).
options:
  path:
    description:
      - The chart directory or C(.tgz). Empty for the version-number fallback.
    type: path
    default: ''
  chart:
    description: The chart reference, for the messages.
    type: str
    default: ''
  chart_version:
    description: The chart version asked for (used by the fallback and the messages).
    type: str
    default: ''
  reserved_cpus:
    description: The reserved CPUs in cpuset syntax (always set, also when empty).
    type: str
    default: ''
  group_by:
    description: The grouping; empty keeps the chart default and is not set.
    type: str
    default: ''
  cpu_device_mode:
    description: The device mode.
    type: str
    default: grouped
    choices: [grouped, individual]
  node_allocatable_mapping:
    description:
      - Set C(driverConfig.publishNodeAllocatableResourceMapping=true) (KEP-5517); fails naming
        C(dra_cpu_node_allocatable_mapping) and the chart when the chart has no such key. False sets nothing.
    type: bool
    default: false
  expose_pcie_roots:
    description:
      - Set C(args.exposePCIeRoots=true) (the driver's C(--expose-pcie-roots)), under C(args) on every chart
        (upstream main refuses it in C(driverConfig)); fails naming C(dra_cpu_expose_pcie_roots) and the chart
        when the chart has no such key. False sets nothing.
    type: bool
    default: false
  image:
    description:
      - The image to run, C(repository[:tag]), set through C(image.repository) and C(image.tag);
        empty keeps the chart's default.
    type: str
    default: ''
  chart_values:
    description: Extra values, deep-merged last.
    type: dict
    default: {}
  helm:
    description:
      - argv[0] of helm for C(helm pull). Set (also to '') it switches the module to getting the chart
        itself from O(chart) - '' means no helm yet (check mode before the download) - a local
        O(chart) is read where it is, and the version-number fallback is used when neither works.
      - Not set, O(path) is read, or the fallback used when it is empty (what the module did before
        it had this option).
    type: str
  plain_http:
    description: C(helm pull --plain-http) (an OCI registry without TLS).
    type: bool
    default: false
  ca_file:
    description: CA bundle for the chart's registry or repository (C(SSL_CERT_FILE) for helm); '' none.
    type: path
    default: ''
  cache_dir:
    description: The helm cache directory (C(dra_cpu_helm_cache_dir)); the layout cache is its C(charts/). '' no cache.
    type: path
    default: ''
extends_documentation_fragment:
  - kubevirtci.dra_cpu.read_only
"""

EXAMPLES = r"""
- name: Map the values onto the chart pulled into /tmp/chart/dra-driver-cpu
  kubevirtci.dra_cpu.chart_layout:
    path: /tmp/chart/dra-driver-cpu
    chart: oci://registry.k8s.io/dra-driver-cpu/charts/dra-driver-cpu
    chart_version: 0.3.0
    reserved_cpus: "0-1"
    image: registry.example.org/dra-driver-cpu:v0.3.0
  register: layout
"""

RETURN = r"""
layout:
  description: What the chart has.
  returned: success
  type: dict
  contains:
    values_key:
      description: V(driverConfig) or V(args), the key the settings were mapped onto.
      type: str
    keys:
      description: The keys the chart has under RV(layout.values_key).
      type: list
      elements: str
    node_selector:
      description: Whether the chart has a C(nodeSelector) value.
      type: bool
    affinity:
      description: Whether the chart has an C(affinity) value.
      type: bool
    source:
      description: V(chart), or the version-number fallback.
      type: str
release_values:
  description: The values for C(kubernetes.core.helm), O(chart_values) merged last.
  returned: success
  type: dict
driver_shape:
  description:
    - "The devices the driver is asked to publish, read from RV(release_values) (the deprecated C(args)
      keys win over C(driverConfig) when set): C(mode) (C(cpuDeviceMode)) and C(group_by) (C(groupBy)),
      each V('') when the values leave it to the chart or driver default."
    - The role passes it to M(kubevirtci.dra_cpu.cpu_topology) as O(kubevirtci.dra_cpu.cpu_topology#module:expected_mode)
      and O(kubevirtci.dra_cpu.cpu_topology#module:expected_group_by).
  returned: success
  type: dict
  sample: {"mode": "grouped", "group_by": "socket"}
node_selector:
  description: The C(nodeSelector) the DaemonSet will use ({} when the chart has none).
  returned: success
  type: dict
image:
  description: The image (C(repository:tag)) the release will run; '' when the chart could not be read.
  returned: success
  type: str
  sample: registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.3.0
app_version:
  description: The chart's appVersion ('' when the chart could not be read).
  returned: success
  type: str
report:
  description:
    - "Short lines for the release report: C(chart <version> (values onto <key>.*)) (the release stage
      joins the image onto it; a mapping not read from the chart says where it comes from)."
    - A list since the module fetches the chart itself; the one line it was is RV(mapping) now.
  returned: success
  type: list
  elements: str
  sample:
    - "chart 0.3.0 (values onto driverConfig.*)"
mapping:
  description: The mapping alone, C(values mapped onto driverConfig.* (from chart); ...).
  returned: success
  type: str
version:
  description:
    - The version in the chart's C(Chart.yaml), the one that will be installed; O(chart_version)
      (or '') when the chart could not be read.
  returned: always
  type: str
  sample: 0.3.0
source:
  description:
    - Where the chart was read - V(pulled) (helm pull), V(local) (O(chart) is a local path), V(path)
      (O(path)), or V(fallback) (not read, the version-number rule).
  returned: always
  type: str
digest:
  description: The pulled chart's digest (C(sha256:...)); '' when it was not pulled.
  returned: always
  type: str
cache:
  description: V(hit) (the layout came from the cache), V(written) (stored now), or '' (not pulled, no O(cache_dir), check mode).
  returned: always
  type: str
schema_requirements:
  description:
    - What validating the chart's C(values.schema.json) needs from helm (C(min_helm), C(draft), C(reasons),
      C(misread); see module_utils/helm/schema.py), for M(kubevirtci.dra_cpu.helm_tool)'s
      O(kubevirtci.dra_cpu.helm_tool#module:schema_requirements). Returned only when the chart was read.
  returned: when O(path) is set
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart.stage import argument_spec, chart_result


def _runner(module):
    def run(argv, env):
        try:
            return module.run_command(argv, environ_update=env, expand_user_and_vars=False,
                                      handle_exceptions=False)
        except OSError as exc:
            return 127, "", "%s: %s" % (argv[0], exc)
    return run


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    result = chart_result(module.params, _runner(module), module.check_mode)
    for warning in result.pop("warnings", []):
        module.warn(warning)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
