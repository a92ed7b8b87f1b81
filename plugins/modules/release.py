#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
# The documentation and options of kubevirtci.dra_cpu.release. The work is done by its action plugin
# (plugins/action/release.py) on the controller; this module only refuses to run on its own.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: release
short_description: Install, upgrade, leave alone or uninstall the dra-driver-cpu helm release and its namespace
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - The role's release stage in one task. From what is installed (O(installed), as
    M(kubevirtci.dra_cpu.preflight) returns it, the one reader of it) and what is wanted
    (O(chart), the chart version read and the values mapped onto it), it decides the plan and carries
    it out.
  - "The namespace: while it is being deleted, waits until it is gone (up to O(namespace_wait_seconds)).
    When it lacks one of O(namespace_labels), sets them (kubernetes.core.k8s); O(owner_label) only when
    this run creates the namespace."
  - "A release stuck in C(pending-install)/C(pending-upgrade)/C(pending-rollback) (an interrupted helm
    run): fails naming C(-e dra_cpu_helm_recover=true) and the helm command that clears it, or, with
    O(recover), uninstalls a C(pending-install) release (kubernetes.core.helm) or runs
    C(helm rollback --wait) first."
  - "The release: when it is C(deployed) with the same chart version and the same values (the sha256 of
    their canonical JSON against the one of the values helm stored), nothing is run at all. Otherwise
    kubernetes.core.helm installs or upgrades it, with C(wait)."
  - A no-op run starts no module process and writes nothing. This is an action plugin; the modules it
    needs (kubernetes.core.k8s_info, k8s, helm, ansible.builtin.command for the rollback) are
    run through the task's connection.
  - "With O(state=absent) it uninstalls instead, removing only what the collection installed: the release
    (kubernetes.core.helm, C(wait)) when there is one, then waits up to O(uninstall_timeout) seconds until
    the driver's ResourceSlices are gone (the kubelet deletes them; they are only read, and only after this
    run removed the release); the namespace (kubernetes.core.k8s, C(wait)) only when it carries
    O(owner_label) and holds no other helm release (C(other_releases) of O(installed))."
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - kubevirtci.dra_cpu.read_only.cluster
options:
  state:
    description: V(present) installs, upgrades or leaves the release alone; V(absent) uninstalls it.
    type: str
    choices: [present, absent]
    default: present
  release_name:
    description: The helm release.
    type: str
    required: true
  namespace:
    description: The release's namespace.
    type: str
    required: true
  chart_ref:
    description:
      - The chart reference given to kubernetes.core.helm (C(oci://...), a repository chart or a local path).
      - Required with O(state=present).
    type: str
    default: ''
  chart_version:
    description: The chart version asked for (kubernetes.core.helm's C(chart_version)); empty for the newest.
    type: str
    default: ''
  chart:
    description:
      - What the chart stage read. C(release_values) (required) the values mapped onto the chart;
        C(version) the chart's own version (C(Chart.yaml)), compared with the release's (empty or missing
        falls back to O(chart_version); neither known never skips helm); C(image) the image the chart
        will run (for the report); C(report) its report lines (a list, or one line), added to RV(report).
      - Required with O(state=present).
    type: dict
    default: {}
  installed:
    description:
      - What is installed already, as M(kubevirtci.dra_cpu.preflight)'s RV(kubevirtci.dra_cpu.preflight#module:installed).
        The one reading of it, for both states - when it is not C(readable) (or empty) the task fails
        with preflight's error before it changes anything; nothing is read again here.
    type: dict
    default: {}
  node_affinity:
    description: Preflight's node affinity, merged into the values as C(affinity) when not empty.
    type: dict
    default: {}
  namespace_labels:
    description: The labels the namespace must carry (the role's Pod Security labels).
    type: dict
    default: {}
  owner_label:
    description:
      - Labels set only when this run creates the namespace (the role's owner label). With O(state=absent)
        the namespace is deleted only when it carries them.
    type: dict
    default: {}
  helm:
    description:
      - The helm stage's result. C(path) the helm binary for kubernetes.core.helm (C(binary_path); empty
        for helm on C(PATH)), C(cmd) the command for C(helm rollback), C(missing) true when there is no
        helm yet (check mode before the download), and then nothing is compared.
    type: dict
    default: {}
  recover:
    description: Recover a release stuck in a C(pending-*) state instead of failing.
    type: bool
    default: false
  timeout:
    description: helm's C(--timeout) (a Go duration) for the install, upgrade, uninstall and rollback.
    type: str
    default: 5m0s
  uninstall_timeout:
    description: With O(state=absent), seconds to wait for the release, the driver's ResourceSlices and the namespace to go.
    type: int
    default: 120
  namespace_wait_seconds:
    description: How long to wait for a namespace being deleted to be gone.
    type: int
    default: 300
  plain_http:
    description: Fetch the chart over plain HTTP (kubernetes.core.helm's C(plain_http)).
    type: bool
    default: false
  image:
    description: The image asked for (the role's C(dra_cpu_image)); only names the image's source in RV(report).
    type: str
    default: ''
  chart_values:
    description: The user's chart values (C(dra_cpu_chart_values)); only whether they set C(image) is read, for RV(report).
    type: dict
    default: {}
attributes:
  action:
    support: full
    description: The work is done by an action plugin on the controller.
  check_mode:
    support: full
    description: Reads only and says what it would do (RV(action) C(would install), C(would upgrade), C(would uninstall ...), ...).
  diff_mode:
    support: none
    description: Nothing to diff.
notes:
  - Give the cluster options through C(module_defaults) (C(group/kubevirtci.dra_cpu.dra_cpu)); they are
    passed on to kubernetes.core's modules as given, so kubernetes.core resolves the rest (C(K8S_AUTH_*)).
  - The values helm stored are never returned, only compared through their digest.
seealso:
  - module: kubevirtci.dra_cpu.preflight
  - module: kubernetes.core.helm
"""

EXAMPLES = r"""
- name: Install or upgrade release dra-driver-cpu
  kubevirtci.dra_cpu.release:
    release_name: dra-driver-cpu
    namespace: dra-driver-cpu
    chart_ref: oci://registry.k8s.io/dra-driver-cpu/charts/dra-driver-cpu
    chart_version: 0.3.0
    chart:
      release_values:
        driverConfig:
          reservedCPUs: "0-1"
      version: 0.3.0
    installed: "{{ preflight.installed }}"
    namespace_labels:
      pod-security.kubernetes.io/enforce: privileged
  register: release

- name: Show what it did
  ansible.builtin.debug:
    msg: "{{ release.report }}"

- name: Uninstall it again (only what the collection installed)
  kubevirtci.dra_cpu.release:
    state: absent
    release_name: dra-driver-cpu
    namespace: dra-driver-cpu
    installed: "{{ preflight.installed }}"
    owner_label:
      app.kubernetes.io/managed-by: kubevirtci.dra_cpu
"""

RETURN = r"""
action:
  description:
    - What was done to the release; with a recovery first, C(recovered (uninstall) + ) or
      C(recovered (rollback) + ) before it (C(would recover ...) in check mode).
    - One of V(unchanged), V(installed), V(upgraded), V(would install), V(would upgrade), V(would install or upgrade)
      (check mode without helm).
    - With O(state=absent) one of V(uninstalled, the driver's ResourceSlices gone), V(not installed),
      V(would uninstall revision N) (check mode), V(not read (helm is not available yet in check mode)).
  returned: success
  type: str
  sample: unchanged
revision:
  description: The release's revision after the run (null when there is none, or in check mode before the install).
  returned: success, with O(state=present)
  type: int
  sample: 1
values:
  description: The values given (or that would be given) to helm, preflight's node affinity included.
  returned: success, with O(state=present)
  type: dict
image:
  description: The image the release runs.
  returned: success, with O(state=present)
  type: str
  sample: registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.3.0
image_source:
  description: Where it comes from, V(dra_cpu_image), V(dra_cpu_chart_values) or V(the chart's default).
  returned: success, with O(state=present)
  type: str
report:
  description:
    - Short lines for the log, the release line first after any namespace line, then the chart stage's
      lines with the image joined onto the first.
    - With O(state=absent) the release line, then what became of the namespace (C(deleted (created by this
      collection)), or C(left in place, ...) and why).
  returned: always
  type: list
  elements: str
  sample:
    - "release dra-driver-cpu (namespace dra-driver-cpu): unchanged, revision 1"
    - "chart 0.3.0 (values onto driverConfig.*), image (the chart's default): registry.k8s.io/dra-driver-cpu/dra-driver-cpu:v0.3.0"
plan:
  description:
    - The decision (module_utils/release/plan.py). C(namespace) (C(wait), C(labels), C(creates)),
      C(release) (the C(status), C(revision) and C(chart_version) found), C(pending), C(recover)
      (V(uninstall), V(rollback) or ''), C(fail), C(helm) (V(skip), V(install) or V(upgrade)), C(reason),
      C(values_sha256) (the digest of RV(values)).
  returned: success, with O(state=present)
  type: dict
modules:
  description: The modules started, in order ([] for a no-op run).
  returned: always
  type: list
  elements: str
  sample: []
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
except ImportError:  # pragma: no cover
    AUTH_ARG_SPEC = {}

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.release.spec import argument_spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(AUTH_ARG_SPEC), supports_check_mode=True)
    module.fail_json(msg="kubevirtci.dra_cpu.release runs as an action plugin on the controller; "
                         "it cannot be run as a module on its own")


if __name__ == "__main__":
    main()
