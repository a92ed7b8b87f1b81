# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The run's JSON reports in ``dra_cpu_report_dir`` (CI lanes: ``$ARTIFACTS``).

Owns: the file names and how a report is written (the directory made when missing, the file
replaced atomically so a lane's artifacts never hold half a report). What goes into each report is
the caller's: preflight writes its findings, cpu_topology the topology fact or, on a failure, the
driver's ResourceSlices and pods. Nothing here talks to a cluster.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

PREFLIGHT = "dra-cpu-preflight.json"
TOPOLOGY = "dra-cpu-topology.json"
FAILURE = "dra-cpu-failure.json"


def write_report(report_dir: str, name: str, data: Mapping[str, Any]) -> str | None:
    """Write ``data`` as JSON to ``report_dir/name``; returns the path, or None without a directory.

    The directory is made when missing. The file is written beside its final name and renamed
    over it, so a reader sees the old report or the new one.
    """
    if not report_dir:
        return None
    os.makedirs(report_dir, exist_ok=True)
    path = os.path.join(report_dir, name)
    fd, tmp = tempfile.mkstemp(prefix="." + name + ".", dir=report_dir)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=True, default=str)
            fh.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
