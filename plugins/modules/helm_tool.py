#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
# Thin module: the choice is module_utils/helm/find.py, the download module_utils/helm/download.py.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: helm_tool
short_description: Find the helm the dra_cpu role runs, or download and verify one
version_added: 0.1.0
author:
  - kubevirtci developers (!UNKNOWN)
description:
  - Chooses the helm binary the C(kubevirtci.dra_cpu.dra_cpu) role runs, in this order. O(binary)
    whatever its version; else C(helm) on E(PATH) when C(helm version --short) reports a v3 >= 3.13;
    else helm O(version) for this machine (C(os.uname()), for example C(linux-amd64)) from
    C(<cache_dir>/<version>/<os>-<arch>/helm), downloaded there when missing.
  - A download fetches C(<mirror>/helm-<version>-<os>-<arch>.tar.gz) into a temporary file, checks its
    sha256 against the pin (O(pinned_checksums) with O(checksums) over them) or, unpinned, the
    mirror's own C(.sha256sum), and only then unpacks C(<os>-<arch>/helm). A mismatch is refused and
    leaves nothing behind.
  - In check mode it downloads nothing and returns RV(missing=true) with what it would fetch.
  - Given O(schema_requirements) (what a chart's C(values.schema.json) needs, from
    M(kubevirtci.dra_cpu.chart_layout)) it fits the helm found - or O(found), an earlier result - to
    the chart, RV(helm_choice) - keeps it; replaces helm from E(PATH) too old for the schema with the
    download of O(version) (refused first when O(version) is itself too old); or fails for a too old
    O(binary). The helm it returns is the one to install the chart with.
options:
  binary:
    description:
      - Path of the helm binary to use; empty looks for helm on E(PATH), else downloads O(version).
      - Role variable C(dra_cpu_helm_binary).
    type: str
    default: ''
  version:
    description:
      - The helm release to download when no usable helm is found, V(vX.Y.Z) (the leading C(v) may
        be left out). Role variable C(dra_cpu_helm_version).
    type: str
    default: ''
  mirror:
    description:
      - Base URL serving helm release tarballs and their C(.sha256sum) files. Role variable C(dra_cpu_helm_mirror).
    type: str
    default: https://get.helm.sh
  cache_dir:
    description:
      - Downloaded helm releases are kept in a per-version directory under this one and reused.
      - Role variable C(dra_cpu_helm_cache_dir).
    type: path
    default: ~/.cache/kubevirtci.dra_cpu/helm
  checksums:
    description:
      - "sha256 of helm release tarballs, C({version: {platform: sha256}}), laid over O(pinned_checksums).
        A malformed map fails, naming C(dra_cpu_helm_checksums) and the bad value."
      - Role variable C(dra_cpu_helm_checksums).
    type: raw
    default: {}
  pinned_checksums:
    description:
      - The collection's own pins, in the same form (the role passes C(dra_cpu__helm_pinned_checksums)).
    type: raw
    default: {}
  force_download:
    description:
      - Ignore O(binary) and helm on E(PATH) and use the download of O(version) (cached or fetched).
    type: bool
    default: false
  schema_requirements:
    description:
      - What the chart's C(values.schema.json) needs from helm, M(kubevirtci.dra_cpu.chart_layout)'s
        RV(kubevirtci.dra_cpu.chart_layout#module:schema_requirements) (C(min_helm), C(misread)).
        Set, the helm found (or O(found)) is fitted to it, RV(helm_choice). Unset, nothing is fitted.
    type: dict
  found:
    description:
      - The result of an earlier call of this module (C(source), C(path), C(cmd), C(version),
        C(missing), C(report)), fitted to O(schema_requirements) instead of finding helm again.
    type: dict
  timeout:
    description: Seconds for C(helm version) and for each HTTP request of the download.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Finds helm the same way, downloads nothing and returns RV(missing=true) when it would.
  diff_mode:
    support: none
    description: Nothing to diff.
notes:
  - On a local connection the action plugin of the same name runs this in the controller's process
    (no module process); on any other connection the module runs on the target, where helm is looked for.
"""

EXAMPLES = r"""
- name: Find or download helm
  kubevirtci.dra_cpu.helm_tool:
    version: v3.22.0
    mirror: https://get.helm.sh
    cache_dir: ~/.cache/kubevirtci.dra_cpu/helm
    checksums:
      v3.22.0:
        linux-amd64: "{{ 'ab' * 32 }}"
  register: helm

- name: Uninstall with that helm
  kubernetes.core.helm:
    binary_path: "{{ helm.path | default(omit, true) }}"
    release_name: dra-driver-cpu
    release_namespace: dra-driver-cpu
    release_state: absent
  when: not helm.missing
"""

RETURN = r"""
path:
  description: The helm binary for kubernetes.core.helm's C(binary_path); empty for helm on E(PATH).
  returned: success
  type: str
  sample: /home/u/.cache/kubevirtci.dra_cpu/helm/v3.22.0/linux-amd64/helm
cmd:
  description: C(argv[0]) for helm commands (C(helm) for helm on E(PATH)).
  returned: success
  type: str
  sample: helm
version:
  description: The helm version, C(X.Y.Z) without C(v); empty when it is unknown.
  returned: success
  type: str
  sample: 3.22.0
source:
  description: V(binary) (O(binary)), V(path) (helm on E(PATH)) or V(download) (O(version), cached or downloaded).
  returned: success
  type: str
  sample: path
missing:
  description: True only in check mode when helm would have to be downloaded (RV(path) does not exist yet).
  returned: success
  type: bool
  sample: false
helm_choice:
  description: Whether the helm found validates the chart's values schema (module_utils/helm/schema.py).
  returned: when O(schema_requirements) is set
  type: dict
  contains:
    action:
      description:
        - V(use) it, V(download) O(version) instead (helm on E(PATH) is too old; the result is then
          that download), or V(fail) (the module fails with RV(helm_choice.message)).
      type: str
    message:
      description: Why helm is replaced or refused; '' for V(use).
      type: str
    warning:
      description: Set when the helm's version is unknown and the chart needs a newer one (also a task warning).
      type: str
report:
  description:
    - Short lines saying which helm is used and how it was verified (also on a failed download).
    - "When fitted, O(found)'s lines, then C(helm: <why helm from PATH is replaced>) and the download's,
      or C(warning: ...) when RV(helm_choice.warning) is set."
  returned: always
  type: list
  elements: str
  sample: ["helm: v3.18.4 from PATH"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.find import argument_spec, helm_tool


def main():
    # the role's runs on localhost take the action plugin of the same name (no module process);
    # this module runs where the connection is not local
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)

    def run(argv):
        try:
            rc, out, _err = module.run_command(argv, handle_exceptions=False)
        except (OSError, IOError) as exc:
            return 127, str(exc)
        return rc, out

    result = helm_tool(module.params, module.check_mode, run, which=module.get_bin_path)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
