"""Which chart each dra-driver-cpu chart version is, for the test cluster and the tests.

Owns: upstream's own chart versions here (UPSTREAM_CHART_VERSIONS), the fixture chart of every later
version (tests/fixtures/charts/dra-driver-cpu/<version>), and reading a chart's Chart.yaml or
values.yaml from a directory or a .tgz. Must not: push, render or change a chart.
"""
import json
import os
import shutil
import subprocess
import tarfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CHART_NAME = "dra-driver-cpu"
FIXTURES_DIR = os.path.join(REPO, "tests", "fixtures", "charts", CHART_NAME)
# the Go module proxy serves github.com/kubernetes-sigs/dra-driver-cpu at v0.2.0 only (issue 39): its
# deployment/helm/dra-driver-cpu is the chart of that version; every later version's upstream release
# cannot be had here and is a fixture chart
UPSTREAM_CHART_VERSIONS = ("0.2.0",)
UPSTREAM_MODULE = "github.com/kubernetes-sigs/dra-driver-cpu"
UPSTREAM_TOOLS = os.path.join(HERE, "tools", "dra-driver-cpu-v0.2.0")   # the module that pins v0.2.0
BUILD_SH = os.path.join(HERE, "build.sh")


def upstream_module_dir():
    """The v0.2.0 module's directory in the Go module cache (read-only), downloaded on first use:
    `go mod download`, not `go list -m`, which prints an empty Dir for a module not in the cache."""
    r = subprocess.run(["go", "mod", "download", "-json", UPSTREAM_MODULE], cwd=UPSTREAM_TOOLS, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, GOFLAGS="-mod=mod"))
    d = json.loads(r.stdout or "{}").get("Dir", "") if r.returncode == 0 else ""
    if not d:
        raise RuntimeError(f"go mod download {UPSTREAM_MODULE} failed: {r.stderr.strip() or r.stdout.strip()}")
    return d


def upstream_chart_dir(version):
    """Upstream's chart <version> as its repository holds it (upstream_module_dir)."""
    if version not in UPSTREAM_CHART_VERSIONS:
        raise ValueError(f"chart {version} is not upstream's here ({', '.join(UPSTREAM_CHART_VERSIONS)} is)")
    return os.path.join(upstream_module_dir(), "deployment", "helm", CHART_NAME)


def upstream_chart(version):
    """Upstream's packaged chart <version> (build.sh upstream-chart: cached; seconds on a new machine)."""
    if version not in UPSTREAM_CHART_VERSIONS:
        raise ValueError(f"chart {version} is not upstream's here")
    r = subprocess.run([BUILD_SH, "upstream-chart"], stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"build.sh upstream-chart failed (exit {r.returncode})")
    return os.path.join(r.stdout.strip().splitlines()[-1], f"{CHART_NAME}-{version}.tgz")


def chart_dir(version, fixtures_dir=FIXTURES_DIR):
    """The directory of chart <version>'s sources: upstream's own, else its fixture."""
    return upstream_chart_dir(version) if version in UPSTREAM_CHART_VERSIONS else os.path.join(fixtures_dir, version)


def chart_sources(fixtures_dir=FIXTURES_DIR, packaged=True):
    """{version: source} of every chart the test registry serves: a fixture's directory, or upstream's
    own (its packaged .tgz; with packaged=False its directory). A fixture of an upstream version is
    refused: the two would disagree."""
    sources = {}
    for version in sorted(os.listdir(fixtures_dir)) if os.path.isdir(fixtures_dir) else []:
        if version in UPSTREAM_CHART_VERSIONS:
            raise RuntimeError(f"{fixtures_dir}/{version}: upstream's own {version} is served, remove the fixture")
        sources[version] = os.path.join(fixtures_dir, version)
    for version in UPSTREAM_CHART_VERSIONS:
        sources[version] = upstream_chart(version) if packaged else upstream_chart_dir(version)
    return dict(sorted(sources.items()))


def chart_file(source, name):
    """The parsed YAML of a chart's top-level file `name` (Chart.yaml, values.yaml), from its
    directory or its .tgz (<chart name>/<name>)."""
    if os.path.isdir(source):
        with open(os.path.join(source, name)) as f:
            return yaml.safe_load(f) or {}
    with tarfile.open(source) as t:
        return yaml.safe_load(t.extractfile(f"{CHART_NAME}/{name}").read()) or {}


def copy_chart(version, dest, fixtures_dir=FIXTURES_DIR):
    """A writable copy of chart <version>'s sources at dest (the module cache's files are read-only)."""
    shutil.copytree(chart_dir(version, fixtures_dir), dest)
    for root, dirs, files in os.walk(dest):
        for name in dirs + files:
            path = os.path.join(root, name)
            os.chmod(path, os.stat(path).st_mode | 0o200)
    os.chmod(dest, os.stat(dest).st_mode | 0o200)
    return dest
