#!/usr/bin/env bash
# Runs make targets as stages and prints each one's wall time at the end, passed or not, and under
# it every line saying SKIPPED (pytest -rs reasons, the Makefile's own skips), so no skip goes
# unnoticed: `make test` and `make check` go through it.
#   hack/stages.sh unit sanity lint                      one lane: one stage after the other
#   hack/stages.sh unit sanity lint --lane integration   two lanes side by side
# A lane runs its stages one after the other and stops at its first failure; lanes run at the same
# time (the integration suite mostly waits on its clusters: one lane of it keeps about a third of the
# 2 CPUs busy, measured; `make test` runs three lanes when every binary is cached) and a
# failed lane does not stop the others, so every cluster is taken down by the stage that started
# it. With one lane the output streams as it comes; with more, each stage's output is kept in
# tests/output/stages/<stage>.log (named when the stage starts, to follow it with tail -f) and
# printed in one piece when the stage ends, so the lanes' lines never interleave.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
outdir=tests/output/stages
lanes=() cur=""
for a in "$@"; do
  if [ "$a" = --lane ]; then lanes+=("$cur"); cur=""; else cur="${cur:+$cur }$a"; fi
done
lanes+=("$cur")
rm -rf "$outdir" && mkdir -p "$outdir"
t0=$SECONDS

# one lane: its stages in order; writes "<stage> <lane> <start offset> <secs> <rc>" rows to its file
run_lane() {
  local lane=$1 stages=$2 stream=$3 stage start rc
  for stage in $stages; do
    start=$SECONDS
    if [ "$stream" = 1 ]; then
      make --no-print-directory "$stage" 2>&1 | tee "$outdir/$stage.log"
      rc=${PIPESTATUS[0]}
    else
      echo "[stages] $stage started (lane $lane; output: $outdir/$stage.log)"
      make --no-print-directory "$stage" >"$outdir/$stage.log" 2>&1 </dev/null
      rc=$?
      {
        flock 9
        printf '\n===== %s (lane %s): %s after %d s =====\n' "$stage" "$lane" \
          "$([ $rc -eq 0 ] && echo passed || echo "FAILED (exit $rc)")" $((SECONDS - start))
        cat "$outdir/$stage.log"
        printf '===== end of %s =====\n' "$stage"
      } 9>"$outdir/.print.lock"
    fi
    echo "$stage $lane $((start - t0)) $((SECONDS - start)) $rc" >>"$outdir/.lane$lane.rows"
    [ "$rc" -eq 0 ] || return "$rc"
  done
}

stream=0
[ ${#lanes[@]} -eq 1 ] && stream=1
pids=()
for i in "${!lanes[@]}"; do
  run_lane $((i + 1)) "${lanes[$i]}" $stream &
  pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do
  wait "$pid" || { r=$?; [ $rc -ne 0 ] || rc=$r; }
done
wall=$((SECONDS - t0))

printf '\n%-22s %4s %9s %9s  %s\n' stage lane "start (s)" "wall (s)" result
sum=0
for i in "${!lanes[@]}"; do
  [ -f "$outdir/.lane$((i + 1)).rows" ] || continue
  while read -r stage lane start secs src; do
    if [ "$src" -ne 0 ]; then result="FAILED (exit $src)"
    else
      skips=$(grep -c SKIPPED "$outdir/$stage.log")
      if [ "$skips" -gt 0 ]; then result="passed, $skips SKIPPED line(s) below"; else result=passed; fi
    fi
    printf '%-22s %4s %9d %9d  %s\n' "$stage" "$lane" "$start" "$secs" "$result"
    sum=$((sum + secs))
  done <"$outdir/.lane$((i + 1)).rows"
done
printf '%-22s %4s %9s %9d  (%d min; the stages one after the other: %d s)\n' wall "" "" "$wall" \
  "$((wall / 60))" "$sum"
# grep the files itself: `cat | grep -q` under pipefail fails when grep stops at its first match and
# cat, still writing a later log, gets SIGPIPE (the listing then went missing under load)
if grep -qs SKIPPED "$outdir"/*.log; then
  printf '\nskipped (with reasons):\n'
  for f in "$outdir"/*.log; do grep SKIPPED "$f" | sed "s|^|  $(basename "$f" .log): |"; done
fi
exit $rc
