# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The validate stage: every input checked and normalised once, before any cluster I/O.

* ``settings.py``: ``validate_inputs`` (the checks no argument spec can express, the normalised
  ``settings``), the validate module's argument spec and ``chart_values_for``;
* ``checks.py``: which role variable each option is, the wording of every input error, one-value
  checks (Go durations, counts, chart references);
* ``kubeconfig.py``: the kubeconfig file and context exist (reads context names only);
* ``cpuset.py``, ``versions.py``: the syntax of cpusets (``dra_cpu_reserved_cpus``) and of
  versions (chart, helm, Kubernetes, container runtimes). They live here because they define what
  an input may be; the later stages parse with the same functions (preflight: reserved CPUs against
  a node, the server and runtime versions; chart and helm: chart and helm versions; topology: the
  cpusets of the fact and the sizing rule), so a value validate accepted is read the same there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
