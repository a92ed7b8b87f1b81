# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The chart stage: ``stage.py`` the chart_layout result (fetch or read the chart, the cached layout,
the mapping, the helm-vs-schema decision), ``fetch.py`` ``helm pull`` and the layout cache by chart
digest, ``layout.py`` the chart's keys and the release values (pure).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
