# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Shared by the collection's modules: none of them changes anything."""

    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
    description: Runs the same in check mode; it only reads and never reports a change.
  diff_mode:
    support: none
    description: Nothing to diff.
"""

    # the modules that talk to the cluster (through kubernetes.core's client); a fragment must carry
    # options or attributes, hence the empty options
    CLUSTER = r"""
options: {}
requirements:
  - kubernetes >= 24.2.0
  - PyYAML >= 3.11
"""
