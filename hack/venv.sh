#!/usr/bin/env bash
# A Python virtualenv per interpreter and lock, built once in the cache and linked into the
# checkout, as the test cluster's binaries are:
#   hack/venv.sh <link in the checkout> <python> <lock to install> [other files it reads (-r)]...
# The lock is hash-pinned and complete (requirements-dev.lock, requirements-newest.lock: pip itself
# included, made by hack/installer_lock.py, `make lock`): `pip install --require-hashes` installs
# exactly what it names, and the file's name is kept in the venv's .built-from, against which
# tests/unit/test_toolchain_lock.py compares what is installed.
# The venv is ~/.cache/kubevirtci-dra-cpu/venvs/<link name without its dot>-<hash of the interpreter's version and
# path and of the files' contents> (CLUSTER_CACHE_DIR moves the cache, as for the binaries), made
# under a lock (two clones at once build it once) and marked complete only once pip has finished. A
# fresh clone of the same lock links it instead of installing its packages again (.venv from
# requirements-dev.lock: 122 packages, 208 s; .venv-newest: 54, 127 s; on a 2-core machine with a Go
# build beside it, measured 2026-12-06). Changing a lock changes the hash: a new venv, the old one left for the checkouts
# still using it.
# A link that is a real directory (a venv made in place before this script) is replaced by the link.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 <link> <python> <lock> [files it reads]..." >&2; exit 2; }
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
    # the venv's pip (the interpreter's own) installs the lock, the lock's pip included
    "$dir/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$req"
    basename "$req" >"$dir/.built-from"
    touch "$dir/.complete"
  fi
  exec 9>&-
fi
if [ "$(readlink "$link" 2>/dev/null)" != "$dir" ]; then
  [ -L "$link" ] || rm -rf "$link"
  ln -sfn "$dir" "$link"
fi
