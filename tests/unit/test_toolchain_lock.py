"""The development toolchain is locked: the running venv (.venv for `make unit`, .venv-newest for
`make newest`) holds exactly the packages of the lock hack/venv.sh built it from, and each lock
(hack/installer_lock.py) pins every requirement its sources pin, each with hashes."""

import importlib.metadata
import importlib.util
import os
import sys
import sysconfig

import pytest
from packaging.markers import Marker

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location("installer_lock", os.path.join(REPO, "hack", "installer_lock.py"))
installer_lock = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(installer_lock)


def _read(rel):
    with open(os.path.join(REPO, rel)) as fh:
        return fh.read()


def wanted(entries, environment=None):
    """{name: version} of the lock entries whose markers hold for this interpreter (or `environment`)."""
    return {name: version for name, version, marker, _hashes in entries
            if not marker or Marker(marker).evaluate(environment)}


def installed(paths):
    """{name: version} of the distributions installed in `paths` (the venv's site-packages)."""
    return {installer_lock.normalize(d.metadata["Name"]): d.version
            for d in importlib.metadata.distributions(path=list(paths))}


def differences(want, have):
    """What is installed but not locked, locked but not installed, or at another version."""
    problems = [f"{n}=={have[n]}: installed, not in the lock" for n in sorted(set(have) - set(want))]
    problems += [f"{n}=={want[n]}: in the lock, not installed" for n in sorted(set(want) - set(have))]
    problems += [f"{n}: installed {have[n]}, locked {want[n]}" for n in sorted(set(want) & set(have))
                 if want[n] != have[n]]
    return problems


def test_this_venv_is_exactly_its_lock():
    built_from = os.path.join(sys.prefix, ".built-from")
    assert os.path.exists(built_from), (
        f"{sys.prefix} was not made from a lock by hack/venv.sh (no .built-from): run `make deps`")
    with open(built_from) as fh:
        lock = fh.read().strip()
    assert lock in installer_lock.DEV_LOCKS, lock
    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    assert differences(wanted(installer_lock.read_lock(_read(lock))), installed(paths)) == []


@pytest.mark.parametrize("lock", sorted(installer_lock.DEV_LOCKS))
def test_the_lock_pins_what_its_sources_pin_each_with_hashes(lock):
    entries = installer_lock.read_lock(_read(lock))
    by_name = {}
    for name, version, _marker, hashes in entries:
        assert hashes, f"{lock}: {name}=={version} has no hash"
        by_name.setdefault(name, set()).add(version)
    pinned = {}
    for source in installer_lock.DEV_LOCKS[lock][1]:
        pinned.update(installer_lock.source_pins(source))
    assert {n: v for n, v in pinned.items() if by_name.get(n) != {v}} == {}, f"{lock} is stale: `make lock`"
    assert {"pip", "cryptography", "ansible-core"} <= set(by_name)


@pytest.mark.parametrize("lock", sorted(installer_lock.DEV_LOCKS))
def test_the_lock_pins_a_cryptography_ansible_core_is_quiet_with(lock):
    """ansible-core 2.19 and 2.21 import DSA; cryptography 51 deprecates it and every run would print
    a CryptographyDeprecationWarning (issue 38)."""
    versions = {v for n, v, _marker, _hashes in installer_lock.read_lock(_read(lock)) if n == "cryptography"}
    assert versions and all(int(v.split(".")[0]) < 51 for v in versions), versions


LOCK = """\
# a comment
alpha==1.0 \\
    --hash=sha256:%s
beta==2.0 ; sys_platform == 'win32' \\
    --hash=sha256:%s \\
    --hash=sha256:%s
    # via alpha
gamma==3.0 ; python_full_version < '3.0' \\
    --hash=sha256:%s
""" % ("a" * 64, "b" * 64, "c" * 64, "d" * 64)


def test_read_lock():
    assert installer_lock.read_lock(LOCK) == [
        ("alpha", "1.0", "", ["a" * 64]),
        ("beta", "2.0", "sys_platform == 'win32'", ["b" * 64, "c" * 64]),
        ("gamma", "3.0", "python_full_version < '3.0'", ["d" * 64]),
    ]


def test_markers_decide_what_is_wanted():
    entries = installer_lock.read_lock(LOCK)
    assert wanted(entries, {"sys_platform": "linux"}) == {"alpha": "1.0"}
    assert wanted(entries, {"sys_platform": "win32"}) == {"alpha": "1.0", "beta": "2.0"}


@pytest.mark.parametrize("have, problem", [
    ({"alpha": "1.0", "extra": "9"}, "extra==9: installed, not in the lock"),
    ({}, "alpha==1.0: in the lock, not installed"),
    ({"alpha": "1.1"}, "alpha: installed 1.1, locked 1.0"),
])
def test_a_venv_that_is_not_its_lock_is_found(have, problem):
    assert differences({"alpha": "1.0"}, have) == [problem]


def test_installed_reads_the_given_site_packages(tmp_path):
    dist = tmp_path / "Some_Package-1.2.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: Some_Package\nVersion: 1.2\n")
    assert installed([str(tmp_path)]) == {"some-package": "1.2"}
