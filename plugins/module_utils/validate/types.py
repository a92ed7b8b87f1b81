# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The declared shape of validate's ``settings``: the role's variables checked and normalised, the
one result every later stage reads (the role as ``dra_cpu__settings``, their Python as ``Settings``).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Optional, TypedDict

# validate's ``settings``; a key whose option was not given (None) is absent. The functional form:
# the keys are read by name by the role's tasks, which the dead-code check cannot see
Settings = TypedDict("Settings", {
    "reserved_cpus": str,
    "reserved_cpu_list": list[int],
    "group_by": str,
    "cpu_device_mode": str,
    "node_allocatable_mapping": bool,
    "expose_pcie_roots": bool,
    "chart": str,
    "chart_version": str,
    "namespace": str,
    "release_name": str,
    "helm_timeout": str,
    "helm_timeout_seconds": int,
    "topology_timeout": int,
    "uninstall_timeout": int,
    "helm_version": str,
    "helm_mirror": str,
    "helm_mirror_allow_http": bool,
    "helm_binary": str,
    "report_dir": str,
    "num_vcpu": Optional[int],
    "num_numa_nodes": Optional[int],
    "cells_are_numa_nodes": bool,
    "min_cell_cpus": int,
    "chart_values": dict[str, Any],
    "preflight_ignore": list[str],
    "state": str,
}, total=False)
