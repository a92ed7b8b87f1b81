# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The release stage's decisions (pure); the action plugin (plugins/action/release.py) acts on them.

* ``plan.py``: what the release stage does with what preflight found installed
  (``preflight/installed.py``) and the values the chart stage built;
* ``uninstall.py``: the uninstall path's decisions (plugins/plugin_utils/uninstall.py runs them);
* ``spec.py``: the release action's options.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
