"""Effective dra-driver-cpu configuration of a driver pod (pure: the caller passes ConfigMaps).

Precedence, as the real driver (main: internal/driverconfig load.go Resolve, flags.go FromFlags):
default (grouped, numanode, nothing reserved, hostname = node) < config file (--config, main/0.3.0
only) < every flag set on the command line, even an empty one.
Owns: which container is the driver, the image flavor (v0.1 / v0.2 / main) that picks the release
behaviour, flag parsing, finding and parsing the mounted config file, the effective DriverConfig.
Must not: talk to the API server (ConfigMaps come through get_configmap) nor build devices.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

import yaml

try:
    import sim_cpuset as cpuset
except ImportError:  # pragma: no cover
    from . import sim_cpuset as cpuset  # type: ignore

DRIVER_NAME = "dra.cpu"
DRIVER_CONTAINER = "dracpu"
IMAGE_MARKER = "dra-driver-cpu"

MODES = ("grouped", "individual")
GROUP_BYS = ("numanode", "socket", "machine")
FLAGS_V02 = {"kubeconfig", "hostname-override", "bind-address", "reserved-cpus", "cpu-device-mode",
             "group-by", "expose-pcie-roots", "v", "vmodule", "logtostderr", "alsologtostderr",
             "log_dir", "log_file", "add_dir_header", "skip_headers", "one_output", "stderrthreshold",
             "skip_log_headers", "log_file_max_size", "log_backtrace_at", "h", "help"}
# flags whose Set() refuses other values (flags.go cpuDeviceModeValue / groupByValue)
_FLAG_CHOICES = {"cpu-device-mode": (MODES, "grouped or individual"),
                 "group-by": (GROUP_BYS, "socket, numanode or machine")}
FLAGS_MAIN_ONLY = {"config", "kubelet-root-dir", "sysfs-overlay"}
BOOL_FLAGS = {"expose-pcie-roots", "logtostderr", "alsologtostderr", "add_dir_header", "skip_headers",
              "one_output", "skip_log_headers", "h", "help", "publish-node-allocatable-resource-mapping"}


class DriverConfigError(Exception):
    """The real driver would exit with this message (-> CrashLoopBackOff)."""


class ConfigMapMissing(DriverConfigError):
    """The kubelet could not mount the config volume (-> the pod stays ContainerCreating)."""


@dataclass
class DriverConfig:
    cpu_device_mode: str = "grouped"
    group_by: str = "numanode"
    reserved_cpus: list = field(default_factory=list)
    hostname_override: str = ""
    expose_pcie_roots: bool = False
    flavor: str = "main"              # v0.1 | v0.2 | main (>= 0.3.0 or untagged)
    image: str = ""
    config_path: str = ""
    config_source: str = ""           # "ConfigMap ns/name key k" when a file was read
    sources: dict = field(default_factory=dict)   # setting -> flag|file|default

    def describe(self) -> str:
        empty = '""'
        srcs = ", ".join(f"{k}={v}" for k, v in sorted(self.sources.items()))
        return (f"cpuDeviceMode={self.cpu_device_mode} groupBy={self.group_by} "
                f"reservedCPUs={cpuset.format(self.reserved_cpus) or empty} "
                f"hostnameOverride={self.hostname_override or empty} (sources: {srcs})")

    def key(self) -> tuple:
        return (self.cpu_device_mode, self.group_by, tuple(self.reserved_cpus), self.hostname_override,
                self.expose_pcie_roots, self.flavor)


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
    """v0.1 / v0.2 for those releases; main for >= 0.3.0, untagged, digests, latest, dev tags."""
    ref = (image or "").split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    m = _TAG.match(tag)
    if not m:
        return "main"
    ver = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if ver < (0, 2, 0):
        return "v0.1"
    if ver < (0, 3, 0):
        return "v0.2"
    return "main"


def parse_flags(argv: list) -> tuple[dict, list]:
    """Go/pflag style: --a=b, --a b, -a=b, -a b, bare bool flags. Returns ({name: value}, positional)."""
    flags: dict = {}
    rest: list = []
    i = 0
    argv = [str(a) for a in argv]
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest.extend(argv[i + 1:])
            break
        if a.startswith("-") and len(a) > 1:
            name = a.lstrip("-")
            if "=" in name:
                name, val = name.split("=", 1)
            elif name in BOOL_FLAGS:
                val = "true"
            elif i + 1 < len(argv):
                i += 1
                val = argv[i]
            else:
                val = ""
            flags[name] = val
        else:
            rest.append(a)
        i += 1
    return flags, rest


def _container_argv(c: dict) -> list:
    cmd = list(c.get("command") or [])
    args = list(c.get("args") or [])
    # the first command element is the binary; flags may live in command or args
    return cmd[1:] + args if cmd else args


# ------------------------------------------------------------------ config file

# main's config file (internal/driverconfig: cfgfile.go buildConfMap + load.go applyMap): a flat YAML
# map read strictly (duplicate keys fail), `apiVersion` (if present) must be v1alpha1, keys must be
# spelled exactly like the Config struct's json tags (a case variant is refused by name), the
# fields bindAddress / exposePCIeRoots / kubeletRootDir are refused in the file, and any other key is
# an unknown field; values must have the field's JSON type.
CONFIG_API_VERSION = "v1alpha1"
_STRING_FIELDS = {"kubeconfig": None, "hostnameOverride": "hostname_override", "bindAddress": None,
                  "reservedCPUs": "reserved_cpus", "cpuDeviceMode": "cpu_device_mode", "groupBy": "group_by",
                  "sysfsOverlay": None, "kubeletRootDir": None}
_BOOL_FIELDS = {"exposePCIeRoots", "publishNodeAllocatableResourceMapping"}
_EXCLUDED = {
    "bindAddress": "use helm chart's healthzPort instead",
    "exposePCIeRoots": "use args.exposePCIeRoots instead",
    "kubeletRootDir": "use the chart's top-level kubeletRootDir value, or --kubelet-root-dir when running "
                      "the binary directly",
}
_CANONICAL = sorted({"apiVersion", *_STRING_FIELDS, *_BOOL_FIELDS})


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key set twice in one map (sigs.k8s.io/yaml UnmarshalStrict)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f'line {key_node.start_mark.line + 1}: key "{key}" already set in map',
                    key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _json_type(v) -> str:
    """The JSON type name Go's encoding/json reports in an UnmarshalTypeError."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, (list, tuple)):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "string"


