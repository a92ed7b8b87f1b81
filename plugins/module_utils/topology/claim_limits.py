# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""How many CPUs one ResourceClaim can really be allocated: the Kubernetes API's device limit.

Owns the limit on the devices of one claim (``CLAIM_DEVICE_LIMIT``) and the largest claims a node's
cells allow under it (``largest_claims``): in grouped mode the largest device's capacity (a claim is one
device), in individual mode the largest cell and the whole node, each cut to the limit. fact.py puts
the numbers into the fact, table.py words them. Pure.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

# k8s.io/api resource/v1 AllocationResultsMaxSize = 32: "the maximum number of entries in
# allocation.devices.results", i.e. of devices allocated to one claim. The scheduler refuses a
# larger request ("number of requested devices 78 exceeds the claim limit of 32").
CLAIM_DEVICE_LIMIT = 32


def _capped(cpus: int) -> int:
    """A count of CPU devices cut to what one claim's allocation can hold."""
    return min(cpus, CLAIM_DEVICE_LIMIT)


def largest_claims(cells: list[int], node_cpus: int, one_device_per_cpu: bool) -> tuple[int, int]:
    """``(in_one_cell, on_the_node)``: the most CPUs one claim can get on one node, from its cells'
    CPUs and their sum (``one_device_per_cpu``: individual mode); ``(0, 0)`` without cells."""
    cells = list(cells)
    if not cells:
        return 0, 0
    largest_cell = max(cells)
    if not one_device_per_cpu:
        return largest_cell, largest_cell
    return _capped(largest_cell), _capped(node_cpus)
