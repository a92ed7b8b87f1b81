# SPDX-License-Identifier: Apache-2.0
"""Filter kubevirtci.dra_cpu.helm_checksum: the role's choice of the sha256 for a helm tarball.

Thin: the logic is plugins/module_utils/helm/checksum.py (unit-tested there).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.checksum import (
    choose_checksum, merge_checksums, mismatch_got)


def helm_checksum(checksums, version, platform, pinned=None):
    """``{pinned, sha256}`` for helm ``version`` on ``platform`` (``pinned`` laid under ``checksums``)."""
    try:
        return choose_checksum(merge_checksums(pinned, checksums), version, platform)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def helm_checksum_got(message):
    """The sha256 a failed get_url computed, from its message ('' when it is not a mismatch)."""
    return mismatch_got(message) or ""


class FilterModule(object):
    def filters(self):
        return {"helm_checksum": helm_checksum, "helm_checksum_got": helm_checksum_got}
