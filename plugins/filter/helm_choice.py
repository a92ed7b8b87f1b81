# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
# Thin filter: the decision is plugins/module_utils/helm/schema.py (helm_choice).

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: helm_choice
short_description: Whether a helm can validate a chart's values schema, and what to do if not
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - Takes what a chart's values schema needs (the RV(kubevirtci.dra_cpu.chart_layout#module:schema_requirements) of the chart)
    and the version of the helm the role found, and says whether to use it, to download C(dra_cpu_helm_version)
    instead (helm on PATH), or to fail (C(dra_cpu_helm_binary), or a downloaded helm, too old).
  - helm v3 validates draft 2019-09/2020-12 schemas from v3.18.5 on; older releases ignore
    keywords such as C(unevaluatedProperties) or those beside a C($ref), and let values pass
    that the schema refuses.
options:
  _input:
    description: The requirements, C({min_helm, draft, reasons, misread}).
    type: dict
    required: true
  helm_version:
    description: The helm version found (C(v3.18.4)); empty when unknown.
    type: str
    required: true
  source:
    description: Where that helm comes from.
    type: str
    choices: [path, binary, download]
    required: true
  binary:
    description: The value of C(dra_cpu_helm_binary), for the message.
    type: str
    default: ''
  wanted_version:
    description: The value of C(dra_cpu_helm_version), for the message.
    type: str
    default: ''
"""

EXAMPLES = r"""
- name: Decide
  ansible.builtin.set_fact:
    choice: "{{ layout.schema_requirements | kubevirtci.dra_cpu.helm_choice('v3.18.4', 'path') }}"
"""

RETURN = r"""
_value:
  description: C({action, message, warning}); action is C(use), C(download) or C(fail).
  type: dict
"""

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.schema import helm_choice


class FilterModule(object):
    """kubevirtci.dra_cpu.helm_choice"""

    def filters(self):
        return {"helm_choice": helm_choice_filter}


def helm_choice_filter(requirements, helm_version, source, binary="", wanted_version=""):
    return helm_choice(requirements, helm_version, source, binary=binary, wanted_version=wanted_version)
