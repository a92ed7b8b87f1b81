# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The validate stage: every input checked and normalised once, before any cluster I/O.

* ``settings.py``: ``validate_inputs`` (the checks no argument spec can express, the normalised
  ``settings``), the validate module's argument spec and ``chart_values_for``;
* ``checks.py``: which role variable each option is, the wording of every input error, one-value
  checks (Go durations, counts, chart references);
* ``kubeconfig.py``: the kubeconfig file and context exist (reads context names only).

The syntax of cpusets and versions, the values layout rule and the preflight check names are
``common/``'s: the later stages parse with the same functions, so a value validate accepted is read
the same there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
