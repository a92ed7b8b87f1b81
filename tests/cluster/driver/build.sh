#!/usr/bin/env bash
# Builds the test driver (tests/cluster/driver): static binaries `dracpu`, `devices` and the test
# nodes' runc wrapper `runc-cpumap` into a cache
# directory and prints that directory on stdout (logs on stderr). Usage: build.sh [DIR]
# DIR defaults to ~/.cache/kubevirtci-dra-cpu/driver/<hash of go.mod, go.sum and every *.go>; a DIR
# holding both binaries is reused without building. GOFLAGS=-mod=mod, CGO_ENABLED=0, -trimpath.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
if [[ -n "${1:-}" ]]; then
  OUT="$1"
else
  HASH="$( { sha256sum go.mod go.sum; find . -name '*.go' -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; } \
           | sha256sum | cut -c1-12)"
  OUT="${XDG_CACHE_HOME:-$HOME/.cache}/kubevirtci-dra-cpu/driver/$HASH"
fi
if [[ -x "$OUT/dracpu" && -x "$OUT/devices" && -x "$OUT/runc-cpumap" ]]; then
  echo "test driver: cached in $OUT" >&2
  echo "$OUT"
  exit 0
fi
command -v go >/dev/null || { echo "test driver: go is not installed" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
TMP="$(mktemp -d "$(dirname "$OUT")/.build.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
start=$SECONDS
echo "test driver: building into $OUT ($(go version))" >&2
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$TMP/" ./cmd/dracpu ./cmd/devices ./cmd/runc-cpumap >&2
mkdir -p "$OUT"
mv -f "$TMP/dracpu" "$TMP/devices" "$TMP/runc-cpumap" "$OUT/"
echo "test driver: built in $((SECONDS - start)) s" >&2
echo "$OUT"
