#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
# Thin module: reads the chart's three files; the mapping is module_utils/chart/layout.py.

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
  description: One line saying which mapping was used.
  returned: success
  type: str
schema_requirements:
  description:
    - What validating the chart's C(values.schema.json) needs from helm (C(min_helm), C(draft), C(reasons),
      C(misread); see module_utils/helm/schema.py). Returned only when the chart was read.
  returned: when O(path) is set
  type: dict
"""

import json
import os
import tarfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart import layout as cl
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.schema import schema_requirements

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core
    yaml = None

FILES = ("Chart.yaml", "values.yaml", "values.schema.json")


def _chart_dir(path):
    """The directory holding Chart.yaml: ``path`` itself or its only subdirectory (helm pull --untar)."""
    if os.path.isfile(os.path.join(path, "Chart.yaml")):
        return path
    subs = [os.path.join(path, d) for d in sorted(os.listdir(path))
            if os.path.isfile(os.path.join(path, d, "Chart.yaml"))]
    if len(subs) != 1:
        raise ValueError("%s holds no single chart" % path)
    return subs[0]


def read_chart(path):
    """{file name: text or None} from a chart directory or .tgz."""
    found = dict((name, None) for name in FILES)
    if os.path.isdir(path):
        top = _chart_dir(path)
        for name in FILES:
            full = os.path.join(top, name)
            if os.path.isfile(full):
                with open(full) as fh:
                    found[name] = fh.read()
        return found
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if len(parts) == 2 and parts[1] in FILES and member.isfile():
                found[parts[1]] = tar.extractfile(member).read().decode("utf-8")
    return found


def main():
    module = AnsibleModule(argument_spec=dict(
        path=dict(type="path", default=""),
        chart=dict(type="str", default=""),
        chart_version=dict(type="str", default=""),
        reserved_cpus=dict(type="str", default=""),
        group_by=dict(type="str", default=""),
        cpu_device_mode=dict(type="str", default="grouped", choices=["grouped", "individual"]),
        image=dict(type="str", default=""),
        chart_values=dict(type="dict", default={}),
    ), supports_check_mode=True)
    p = module.params
    metadata, defaults, schema = {}, {}, None
    if p["path"]:
        try:
            files = read_chart(p["path"])
            if files["Chart.yaml"] is None:
                raise ValueError("no Chart.yaml")
            metadata = yaml.safe_load(files["Chart.yaml"]) or {}
            defaults = yaml.safe_load(files["values.yaml"] or "") or {}
            schema = json.loads(files["values.schema.json"]) if files["values.schema.json"] else None
        except (OSError, IOError, ValueError, tarfile.TarError, yaml.YAMLError) as exc:
            module.fail_json(msg="cannot read chart %s %s at %s: %s"
                             % (p["chart"], p["chart_version"], p["path"], exc))
        layout = cl.chart_layout(metadata, defaults, schema, p["chart"])
    else:
        layout = cl.fallback_layout(p["chart_version"], p["chart"])
    try:
        values = cl.release_values(layout, p, p["chart_values"], p["image"])
    except cl.ChartLayoutError as exc:
        module.fail_json(msg=str(exc), layout=layout)
    image = cl.image_of(defaults, metadata, values) if p["path"] else ""
    extra = {"schema_requirements": schema_requirements(schema)} if p["path"] else {}
    module.exit_json(
        changed=False,
        layout=layout,
        release_values=values,
        node_selector=cl.node_placement(layout, p["chart_values"]),
        image=image,
        app_version=str(metadata.get("appVersion") or ""),
        report=cl.report_line(layout),
        **extra
    )


if __name__ == "__main__":
    main()
