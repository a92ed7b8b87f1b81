# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The validate stage: ``settings.py`` the gate and every input checked and normalised into
``types.Settings``, ``checks.py`` the wording of every input error and one-value checks,
``kubeconfig.py`` the kubeconfig and context exist.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
