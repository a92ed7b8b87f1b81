# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The verify stage's Python (roles/dra_cpu/tasks/verify.yml: one call of kubevirtci.dra_cpu.verify):

* ``run.py``: the module's run, the order of the API calls (topology, create, wait, read, delete in a
  ``finally`` path);
* ``sizing.py``: the claim's size (a VM by KubeVirt's formula, an explicit size, or the topology's largest
  NUMA-aligned claim) and the refusal of contradicting sizes;
* ``manifests.py``: the claim and the pod as KubeVirt renders them, the NUMA attribute of an
  individual-mode claim, the container's script;
* ``readout.py``: what the container printed, judged as virt-launcher needs it;
* ``report.py``: the report lines and the failure messages;
* ``pinned.py``: which CPUs the driver pinned a pod's containers to, from the driver's own log on the
  pod's node (also the pinned_cpus module).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
