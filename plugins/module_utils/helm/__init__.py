# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The helm stage's decisions (pure).

* ``checksum.py``: the sha256 a downloaded helm tarball must have (pinned, else the mirror's); the
  ``helm_checksum`` filter calls it.
* ``schema.py``: which helm validates a chart's values.schema.json (``schema_requirements``, which
  the chart_layout module returns) and whether the role uses the helm it found, downloads another or
  fails (``helm_choice``, through the ``helm_choice`` filter). The requirements are read from the
  chart, but the decision is about helm, so it is here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
