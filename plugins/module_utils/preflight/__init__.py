# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The preflight stage: the cluster's prerequisites, one finding per check and node.

``gather.py`` the reads and the order of the checks; ``rules.py`` the cluster-wide checks, the ignore
list and the summary; ``node_allocatable.py`` the KEP-5517 gate checks; ``nodes.py`` the per-node checks
and where the DaemonSet runs; ``report.py`` the lines the role prints; ``installed.py`` what is installed
already; ``types.py`` the shapes; ``run.py`` one run of the module.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
