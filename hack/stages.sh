#!/usr/bin/env bash
# Runs make targets one after the other (stopping at the first that fails) and prints each one's
# wall time at the end, passed or not, and under it every line saying SKIPPED (pytest -rs reasons,
# the Makefile's own skips), so no skip goes unnoticed: `make test` and `make check` go through it.
#   hack/stages.sh unit sanity lint ...
set -uo pipefail
cd "$(dirname "$0")/.."
names=() secs=() results=()
summary() {
  printf '\n%-14s %9s  %s\n' stage "wall (s)" result
  local i total=0
  for i in "${!names[@]}"; do
    printf '%-14s %9d  %s\n' "${names[$i]}" "${secs[$i]}" "${results[$i]}"
    total=$((total + secs[i]))
  done
  printf '%-14s %9d  (%d min)\n' total "$total" "$((total / 60))"
  if grep -q SKIPPED "$log"; then
    printf '\nskipped (with reasons):\n'
    grep SKIPPED "$log" | sed 's/^/  /'
  fi
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
for stage in "$@"; do
  start=$SECONDS; from=$(wc -l <"$log")
  make --no-print-directory "$stage" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  names+=("$stage"); secs+=($((SECONDS - start)))
  if [ $rc -ne 0 ]; then results+=("FAILED (exit $rc)"); break; fi
  skips=$(tail -n +"$((from + 1))" "$log" | grep -c SKIPPED)
  if [ "$skips" -gt 0 ]; then results+=("passed, $skips SKIPPED line(s) below"); else results+=(passed); fi
done
summary
exit $rc
