# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The helm stage: which helm, its download, and which helm a chart's schema needs.

* ``find.py``: which helm the role runs (``dra_cpu_helm_binary``, helm on PATH, the cached or a
  downloaded ``dra_cpu_helm_version``): the helm stage, which the helm_tool module and action call.
* ``download.py``: fetching, verifying and unpacking a helm release into the cache.
* ``checksum.py``: the sha256 a downloaded helm tarball must have (pinned, else the mirror's).
* ``schema.py``: which helm validates a chart's values.schema.json (``schema_requirements``, which
  the chart_layout module returns) and whether the role uses the helm it found, downloads another or
  fails (``helm_choice``, which the chart_layout module returns). The requirements are read from the
  chart, but the decision is about helm, so it is here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
