# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The release stage's view of the cluster (pure).

* ``installed.py``: the release namespace (exists, terminating, labels) and the helm release (status,
  chart, version) from helm's release Secret. The preflight module reads them in its own process
  (``gather.read_installed``) to save module starts; the role's release tasks act on the answer.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
