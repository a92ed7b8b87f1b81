# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The chart stage in one call, ``chart_result``: the chart got (``fetch.py``), read or taken from the
cache, the settings mapped onto it (``layout.py``) and what its values.schema.json needs from helm
(``helm/schema.py`` ``schema_requirements``, which the helm stage fits its helm to). It pulls with the
helm the helm stage found and finds none itself. The chart_layout module and its action plugin both
call it.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
import os
import tarfile
from collections.abc import Callable
from typing import Any, cast

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart import fetch as cf
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart import layout as cl
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common import chart_values as cv
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.helm.schema import schema_requirements
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import ArgumentSpec
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core
    yaml = None  # type: ignore[assignment]  # no PyYAML on the target: the chart stage says so

FILES = ("Chart.yaml", "values.yaml", "values.schema.json")


def argument_spec() -> ArgumentSpec:
    """The typed options of kubevirtci.dra_cpu.chart_layout (module and action plugin)."""
    return dict(
        path=dict(type="path", default=""),
        chart=dict(type="str", default=""),
        chart_version=dict(type="str", default=""),
        reserved_cpus=dict(type="str", default=""),
        group_by=dict(type="str", default=""),
        cpu_device_mode=dict(type="str", default="grouped", choices=["grouped", "individual"]),
        node_allocatable_mapping=dict(type="bool", default=False),
        expose_pcie_roots=dict(type="bool", default=False),
        image=dict(type="str", default=""),
        chart_values=dict(type="dict", default={}),
        helm=dict(type="str"),
        plain_http=dict(type="bool", default=False),
        ca_file=dict(type="path", default=""),
        cache_dir=dict(type="path", default=""),
    )


class ChartReadError(ValueError):
    """The chart's files cannot be read or parsed."""


def _chart_dir(path: str) -> str:
    """The directory holding Chart.yaml: ``path`` itself or its only subdirectory (helm pull --untar)."""
    if os.path.isfile(os.path.join(path, "Chart.yaml")):
        return path
    subs = [os.path.join(path, d) for d in sorted(os.listdir(path))
            if os.path.isfile(os.path.join(path, d, "Chart.yaml"))]
    if len(subs) != 1:
        raise ValueError("%s holds no single chart" % path)
    return subs[0]


def read_chart(path: str) -> dict[str, str | None]:
    """{file name: text or None} from a chart directory or .tgz."""
    found: dict[str, str | None] = dict((name, None) for name in FILES)
    if os.path.isdir(path):
        top = _chart_dir(path)
        for name in FILES:
            full = os.path.join(top, name)
            if os.path.isfile(full):
                with open(full) as fh:
                    found[name] = fh.read()
        return found
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if len(parts) == 2 and parts[1] in FILES and member.isfile():
                data = tar.extractfile(member)
                if data is not None:  # a regular file always has one
                    found[parts[1]] = data.read().decode("utf-8")
    return found


def parse_chart(path: str) -> dict[str, Any]:
    """The cacheable facts of the chart at ``path``: {metadata, image_defaults, layout,
    schema_requirements} (the layout without the chart reference, which is added on use)."""
    try:
        files = read_chart(path)
        if files["Chart.yaml"] is None:
            raise ValueError("no Chart.yaml")
        metadata = yaml.safe_load(files["Chart.yaml"]) or {}
        defaults = yaml.safe_load(files["values.yaml"] or "") or {}
        schema = json.loads(files["values.schema.json"]) if files["values.schema.json"] else None
    except (OSError, IOError, ValueError, tarfile.TarError, yaml.YAMLError) as exc:
        raise ChartReadError(str(exc))
    if not isinstance(metadata, dict) or not isinstance(defaults, dict):
        raise ChartReadError("Chart.yaml or values.yaml is not a mapping")
    image = defaults.get("image")
    return {
        "metadata": dict((k, str(metadata[k])) for k in ("name", "version", "appVersion") if metadata.get(k)),
        "image_defaults": image if isinstance(image, dict) else {},
        "layout": cl.chart_layout(metadata, defaults, schema, ""),
        "schema_requirements": schema_requirements(schema),
    }


def _entry(p: ModuleParams, run: Callable[..., tuple[int, str, str]],
           check_mode: bool) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(entry or None, facts about where it came from). Raises FetchError / ChartReadError."""
    where = {"source": "fallback", "digest": "", "cache": ""}
    if p["helm"] is None:  # the options before the module fetched: path or the fallback
        if not p["path"]:
            return None, where
        where["source"] = "path"
        return parse_chart(p["path"]), where
    local = p["path"] or (os.path.expanduser(p["chart"]) if cf.is_local(p["chart"]) else "")
    if local:
        where["source"] = "local"
        return parse_chart(local), where
    if not p["helm"]:
        return None, where
    pulled = cf.fetch_chart(run, p["helm"], p["chart"], p["chart_version"], p["plain_http"], p["ca_file"])
    try:
        where.update(source="pulled", digest=pulled.digest)
        entry = cf.cache_read(p["cache_dir"], pulled.digest)
        if entry is not None:
            where["cache"] = "hit"
            return entry, where
        entry = parse_chart(pulled.tgz)
        if not check_mode and cf.cache_write(p["cache_dir"], pulled.digest, entry):
            where["cache"] = "written"
        return entry, where
    finally:
        pulled.cleanup()


def chart_result(params: ModuleParams, run: Callable[..., tuple[int, str, str]] = cf.run_subprocess,
                 check_mode: bool = False) -> dict[str, Any]:
    """The module's result for checked ``params`` (``failed`` + ``msg`` when it fails)."""
    p = params
    try:
        entry, where = _entry(p, run, check_mode)
    except cf.FetchError as exc:
        return {"failed": True, "msg": str(exc)}
    except ChartReadError as exc:
        shown = p["path"] or p["chart"]
        return {"failed": True, "msg": "cannot read chart %s %s at %s: %s"
                % (p["chart"], p["chart_version"], shown, exc)}
    if entry is None:
        layout = cl.fallback_layout(p["chart_version"], p["chart"])
        metadata, image_defaults, requirements = {}, {}, None
    else:
        metadata, image_defaults = entry["metadata"], entry["image_defaults"]
        requirements = entry["schema_requirements"]
        layout = cast(cl.ChartLayout, dict(entry["layout"], chart=cl.chart_label(metadata, p["chart"])))
    version = str(metadata.get("version") or p["chart_version"] or "")
    result = {
        "changed": False,
        "layout": layout,
        "version": version,
        "app_version": str(metadata.get("appVersion") or ""),
        "source": where["source"],
        "digest": where["digest"],
        "cache": where["cache"],
    }
    if requirements is not None:
        result["schema_requirements"] = requirements
    try:
        values = cl.release_values(layout, p, p["chart_values"], p["image"])
    except cl.ChartLayoutError as exc:
        result.update(failed=True, msg=str(exc))
        return result
    result.update(
        release_values=values,
        driver_shape=cv.driver_shape(values),
        node_selector=cl.node_placement(layout, p["chart_values"]),
        image=cl.image_of({"image": image_defaults}, metadata, values) if entry is not None else "",
        mapping=cl.report_line(layout),
        # short: the release stage joins the image onto it, and the chart's reference is in the
        # chart task's name already
        report=[cl.chart_line(version, layout)],
    )
    return result
