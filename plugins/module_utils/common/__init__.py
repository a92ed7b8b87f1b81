# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""What several stages share, below all of them (pure; imports no stage and not ``k8s/``).

The stage packages import only earlier stages, ``k8s/`` and this package
(tests/unit/plugins/module_utils/test_import_layers.py), so what two of them read lives here:

* ``versions.py``: the syntax of versions (chart, helm, Kubernetes, container runtimes): validate
  accepts them, helm, chart and preflight compare them;
* ``cpuset.py``: the syntax of cpusets (``dra_cpu_reserved_cpus``; a node's CPUs in the topology);
* ``chart_values.py``: the driver settings the chart's values carry, the version-number rule for
  the values layout (validate's provisional values, the chart stage's fallback, whether preflight
  can keep the driver off a node by affinity) and the deep merge;
* ``preflight_checks.py``: the check names ``dra_cpu_preflight_ignore`` may list;
* ``report_files.py``: the report files in ``dra_cpu_report_dir`` (preflight and topology write
  them) and their atomic write;
* ``kubevirt_sizes.py``: KubeVirt's claim size (hostCPUs = vCPUs + IO threads + emulator-thread
  CPUs) and the largest VM a claim holds (topology words its largest claim with it; a claim sized
  for a VM reads it).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
