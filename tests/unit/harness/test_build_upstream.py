"""tests/cluster/build.sh upstream: upstream's dra-driver-cpu v0.2.0 (the only version the Go module
proxy serves), built once into <cache>/dra-driver-cpu/<version> and then reused without calling go.

The layout is upstream's own: its driver image holds the binary twice, /dracpu and /dracpu-gatherinfo
(upstream Dockerfile at v0.2.0: `COPY ... /go/bin/dracpu /dracpu-gatherinfo`; the binary dispatches on
its own name), its test image /dracpuinfo and /dracputester (test/image/Dockerfile), its chart as
`helm package` writes it, its e2e suite as `go test -c` writes it. Here `go` is a stand-in on PATH
that fails when called: a cached build must not call it (what is tested is the cache, not Go)."""
import os
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD_SH = os.path.join(REPO, "tests", "cluster", "build.sh")
TOOLS = os.path.join(REPO, "tests", "cluster", "tools", "dra-driver-cpu-v0.2.0")


def test_the_pinned_module_is_upstreams_v0_2_0_and_names_its_programs():
    with open(os.path.join(TOOLS, "go.mod")) as f:
        assert "require github.com/kubernetes-sigs/dra-driver-cpu v0.2.0\n" in f.read()
    with open(os.path.join(TOOLS, "tools.go")) as f:
        text = f.read()
    for pkg in ("cmd/dracpu", "test/image/dracpuinfo", "test/image/dracputester"):
        assert f'"github.com/kubernetes-sigs/dra-driver-cpu/{pkg}"' in text


def _cached(tmp_path, gatherinfo=True):
    out = tmp_path / "cache" / "dra-driver-cpu" / "v0.2.0"
    (out / "e2e").mkdir(parents=True)
    (out / "chart").mkdir()
    (out / ".complete").write_text("-s -w")
    for name in ("dracpu", "dracpuinfo", "dracputester") + (("dracpu-gatherinfo",) if gatherinfo else ()):
        (out / name).write_text(f"#!/bin/sh\necho {name}\n")
        (out / name).chmod(0o755)
    (out / "e2e" / ".complete").write_text("v0.2.0\n")
    (out / "chart" / ".complete").write_text("dra-driver-cpu-0.2.0.tgz\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "go").write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path}/go-calls\nexit 1\n")
    (bindir / "go").chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", CLUSTER_CACHE_DIR=str(tmp_path / "cache"))
    return out, env


def test_a_cached_build_calls_no_go_and_prints_its_directory(tmp_path):
    out, env = _cached(tmp_path)
    r = subprocess.run(["bash", BUILD_SH, "upstream"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out)
    assert not (tmp_path / "go-calls").exists()


def test_the_driver_is_laid_out_twice_as_upstreams_image_does(tmp_path):
    out, env = _cached(tmp_path, gatherinfo=False)
    r = subprocess.run(["bash", BUILD_SH, "upstream"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert (out / "dracpu-gatherinfo").read_bytes() == (out / "dracpu").read_bytes()
    assert os.access(out / "dracpu-gatherinfo", os.X_OK)