def _file_error(path, msg):
    return DriverConfigError(f"failed to load configuration: cannot apply {path}: {msg}")


def parse_config_file(text: str, path: str = "config.yaml") -> dict:
    """Parse the driver's config file like main's driver -> {cpu_device_mode, group_by, reserved_cpus,
    hostname_override} for the fields the file sets (an empty string is set too). Raises
    DriverConfigError with the driver's message (it exits, the pod crash-loops)."""
    try:
        data = yaml.load(text, Loader=_StrictLoader) if text and text.strip() else {}
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or str(e)
        raise _file_error(path, f"parsing {path}: error converting YAML to JSON: yaml: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _file_error(path, f"parsing {path}: error unmarshaling JSON: while decoding JSON: json: cannot "
                                f"unmarshal {_json_type(data)} into Go value of type map[string]interface {{}}")
    data = {str(k): v for k, v in data.items()}
    if "apiVersion" in data:
        v = data.pop("apiVersion")
        if v != CONFIG_API_VERSION:
            shown = v if isinstance(v, str) else ""
            raise _file_error(path, f'unsupported apiVersion "{shown}", want "{CONFIG_API_VERSION}"')
    problems = []
    for key in sorted(data):
        if key in _CANONICAL:
            continue
        want = next((c for c in _CANONICAL if c.lower() == key.lower()), None)
        if want is None:
            continue
        if want in _EXCLUDED:
            problems.append(f'field "{key}" is not configurable via the config file; {_EXCLUDED[want]}')
        else:
            problems.append(f'field "{key}" is spelled differently from the schema; use "{want}"')
    if problems:
        raise _file_error(path, "; ".join(problems))
    for key in sorted(_EXCLUDED):
        if key in data:
            raise _file_error(path, f'field "{key}" is not configurable via the config file; {_EXCLUDED[key]}')
    out = {}
    for key in sorted(data):          # encoding/json reports the first problem in key order
        v = data[key]
        if key not in _STRING_FIELDS and key not in _BOOL_FIELDS:
            raise _file_error(path, f'applying config map: json: unknown field "{key}"')
        if v is None:
            continue                  # JSON null leaves the field as it is
        want_type = "bool" if key in _BOOL_FIELDS else "string"
        if _json_type(v) != want_type:
            raise _file_error(path, f"applying config map: json: cannot unmarshal {_json_type(v)} into Go struct "
                                    f"field Config.{key} of type {want_type}")
        if _STRING_FIELDS.get(key):
            out[_STRING_FIELDS[key]] = v
    return out


