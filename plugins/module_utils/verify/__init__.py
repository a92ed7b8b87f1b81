# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The verify entry point's Python (roles/dra_cpu/tasks/verify.yml):

* ``pinned.py``: which CPUs the driver pinned a pod's containers to, from the driver's own log on the
  pod's node (the pinned_cpus module).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
