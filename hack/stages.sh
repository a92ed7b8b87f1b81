#!/usr/bin/env bash
# Runs make targets one after the other (stopping at the first that fails) and prints each one's
# wall time at the end, passed or not: `make test` and `make check` go through it.
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
}
rc=0
for stage in "$@"; do
  start=$SECONDS
  make --no-print-directory "$stage"
  rc=$?
  names+=("$stage"); secs+=($((SECONDS - start)))
  if [ $rc -ne 0 ]; then results+=("FAILED (exit $rc)"); break; fi
  results+=(passed)
done
summary
exit $rc
