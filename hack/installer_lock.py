#!/usr/bin/env python3
"""The project's one lock tool: every hash-pinned lock, resolved by `uv pip compile`.

1. The lock embedded in scripts/install_dra_driver_cpu.sh. The drop-in installer for kubevirtci
   builds a private Ansible from it with `pip install --require-hashes --only-binary=:all:`. The
   top-level pins are the ones `make test` runs (ansible-core and cryptography from
   requirements-dev.txt, the runtime libraries of requirements.txt); their dependencies are resolved for every platform by
   `uv pip compile --universal`. Each pin carries the sha256 of every wheel a kubevirtci host can
   install: CPython 3.11-3.14 on glibc Linux x86_64 or aarch64 (manylinux), plus pure-Python wheels.
   The `ansible` bundle's wheel (kubernetes.core's source) is pinned on a line of its own, read by
   the script with `pip download`.
2. The development toolchain's locks (DEV_LOCKS): requirements-dev.lock, what `make deps` installs
   into .venv (requirements-dev.txt, which includes requirements.txt, and bench/requirements.txt,
   what `make bench` needs), and requirements-newest.lock, .venv-newest's (`make newest`); every
   package direct and transitive, pip (and on Python 3.11 the setuptools a venv starts with)
   included, with `uv pip compile --universal --generate-hashes`. hack/venv.sh installs them with
   `pip install --require-hashes`; tests/unit/test_toolchain_lock.py compares the running venv with
   its lock.

Usage: hack/installer_lock.py [--check] [installer] [requirements-dev.lock] [requirements-newest.lock]
(`make lock`: all of them; needs uv from requirements-dev.txt and PyPI). --check resolves again and
fails when a lock would change (new releases change it: a refresh is a commit of its own).
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
# lock file: (the oldest Python it is resolved for, the requirements files it is compiled from)
DEV_LOCKS = {
    "requirements-dev.lock": ("3.11", ("requirements-dev.txt", "bench/requirements.txt")),
    "requirements-newest.lock": ("3.12", ("requirements-newest.txt",)),
}


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
    top = pins("requirements-dev.txt", {"ansible-core", "cryptography"}) + pins("requirements.txt")
    bundle = pins("requirements-dev.txt", {"ansible"})
    return "\n".join([
        BEGIN,
        "# what `pip install --require-hashes` installs into the private environment",
        "requirements_lock() {", "  cat <<'LOCK'", *(entry(line) for line in resolve(top)), "LOCK", "}",
        "# kubernetes.core: the ansible bundle's copy (`pip download`, then only that collection unpacked)",
        "bundle_lock() {", "  cat <<'LOCK'", *(entry(line) for line in bundle), "LOCK", "}",
        END])


def render_dev_lock(lock):
    """A development lock's text: `uv pip compile` of its requirements files, with hashes."""
    python, sources = DEV_LOCKS[lock]
    out = subprocess.run(["uv", "pip", "compile", "--universal", "--python-version", python, "--generate-hashes",
                          "--no-header", "--quiet", *sources], check=True, text=True, cwd=TOP,
                         stdout=subprocess.PIPE).stdout
    head = [f"# {lock}: every package of the venv it makes, with hashes (Python >= {python}); generated by",
            f"# hack/installer_lock.py (`make lock`) from {' '.join(sources)}: edit those, then regenerate.",
            "# hack/venv.sh installs it with `pip install --require-hashes`."]
    return "\n".join(head) + "\n" + out


def normalize(name):
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(text):
    """[(name, version, marker or '', [sha256, ...])] of a hash-pinned lock's entries."""
    entries = []
    for block in re.split(r"\n(?=[^\s#])", text):
        block = "\n".join(line for line in block.splitlines() if not line.lstrip().startswith("#"))
        if not block.strip():
            continue
        spec, _, marker = block.split("\\")[0].partition(";")
        name, version = spec.strip().split("==")
        entries.append((normalize(name), version, marker.strip(), re.findall(r"--hash=sha256:([0-9a-f]{64})", block)))
    return entries


def source_pins(path):
    """{name: version} of the `name==version` lines of a requirements file and the files it reads (-r)."""
    found = {}
    with open(os.path.join(TOP, path)) as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if line.startswith("-r "):
                found.update(source_pins(os.path.join(os.path.dirname(path), line[3:].strip())))
            elif "==" in line:
                name, version = line.split(";")[0].split("==")
                found[normalize(name.strip())] = version.strip()
    return found


def write(path, new, check):
    """Write `new` to `path`, or with `check` say whether it would change; True when up to date."""
    try:
        with open(path) as fh:
            old = fh.read()
    except FileNotFoundError:
        old = None
    if check:
        if new != old:
            print(f"{os.path.relpath(path, TOP)}: out of date; run hack/installer_lock.py (make lock)")
        return new == old
    if new != old:
        with open(path, "w") as fh:
            fh.write(new)
        print(f"wrote {os.path.relpath(path, TOP)}")
    return True


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = len(args) < len(sys.argv) - 1
    unknown = set(args) - {"installer", *DEV_LOCKS}
    if unknown:
        sys.exit(f"usage: {sys.argv[0]} [--check] [installer] [{' '.join(DEV_LOCKS)}] (default: all); not {sorted(unknown)}")
    ok = True
    if not args or "installer" in args:
        with open(SCRIPT) as fh:
            text = fh.read()
        start, stop = text.index(BEGIN), text.index(END) + len(END)
        ok = write(SCRIPT, text[:start] + render() + text[stop:], check)
    for lock in DEV_LOCKS:
        if not args or lock in args:
            ok = write(os.path.join(TOP, lock), render_dev_lock(lock), check) and ok
    if not ok:
        sys.exit(1)
    print("locks up to date" if check else "locks written")


if __name__ == "__main__":
    main()
