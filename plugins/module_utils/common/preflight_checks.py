# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The names of preflight's checks (pure data).

Owns the list ``dra_cpu_preflight_ignore`` may name: the validate stage checks the role variable
against it, the preflight stage runs the checks and downgrades the ignored ones (preflight/rules.py).
A check only ever a warning (``node_ready``) is not among them: it has no error to downgrade.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

CHECKS = (
    "server_version",
    "resource_api",
    "feature_gate",
    "node_allocatable_gate",
    "list_attributes_gate",
    "list_attributes_scheduler",
    "container_runtime",
    "cpu_manager_policy",
    "reserved_cpus",
    "eligible_nodes",
)
