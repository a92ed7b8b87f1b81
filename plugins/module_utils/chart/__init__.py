# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The chart stage: which values the chart at hand has, and the settings mapped onto them.

* ``stage.py``: the chart_layout module's whole result (module and action plugin): fetch or read
  the chart, the cached layout, the mapping, the helm-vs-schema decision;
* ``fetch.py``: ``helm pull`` (argv, environment, its errors classified into the role's message)
  and the layout cache by chart digest (the only I/O here besides stage.py reading the chart);
* ``layout.py``: the chart's values keys and schema -> the layout, the release values, the image
  (pure).

The version-number rule for the values layout (the fallback when the chart cannot be read) and the
deep merge are ``common/chart_values.py``: validate and preflight use the same rule.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
