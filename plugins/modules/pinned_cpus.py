#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: pinned_cpus
short_description: Say which CPUs dra-driver-cpu pinned a pod's containers to
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - The Kubernetes API does not show which CPUs a container got. dra-driver-cpu pins every container
    through the runtime's NRI and logs, for a container with claims, C("guaranteed CPUs found") with the
    pod, the container and the cpuset (at log verbosity 2 or more; its charts run 4).
  - This module finds the node of O(pod), the driver pod on that node (a pod of the DaemonSets of the helm
    release O(release_name) in O(driver_namespace)), reads its last O(log_lines) log lines and returns the
    cpuset logged for each container of the pod.
  - Nothing logged (a lower verbosity, a rotated log, a driver that does not pin) is not an error
    (RV(found) is false). A pod not scheduled, or no driver pod on its node, fails; so does a read that
    fails (what was read, then why, such as permission denied or an API server that cannot be reached).
  - The verify playbook reads the same for its test pod; this module answers it for any pod, such as a
    running VM's virt-launcher pod.
  - Only reads; never reports a change.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - kubevirtci.dra_cpu.read_only
  - kubevirtci.dra_cpu.read_only.cluster
options:
  pod:
    description: The pod's name.
    type: str
    required: true
  namespace:
    description: The pod's namespace.
    type: str
    default: default
  driver_namespace:
    description: The namespace the driver is installed in.
    type: str
    default: dra-driver-cpu
  release_name:
    description: The driver's helm release; its DaemonSets' pods are the driver pods.
    type: str
    default: dra-driver-cpu
  log_lines:
    description: How many of the driver pod's last log lines to read.
    type: int
    default: 5000
"""

EXAMPLES = r"""
- name: Find the virt-launcher pod of VMI vm1
  kubernetes.core.k8s_info:
    kind: Pod
    namespace: default
    label_selector: kubevirt.io=virt-launcher,kubevirt.io/domain=vm1
  register: launcher

- name: Which CPUs the driver pinned its containers to
  kubevirtci.dra_cpu.pinned_cpus:
    pod: "{{ launcher.resources[0].metadata.name }}"
    namespace: default
  register: pinned

- name: Show them (compute is the container that runs the VM)
  ansible.builtin.debug:
    msg: "{{ pinned.containers.compute | default('not logged by the driver') }} on {{ pinned.node }}"
"""

RETURN = r"""
node:
  description: The node the pod runs on.
  returned: always
  type: str
  sample: node01
driver_pod:
  description: The driver pod on that node whose log was read.
  returned: success
  type: str
  sample: dra-driver-cpu-x7k2p
containers:
  description: Per container of the pod with claims, the cpuset the driver pinned it to.
  returned: always
  type: dict
  sample: {compute: "2-5"}
found:
  description: Whether the driver's log names the pod (false, for example, below log verbosity 2).
  returned: always
  type: bool
  sample: true
"""

from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import RedactingModule
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.runner import exit_module
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.pinned import argument_spec, run_pinned_cpus


def main():
    # the run is module_utils/verify/pinned.py, shared with the action plugin (plugins/action/pinned_cpus.py)
    module = AnsibleK8SModule(module_class=RedactingModule, argument_spec=argument_spec(), supports_check_mode=True)
    exit_module(module, run_pinned_cpus(module.params, module.check_mode, module, get_api_client))


if __name__ == "__main__":
    main()
