#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: target_cluster
short_description: Say which cluster the cluster options point at
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - Builds the Kubernetes client exactly as the other modules do (kubernetes.core's resolution of the
    options and of C(K8S_AUTH_*)), asks the API server for its version and returns the API server
    URL, the context and the kubeconfig the client was built from.
  - A play that changes a cluster through this collection (the role, or the other modules) can call it
    first and stop unless the options point at the cluster meant; the role itself names the cluster in
    its release task (from M(kubevirtci.dra_cpu.preflight)'s result).
  - Fails with what could not be read and why (the client cannot be built from the kubeconfig or
    context named, the credentials were rejected, the API server cannot be reached, permission denied).
  - Only reads; never reports a change. Secret fields of a kubeconfig given as a dict (tokens,
    passwords, client keys, auth-provider and exec credentials) are hidden from the result; the rest
    of it is not.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - kubevirtci.dra_cpu.read_only
  - kubevirtci.dra_cpu.read_only.cluster
"""

EXAMPLES = r"""
- name: Say which cluster the play is about to change
  kubevirtci.dra_cpu.target_cluster:
    kubeconfig: ~/.kube/staging
  register: target

- name: Change the staging cluster only
  ansible.builtin.assert:
    that: target.context == 'staging'
    fail_msg: "these options point at {{ target.server }} (context {{ target.context }}), not staging"
"""

RETURN = r"""
server:
  description: The API server URL the client talks to.
  returned: success
  type: str
  sample: https://127.0.0.1:6443
context:
  description: The kubeconfig context used (the configured one, else the kubeconfig's current-context); null without a kubeconfig.
  returned: success
  type: str
  sample: kubernetes-admin@kubernetes
kubeconfig:
  description: The kubeconfig file used, or how the client was configured otherwise.
  returned: success
  type: str
  sample: /home/user/.kube/config
server_version:
  description: The API server's C(gitVersion).
  returned: success
  type: str
  sample: v1.36.3
"""

from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import RedactingModule
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.runner import exit_module
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.target import argument_spec, run_target


def main():
    # the run is module_utils/k8s/target.py, shared with the action plugin (plugins/action/target_cluster.py)
    module = AnsibleK8SModule(module_class=RedactingModule, argument_spec=argument_spec(), supports_check_mode=True)
    exit_module(module, run_target(module.params, module.check_mode, module, get_api_client))


if __name__ == "__main__":
    main()
