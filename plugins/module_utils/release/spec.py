# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The options of kubevirtci.dra_cpu.release (its action plugin checks them, its module documents them)."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import ArgumentSpec, auth_argument_spec

# the cluster options passed on to kubernetes.core.helm / helm_info (HELM_AUTH_ARG_SPEC)
HELM_AUTH_OPTIONS = ("kubeconfig", "context", "host", "ca_cert", "validate_certs", "api_key")


def argument_spec(k8s_auth_spec: ArgumentSpec) -> ArgumentSpec:
    """The options; ``k8s_auth_spec``: kubernetes.core's ``AUTH_ARG_SPEC`` (the cluster options)."""
    spec: ArgumentSpec = dict(
        state=dict(type="str", default="present", choices=["present", "absent"]),
        release_name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
        chart_ref=dict(type="str", default=""),
        chart_version=dict(type="str", default=""),
        chart=dict(type="dict", default={}),
        uninstall_timeout=dict(type="int", default=120),
        installed=dict(type="dict", default={}),
        node_affinity=dict(type="dict", default={}),
        namespace_labels=dict(type="dict", default={}),
        owner_label=dict(type="dict", default={}),
        helm=dict(type="dict", default={}),
        recover=dict(type="bool", default=False),
        timeout=dict(type="str", default="5m0s"),
        namespace_wait_seconds=dict(type="int", default=300),
        plain_http=dict(type="bool", default=False),
        image=dict(type="str", default=""),
        chart_values=dict(type="dict", default={}, no_log=False),
    )
    spec.update(auth_argument_spec(copy.deepcopy(k8s_auth_spec)))
    return spec
