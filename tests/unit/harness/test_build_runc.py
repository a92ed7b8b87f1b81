"""tests/cluster/build.sh's runc (Debian's package, unpacked into the cache): one unpack at a time.

On a new machine the build behind, `newest` and the integration suite all asked for the real-node
binaries at once, and their runc unpacks removed each other's .tmp directory (`cd: ....tmp: No such
file or directory`, then `apt-get download runc=... failed`): every other build of build.sh holds a
lock per output directory, runc did not. Here `apt-get` is a stand-in on PATH (the package fetch is
not what is tested) that takes a second and hands out a small package built with dpkg-deb, so three
callers overlap for certain."""
import os
import shutil
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD_SH = os.path.join(REPO, "tests", "cluster", "build.sh")
VERSION = "9.9.9-test1"


@pytest.fixture(name="fake_apt")
def fixture_fake_apt(tmp_path):
    if not shutil.which("dpkg-deb"):
        pytest.skip("dpkg-deb is missing: build.sh's runc needs Debian's dpkg")
    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "usr" / "sbin").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        f"Package: runc\nVersion: {VERSION}\nArchitecture: amd64\nMaintainer: t <t@example.com>\nDescription: t\n")
    runc = pkg / "usr" / "sbin" / "runc"
    runc.write_text("#!/bin/sh\necho fake runc\n")
    runc.chmod(0o755)
    deb = tmp_path / "runc.deb"
    subprocess.run(["dpkg-deb", "--build", str(pkg), str(deb)], check=True, capture_output=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "apt-calls"
    apt = bindir / "apt-get"
    apt.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\nsleep 1\ncp {deb} ./runc_{VERSION}_amd64.deb\n")
    apt.chmod(0o755)
    return bindir, calls


def test_three_callers_at_once_unpack_runc_once_and_all_get_it(tmp_path, fake_apt):
    bindir, calls = fake_apt
    cache = tmp_path / "cache"
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", CLUSTER_CACHE_DIR=str(cache),
               CLUSTER_RUNC_DEB_VERSION=VERSION)
    procs = [subprocess.Popen(["bash", BUILD_SH, "runc"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for caller in range(3)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    want = str(cache / "runc" / VERSION)
    assert [out.strip() for out, err in outs] == [want] * 3, outs
    assert subprocess.run([os.path.join(want, "runc")], capture_output=True, text=True, check=True).stdout == "fake runc\n"
    with open(calls, encoding="utf-8") as fh:
        assert fh.read().splitlines() == [f"download -q runc={VERSION}"], "runc was unpacked more than once"
    assert not os.path.exists(want + ".tmp")
