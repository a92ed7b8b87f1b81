# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The chart's values, named once: ``ChartValues`` is a values document as the chart's YAML holds it
(values.yaml, the role's overrides, what helm is given), open like the chart's own schema.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict

ChartValues = Dict[str, Any]
