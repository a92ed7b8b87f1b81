# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The API client of the cluster modules (preflight, cpu_topology, target_cluster); no stage logic.

* ``auth.py``: kubernetes.core's auth options with the redaction rule of kubernetes.core >= 6.3.0
  (``RedactingModule``), and which cluster a client talks to (``describe_target``).
* ``client.py``: ``RawApi``, plain GETs and the ResourceSlice list/watch through kubernetes.core's
  client; ``KubeRequestError`` names the verb and resource of a failed request, never credentials.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
