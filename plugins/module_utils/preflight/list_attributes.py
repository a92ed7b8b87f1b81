# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Preflight rule for PCIe roots as a list attribute (``dra_cpu_expose_pcie_roots``).

Owns the ``list_attributes_gate`` finding, asked only when the setting is on: the API server (its
``kubernetes_feature_enabled`` metric, read once by gather.py as for ``DRAConsumableCapacity``) must
run with ``DRAListTypeAttributes`` (KEP-5491), or it drops the driver's
``resource.kubernetes.io/pcieRoot`` list value and refuses the slice that carried it. Pure. Upstream
facts: docs/upstream.md ("PCIe roots").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import (
    SCHEDULER_LIST_ATTRIBUTES_MIN as SCHEDULER_MIN,
    parse_kube_version,
    scheduler_matches_lists,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import Finding
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.rules import (
    WARNING,
    SettingGate,
    check_setting_gate,
    finding,
)

CHECK = "list_attributes_gate"
GATE = "DRAListTypeAttributes"
VARIABLE = "dra_cpu_expose_pcie_roots"
ATTRIBUTE = "resource.kubernetes.io/pcieRoot"
REQUIRED = "%s enabled" % GATE
# what breaks without the gate (the field is alpha, k8s.io/api resource/v1 DeviceAttribute.StringValues)
BREAKS = ("without it the API server drops the list value of %s that the driver publishes on each CPU "
          "device and refuses the driver's ResourceSlices (an attribute left without a value), so the "
          "node's CPU devices are not published and no claim can match a CPU device's PCIe roots "
          "(matchAttribute)" % ATTRIBUTE)
_OFF = "or install without PCIe roots (%s: false)" % VARIABLE
SCHEDULER_CHECK = "list_attributes_scheduler"
FIX = ("start kube-apiserver and kube-scheduler with --feature-gates=%s=true (alpha, off by default in "
       "Kubernetes 1.36), %s" % (GATE, _OFF))


GATE_RULE = SettingGate(
    check=CHECK, gate=GATE, variable=VARIABLE, tails=("; " + BREAKS, "; " + BREAKS, ": " + BREAKS),
    fixes=("grant 'get' on the non-resource URL /metrics to this user, %s" % _OFF,
           "use Kubernetes 1.36 or newer with the gate enabled, %s" % _OFF, FIX))


def check_api_server(metrics_text: str | None, error: str | None = None) -> list[Finding]:
    """The API server must report ``DRAListTypeAttributes`` enabled (rules.check_setting_gate)."""
    return check_setting_gate(GATE_RULE, metrics_text, error)


def check_scheduler(version: str | K8sObject) -> list[Finding]:
    """Kubernetes 1.36's kube-scheduler does not pass ``ListTypeAttributes`` to its allocator, so it compares a
    list attribute as one value: a claim that aligns a CPU device with another device on
    ``resource.kubernetes.io/pcieRoot`` (VEP 300) is never allocated there. Claims without that
    constraint (KubeVirt's CPUsWithDRA) are not affected, so this is a warning."""
    if scheduler_matches_lists(version) is not False:
        return []   # server_version reports a version that cannot be read
    seen = "%d.%d.%d" % parse_kube_version(version).release
    return [finding(
        SCHEDULER_CHECK, WARNING,
        "%s: true on Kubernetes %s: its kube-scheduler compares the list attribute %s as one value (its "
        "allocator is not given ListTypeAttributes), so a claim that aligns CPUs with a device on the PCIe "
        "root (matchAttribute, VEP 300) is not allocated; claims without that constraint are not affected"
        % (VARIABLE, seen, ATTRIBUTE),
        observed=seen, required=">= %s for claims aligned on %s" % (SCHEDULER_MIN, ATTRIBUTE),
        fix="use Kubernetes %s or newer for PCIe-aligned claims" % SCHEDULER_MIN)]
