# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The preflight stage: the cluster's prerequisites, one finding per check and node.

* ``gather.py``: the reads (version, /metrics, /apis, nodes, /configz, what is installed) and the
  order of the checks;
* ``rules.py``: the finding shape, the cluster-wide checks, the ignore list and the summary;
* ``node_allocatable.py``: with ``dra_cpu_node_allocatable_mapping``, the ``DRANodeAllocatableResources``
  gate of the API server (metric) and of every driver node's kubelet (``/configz``);
* ``nodes.py``: the per-node checks and where the DaemonSet runs (keeping the driver off nodes);
* ``report.py``: the lines the role prints;
* ``installed.py``: what is installed already: the release namespace (exists, terminating, labels)
  and the helm release (status, chart, version, values digest) from helm's release Secret. Read in
  preflight's own process (``gather.read_installed``) to save module starts; the release stage acts
  on the answer (and digests the values it is about to give helm the same way).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
