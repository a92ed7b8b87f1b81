# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The two untyped shapes the collection accepts from outside, named once.

``K8sObject`` is a Kubernetes object (or list) as the API server returns it; ``ModuleParams`` the
options of a module or action plugin as Ansible hands them over, after its argument spec checked
them. Every other shape that crosses a boundary is a ``TypedDict`` or a dataclass of its stage.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict

K8sObject = Dict[str, Any]
ModuleParams = Dict[str, Any]
