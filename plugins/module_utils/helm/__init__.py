# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The helm stage: ``find.py`` which helm the role runs, ``download.py`` fetching, verifying and
unpacking a helm release, ``checksum.py`` the sha256 it must have, ``schema.py`` which helm validates
a chart's values.schema.json.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
