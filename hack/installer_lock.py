#!/usr/bin/env python3
"""Regenerate the hash-pinned lock embedded in scripts/install_dra_driver_cpu.sh.

The drop-in installer for kubevirtci builds a private Ansible from this lock with
`pip install --require-hashes --only-binary=:all:`. The top-level pins are the ones `make test`
runs (ansible-core from requirements-dev.txt, the runtime libraries of requirements.txt); their
dependencies are resolved for every platform by `uv pip compile --universal`. Each pin carries the
sha256 of every wheel a kubevirtci host can install: CPython 3.11-3.14 on glibc Linux x86_64 or
aarch64 (manylinux), plus pure-Python wheels. The `ansible` bundle's wheel (kubernetes.core's
source) is pinned on a line of its own, read by the script with `pip download`.

Usage: hack/installer_lock.py [--check]   (needs uv from requirements-dev.txt and PyPI)
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(TOP, "scripts", "install_dra_driver_cpu.sh")
INDEX = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
BEGIN, END = "# BEGIN LOCK (hack/installer_lock.py)", "# END LOCK"
PYTHONS = ("311", "312", "313", "314")
ARCHES = ("x86_64", "aarch64")


def pins(path, names=None):
    """name==version lines of a requirements file (only `names` when given)."""
    found = []
    with open(os.path.join(TOP, path)) as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if not line or line.startswith("-"):
                continue
            name = re.split(r"[<>=!~ ;\[]", line, maxsplit=1)[0]
            if names is None or name in names:
                found.append(line)
    return found


def wanted(filename):
    """A wheel a kubevirtci host may pick: pure Python, or CPython 3.11+ on manylinux x86_64/aarch64."""
    if not filename.endswith(".whl"):
        return False
    python, abi, platform = filename[:-4].split("-")[-3:]
    if platform == "any":
        return "py3" in python.split(".") or any(f"cp{v}" in python for v in PYTHONS)
    if not platform.startswith("manylinux") or not platform.endswith(ARCHES):
        return False
    if abi == "abi3":
        return any(int(tag[3:] or 0) <= 11 for tag in python.split(".") if tag.startswith("cp3"))
    return any(python == f"cp{v}" and abi == f"cp{v}" for v in PYTHONS)


def hashes(name, version):
    req = urllib.request.Request(f"{INDEX}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        files = json.load(resp)["files"]
    norm = re.sub(r"[-_.]+", "_", name).lower()
    found = sorted(f["hashes"]["sha256"] for f in files
                   if re.sub(r"[-_.]+", "_", f["filename"].split("-")[0]).lower() == norm
                   and f["filename"].split("-")[1] == version and wanted(f["filename"]) and not f.get("yanked"))
    if not found:
        sys.exit(f"{name}=={version}: no wheel for CPython 3.11+ on manylinux x86_64/aarch64 or pure Python")
    return found


def resolve(requirements):
    with tempfile.NamedTemporaryFile("w", suffix=".in") as src:
        src.write("\n".join(requirements) + "\n")
        src.flush()
        out = subprocess.run(["uv", "pip", "compile", "--universal", "--python-version", "3.11", "--no-header",
                              "--no-annotate", "--quiet", src.name], check=True, text=True,
                             stdout=subprocess.PIPE).stdout
    return [line.strip() for line in out.splitlines() if line.strip() and not line.startswith("#")]


def entry(line):
    spec, _, marker = line.partition(";")
    name, version = spec.strip().split("==")
    text = spec.strip() + (f" ;{marker}" if marker else "")
    return " \\\n".join([text] + [f"    --hash=sha256:{h}" for h in hashes(name, version)])


def render():
    top = pins("requirements-dev.txt", {"ansible-core"}) + pins("requirements.txt")
    bundle = pins("requirements-dev.txt", {"ansible"})
    return "\n".join([
        BEGIN,
        "# what `pip install --require-hashes` installs into the private environment",
        "requirements_lock() {", "  cat <<'LOCK'", *(entry(line) for line in resolve(top)), "LOCK", "}",
        "# kubernetes.core: the ansible bundle's copy (`pip download`, then only that collection unpacked)",
        "bundle_lock() {", "  cat <<'LOCK'", *(entry(line) for line in bundle), "LOCK", "}",
        END])


def main():
    with open(SCRIPT) as fh:
        text = fh.read()
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    new = text[:start] + render() + text[stop:]
    if "--check" in sys.argv:
        if new != text:
            sys.exit(f"{SCRIPT}: the embedded lock is out of date; run hack/installer_lock.py")
        print("lock up to date")
        return
    with open(SCRIPT, "w") as fh:
        fh.write(new)
    print(f"wrote the lock into {SCRIPT}")


if __name__ == "__main__":
    main()
