#!/usr/bin/env bash
# Runs `make build-binaries` behind the test stages: started by `make test` before its first stage,
# in its own process group at a lower CPU and I/O priority than the stages (nice 5, best-effort I/O
# 7), so the unit, sanity and lint stages and the first integration tests run while Kubernetes
# compiles. Not the lowest: on a new machine the build is the critical path (the session cluster's
# real node, molecule's 1.37.2, the 1.35 tests wait for it), and at nice 19 beside the two lanes
# Kubernetes 1.37.2 took 986 s instead of about 300 s alone (tests/cluster/test-cluster.md). A stage that
# needs a binary asks tests/cluster/build.sh for it, which waits for the build behind (one flock per output directory)
# or builds it itself; nothing here decides what is built or in which order (the Makefile does).
# With everything cached the build behind ends within a second.
#   hack/build_behind.sh start   start it (its output goes to the log named on stdout)
#   hack/build_behind.sh stop    at the end of `make test`: says how it ended; stops it if it still runs
#   hack/build_behind.sh cached  right after start: exit 0 when it ended within 10 s and passed
#                                (every binary was cached: `make test` then runs three lanes), else 1
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${CLUSTER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubevirtci-dra-cpu}
mkdir -p "$dir"
log=$dir/build-behind.log pidf=$dir/build-behind.pid rcf=$dir/build-behind.rc

running() { [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; }

case ${1:-} in
  start)
    if running; then echo "build behind: already running (pid $(cat "$pidf"), log $log)"; exit 0; fi
    rm -f "$rcf"
    # setsid: its own process group (stop ends the go builds too); nothing of it on this terminal
    setsid nice -n 5 ionice -c 2 -n 7 bash -c \
      'start=$SECONDS; make --no-print-directory build-binaries; rc=$?
       echo "$rc $((SECONDS - start))" > "$1"; exit $rc' _ "$rcf" >"$log" 2>&1 </dev/null &
    echo $! > "$pidf"
    echo "build behind: the test binaries build in the background at a lower priority (log $log)"
    ;;
  stop)
    if running; then
      pgid=$(ps -o pgid= -p "$(cat "$pidf")" | tr -d ' ')
      kill -- -"$pgid" 2>/dev/null || true
      echo "build behind: stopped before it ended (log $log); the next run resumes from the cache"
    elif [ -f "$rcf" ]; then
      read -r rc secs < "$rcf"
      if [ "$rc" = 0 ]; then echo "build behind: done in $secs s (log $log)"
      else echo "build behind: FAILED (exit $rc after $secs s; the stage that needed it built it itself or failed; log $log)"; fi
    fi
    rm -f "$pidf"
    ;;
  cached)
    for _ in $(seq 20); do running || break; sleep 0.5; done
    ! running && [ -f "$rcf" ] && read -r rc _ < "$rcf" && [ "$rc" = 0 ]
    ;;
  *) echo "usage: $0 start|stop|cached" >&2; exit 2 ;;
esac
