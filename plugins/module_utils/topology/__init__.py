# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The topology stage: the driver's ResourceSlices -> the ``dra_cpu_topology`` fact, sizing, report.

* ``run.py``: one cpu_topology run (targets, the wait, the fact, the checks, the report files);
* ``driver_pods.py``: the release's DaemonSets, their pods and nodes;
* ``waiter.py``: one list, then one watch of the slices until every target pool is complete;
* ``slice_pools.py``: slices -> pools, the generation that counts, completeness, progress;
* ``fact.py``: complete pools -> per-node, per-cell topology and the fact;
* ``types.py``: the shapes (pool, cell, node, the detailed topology, the fact, a sizing problem);
* ``node_allocatable.py``: KEP-5517 ``nodeAllocatableResources`` in the devices, the fact's
  ``node_allocatable_mapping``, its check against the release and the report line;
* ``claim_limits.py``: the API's 32 devices per claim -> the largest claim per cell and node;
* ``sizing.py``: the kubevirtci sizing rule and ``min_cell_cpus`` against a topology;
* ``table.py``: the per-cell table (cpu_topology's ``summary``);
* ``pod_diagnostics.py``: a pending node's driver pod state and logs -> the timeout message;
* ``reports.py``: what cpu_topology writes to ``report_dir`` (the fact; on a failure slices, pods),
  through ``common/report_files.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