def find_config_source(pod: dict, container: dict, path: str) -> tuple[str, str, str, bool]:
    """Where the file at `path` comes from: (configmap namespace, name, key, optional).

    Raises DriverConfigError if no mounted ConfigMap volume provides the path."""
    ns = (pod.get("metadata") or {}).get("namespace", "default")
    vols = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    path = posixpath.normpath(path)
    best = None
    for m in container.get("volumeMounts") or []:
        mp = posixpath.normpath(m.get("mountPath", ""))
        if m.get("subPath"):
            if mp == path:
                best = (m, m["subPath"])
                break
            continue
        if path.startswith(mp.rstrip("/") + "/"):
            rel = path[len(mp.rstrip("/")) + 1:]
            if best is None or len(mp) > len(posixpath.normpath(best[0].get("mountPath", ""))):
                best = (m, rel)
    if best is None:
        raise DriverConfigError(f"failed to read config file {path}: open {path}: no such file or directory")
    mount, rel = best
    vol = vols.get(mount.get("name")) or {}
    sources = []
    if vol.get("configMap"):
        sources.append(vol["configMap"])
    for src in ((vol.get("projected") or {}).get("sources") or []):
        if src.get("configMap"):
            sources.append(src["configMap"])
    for cm in sources:
        items = cm.get("items")
        if items:
            for it in items:
                if posixpath.normpath(it.get("path", "")) == rel:
                    return ns, cm.get("name", ""), it.get("key", ""), bool(cm.get("optional"))
            continue
        if "/" not in rel:
            return ns, cm.get("name", ""), rel, bool(cm.get("optional"))
    raise DriverConfigError(f"failed to read config file {path}: open {path}: no such file or directory "
                            f"(volume {mount.get('name')!r} is not a ConfigMap providing it)")


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


# ------------------------------------------------------------------ resolution

def resolve(pod: dict, get_configmap, container: dict | None = None) -> DriverConfig:
    """Effective config of a driver pod. get_configmap(ns, name) -> ConfigMap dict or None.

    Raises DriverConfigError with the message the real driver would print before exiting."""
    c = container or driver_container(pod)
    if c is None:
        raise DriverConfigError("not a dra-driver-cpu pod")
    cfg = DriverConfig(image=c.get("image") or "", flavor=image_flavor(c.get("image") or ""))
    flags, _ = parse_flags(_container_argv(c))
    if cfg.flavor != "main":
        for name in flags:
            if name in FLAGS_MAIN_ONLY:
                raise DriverConfigError(f"flag provided but not defined: -{name}")
    file_vals: dict = {}
    path = flags.get("config", "")
    if path:
        ns, name, key, optional = find_config_source(pod, c, path)
        cm = get_configmap(ns, name)
        if cm is None and not optional:
            raise ConfigMapMissing(f'MountVolume.SetUp failed for volume: configmap "{name}" not found')
        data = (cm or {}).get("data") or {}
        if key not in data:
            raise DriverConfigError(f"failed to read config file {path}: open {path}: no such file or directory")
        file_vals = parse_config_file(data[key], path)
        cfg.config_path = path
        cfg.config_source = f"ConfigMap {ns}/{name} key {key}"

    # flag parsing comes first (flag.Parse): -cpu-device-mode and -group-by refuse other values, "" too
    for name in flags:
        allowed, want = _FLAG_CHOICES.get(name, (None, ""))
        if allowed and flags[name] not in allowed:
            raise DriverConfigError(f'invalid value "{flags[name]}" for flag -{name}: invalid value: '
                                    f'"{flags[name]}", must be {want}')

    def pick(setting, flag, default):
        # defaults -> config file -> flags: every flag set on the command line wins, even an empty one
        if flag in flags:
            cfg.sources[setting] = "flag"
            return flags[flag]
        if setting in file_vals:
            cfg.sources[setting] = "file"
            return file_vals[setting]
        cfg.sources[setting] = "default"
        return default

    mode = pick("cpu_device_mode", "cpu-device-mode", "grouped")
    group_by = pick("group_by", "group-by", "numanode")
    reserved = pick("reserved_cpus", "reserved-cpus", "")
    hostname = pick("hostname_override", "hostname-override", "")
    # main validates the merged config (only a file can bring bad values here)
    if mode not in MODES:
        raise DriverConfigError(f'failed to load configuration: cannot validate config: invalid cpuDeviceMode '
                                f'"{mode}": must be "grouped" or "individual"')
    if mode == "grouped" and group_by not in GROUP_BYS:
        raise DriverConfigError(f'failed to load configuration: cannot validate config: invalid groupBy '
                                f'"{group_by}": must be "socket", "numanode", or "machine"')
    try:
        cfg.reserved_cpus = cpuset.parse(reserved)
    except cpuset.CpusetError as e:
        raise DriverConfigError(f"failed to parse reserved CPUs: {e}") from None
    cfg.cpu_device_mode, cfg.group_by = mode, group_by
    cfg.hostname_override = hostname.strip()
    cfg.expose_pcie_roots = str(flags.get("expose-pcie-roots", "false")).lower() in ("true", "1", "yes")
    return cfg
