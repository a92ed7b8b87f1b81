#!/usr/bin/env bash
# A Python virtualenv per interpreter and requirements, built once in the cache and linked into the
# checkout, as the test cluster's binaries are:
#   hack/venv.sh <link in the checkout> <python> <requirements to install> [other files it reads (-r)]...
# The venv is ~/.cache/kubevirtci-dra-cpu/venvs/<link name without its dot>-<hash of the interpreter's version and
# path and of the files' contents> (CLUSTER_CACHE_DIR moves the cache, as for the binaries), made
# under a lock (two clones at once build it once) and marked complete only once pip has finished. A
# fresh clone of the same requirements links it instead of installing its packages again (.venv
# 112, .venv-newest 54: 138 s and 110 s on a 2-core machine, measured 2026-12-05). Changing a
# requirements file changes the hash: a new venv, the old one left for the checkouts still using it.
# A link that is a real directory (a venv made in place before this script) is replaced by the link.
# Knob: VENV_UPGRADE_PIP=false keeps the interpreter's own pip (tests/unit/harness/test_venv_cache.py,
# whose requirements install nothing).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 <link> <python> <requirements.txt> [files it reads]..." >&2; exit 2; }
link=$1 py=$2 req=$3
shift 2
cache=${CLUSTER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubevirtci-dra-cpu}/venvs
hash=$( { "$py" -c 'import sys; print(sys.version)'; readlink -f "$(command -v "$py")"; cat "$@"; } \
  | sha256sum | cut -c1-16)
name=$(basename "$link")
dir=$cache/${name#.}-$hash
mkdir -p "$cache"
if [ ! -e "$dir/.complete" ]; then
  exec 9>"$dir.lock"
  flock 9
  if [ ! -e "$dir/.complete" ]; then
    echo "[setup] creating $dir with $py ($("$py" --version)) for $link"
    rm -rf "$dir"
    "$py" -m venv "$dir"
    [ "${VENV_UPGRADE_PIP:-true}" = false ] || "$dir/bin/pip" install -q --upgrade pip
    "$dir/bin/pip" install -q -r "$req"
    touch "$dir/.complete"
  fi
  exec 9>&-
fi
if [ "$(readlink "$link" 2>/dev/null)" != "$dir" ]; then
  [ -L "$link" ] || rm -rf "$link"
  ln -sfn "$dir" "$link"
fi
