# SPDX-License-Identifier: Apache-2.0
"""Authentication options of the collection's cluster modules.

They are kubernetes.core's (``AUTH_ARG_SPEC``), with one difference kept across kubernetes.core
releases: ``kubeconfig`` is always ``no_log``. It may be a dict holding a whole kubeconfig, tokens
and keys included, and newer kubernetes.core releases dropped ``no_log`` from it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

SECRET_OPTIONS = ("kubeconfig", "api_key", "password")


def auth_argument_spec(base):
    """A copy of kubernetes.core's ``AUTH_ARG_SPEC`` (``base``) with every secret option no_log."""
    spec = copy.deepcopy(base)
    for name in SECRET_OPTIONS:
        if name in spec:
            spec[name]["no_log"] = True
    return spec
