# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The verify stage's Python (roles/dra_cpu/tasks/verify.yml: one call of kubevirtci.dra_cpu.verify):

* ``run.py``: the module's run, the order of the API calls (topology, create, wait, read, delete in a
  ``finally`` path);
* ``sizing.py``: the VMI verify stands for (cores, sockets, threads, IO threads, emulator thread) and its
  hostCPUs by KubeVirt's formula, by default the largest VM that fits; contradicting sizes refused;
* ``manifests.py``: the claim ``<vmi>-cpu`` and pod ``virt-launcher-<vmi>`` as virt-controller renders them
  (alpha: CPUs mirrored; KEP-5517: claim-only), individual mode's escape-hatch claim, the container's script;
* ``objects.py``: the test objects through the API (get, delete, wait until gone);
* ``readout.py``: what the container printed, judged as virt-launcher reads it (``DRA_CPUSET_*``, the
  container's own CPUs and their NUMA node or socket; the KEP-5304 metadata reported);
* ``node_allocatable.py``: KEP-5517's claim status and accounting probe;
* ``report.py``: the report lines and the failure messages;
* ``pinned.py``: which CPUs the driver pinned a pod's containers to, from the driver's own log on the
  pod's node (also the pinned_cpus module).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
