# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The release stage's decisions (pure): ``plan.py`` install or upgrade, ``uninstall.py`` uninstall,
``spec.py`` the release action's options; plugins/action/release.py acts on them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
