# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
# Thin filter: the logic is plugins/module_utils/helm_schema.py (schema_requirements).

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: schema_requirements
short_description: What a chart's values.schema.json needs from helm
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - Lists the JSON Schema draft 2019-09/2020-12 constructs of a chart's C(values.schema.json) that
    helm before v3.18.5 (a draft-7 validator) ignores, and the oldest helm that validates them.
options:
  _input:
    description: The schema, as JSON text or parsed; empty for a chart without a schema.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Read the requirements
  ansible.builtin.set_fact:
    needs: "{{ schema_text | kubevirtci.dra_cpu.schema_requirements }}"
"""

RETURN = r"""
_value:
  description: >-
    C({min_helm, draft, reasons, misread}); min_helm is C(3.18.5) when misread lists anything,
    else ''.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm_schema import schema_requirements


class FilterModule(object):
    """kubevirtci.dra_cpu.schema_requirements"""

    def filters(self):
        return {"schema_requirements": schema_requirements_filter}


def schema_requirements_filter(schema):
    try:
        return schema_requirements(schema)
    except ValueError as exc:
        raise AnsibleFilterError("the chart's values.schema.json is not JSON: %s" % exc)
