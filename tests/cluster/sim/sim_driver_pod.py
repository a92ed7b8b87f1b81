"""What the kubelet gives a simulated node's dra-driver-cpu container (pure: ConfigMaps come in).

Owns: which container of a pod is the driver, the flavour its image carries (the project's driver
image sets DRACPU_FLAVOR by tag: v0.2 / main), its argv (command[1:] + args), the files its
ConfigMap volumes mount (path -> content: mountPath + key, `items`, `subPath`, projected
ConfigMaps), and the non-optional ConfigMaps whose absence keeps the pod ContainerCreating.
Must not: parse the driver's flags or config file, or build devices: the Go driver does
(tests/cluster/driver, `dracpu publish`), from the argv and files handed over.
"""
from __future__ import annotations

import posixpath
import re

DRIVER_NAME = "dra.cpu"
DRIVER_CONTAINER = "dracpu"
IMAGE_MARKER = "dra-driver-cpu"


# ------------------------------------------------------------------ pods and images

def driver_container(pod: dict) -> dict | None:
    """The dra-driver-cpu container of a pod, or None if the pod is not a driver pod."""
    containers = (pod.get("spec") or {}).get("containers") or []
    for c in containers:
        if c.get("name") == DRIVER_CONTAINER:
            return c
    for c in containers:
        if IMAGE_MARKER in (c.get("image") or ""):
            return c
    return None


_TAG = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def image_flavor(image: str) -> str:
    """v0.2 for releases before 0.3.0 (the project's driver has no v0.1 flavour: a v0.1.x tag runs
    as v0.2); main for >= 0.3.0, untagged, digests, latest, dev tags."""
    ref = (image or "").split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    m = _TAG.match(tag)
    if not m:
        return "main"
    ver = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if ver < (0, 3, 0):
        return "v0.2"
    return "main"


def container_argv(c: dict) -> list[str]:
    """The driver's arguments: command[1:] + args; without a command the image has no entrypoint
    (the project's driver image), so args[0] is the binary (`/dracpu`) unless it is a flag."""
    cmd = [str(x) for x in c.get("command") or []]
    args = [str(x) for x in c.get("args") or []]
    if cmd:
        return cmd[1:] + args
    return args[1:] if args and not args[0].startswith("-") else args


def _configmaps_of(vol: dict) -> list[dict]:
    out = [vol["configMap"]] if vol.get("configMap") else []
    out += [src["configMap"] for src in ((vol.get("projected") or {}).get("sources") or []) if src.get("configMap")]
    return out


def _files_of(cm_ref: dict, cm: dict | None) -> dict[str, str]:
    """relative path -> content of one ConfigMap volume source (all keys, or its `items`)."""
    data = (cm or {}).get("data") or {}
    items = cm_ref.get("items")
    if items:
        return {posixpath.normpath(it.get("path", "")): data[it["key"]] for it in items if it.get("key") in data}
    return dict(data)


def mounted_files(pod: dict, container: dict, get_configmap) -> dict[str, str]:
    """Files the kubelet mounts into the container from ConfigMap volumes: absolute path -> content.
    get_configmap(ns, name) -> ConfigMap dict or None (a missing optional one mounts nothing)."""
    ns = (pod.get("metadata") or {}).get("namespace", "default")
    vols = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    files: dict[str, str] = {}
    for m in container.get("volumeMounts") or []:
        mount = posixpath.normpath(m.get("mountPath", "/"))
        rel_files: dict[str, str] = {}
        for ref in _configmaps_of(vols.get(m.get("name")) or {}):
            rel_files.update(_files_of(ref, get_configmap(ns, ref.get("name", ""))))
        if m.get("subPath"):
            sub = posixpath.normpath(m["subPath"])
            if sub in rel_files:
                files[mount] = rel_files[sub]
            continue
        for rel, content in rel_files.items():
            files[posixpath.join(mount, rel)] = content
    return files


def missing_configmaps(pod: dict, get_configmap) -> list[str]:
    """Non-optional ConfigMap volumes of the pod whose ConfigMap does not exist (kubelet: mount fails)."""
    ns = (pod.get("metadata") or {}).get("namespace", "default")
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or []:
        cms = []
        if v.get("configMap"):
            cms.append(v["configMap"])
        for src in ((v.get("projected") or {}).get("sources") or []):
            if src.get("configMap"):
                cms.append(src["configMap"])
        for cm in cms:
            if cm.get("optional"):
                continue
            if get_configmap(ns, cm.get("name", "")) is None:
                out.append(cm.get("name", ""))
    return out
