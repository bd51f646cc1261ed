#!/usr/bin/env bash
# Runs every package's tests and prints one summary line per package, with its duration.
# Exits non-zero if any package failed; never stops at the first failure.
# A package without a Makefile or without a `test` target counts as FAILED (named), so a
# package can never drop out of `make test` silently.
# The last line is always `packages: N passed, N failed`.
#
# Packages run side by side, ORCH8_TEST_JOBS at a time (default 2): most of their time is
# spent waiting on leases, timers and subprocesses, not computing. The longest start first
# so the short ones fill the gaps. Each package's output goes to a log printed whole when
# the package ends, so two packages' lines never interleave. ORCH8_TEST_JOBS=1 runs them
# one after another.
set -uo pipefail
cd "$(dirname "$0")/.."
# Longest first (by their times in a fresh-clone run); any other package starts after these.
LONGEST_FIRST=(conformance server sdk-python sdk-go sdk-typescript bench)
slots=${ORCH8_TEST_JOBS:-2}
[[ $slots =~ ^[1-9][0-9]*$ ]] || { echo "ORCH8_TEST_JOBS must be a positive number, not '$slots'" >&2; exit 2; }
logs=$(mktemp -d "${TMPDIR:-/tmp}/orch8-tests-XXXXXX")
failed=()
passed=()
declare -A line=()    # package -> its summary line
declare -A running=() # pid -> package
declare -A began=()   # package -> $SECONDS at its start
declare -A seen=()

# True when <dir>/Makefile defines <target>: make's rule database, nothing is run (the
# dummy goal `:` makes make exit 2, hence the `|| true` under pipefail).
has_target() {
  { make --no-print-directory -C "$1" -pRrq : 2>/dev/null || true; } | grep -q "^$2:"
}

fail_early() { # package, reason for the summary, message
  failed+=("$1")
  line[$1]=$(printf '%-16s FAILED (%s)' "$1" "$2")
  echo "=== $1: FAILED: $3" >&2
}

# Packages in start order; those that cannot run are failed here, before anything starts.
queue=()
for p in "${LONGEST_FIRST[@]}" "$@"; do
  [[ " $* " == *" $p "* && -z ${seen[$p]:-} ]] || continue
  seen[$p]=1
  if [ ! -f "$p/Makefile" ]; then
    fail_early "$p" "no $p/Makefile" "there is no $p/Makefile"
  elif ! has_target "$p" test; then
    fail_early "$p" "no test target" "$p/Makefile has no 'test' target"
  else
    queue+=("$p")
  fi
done

# Each package in its own process group (set -m), so an interrupt stops all it started.
set -m
stop_all() {
  for pid in "${!running[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  rm -rf "$logs"
  exit 130
}
trap stop_all INT TERM

start() {
  local p=$1
  echo "=== start: $p"
  began[$p]=$SECONDS
  (
    make --no-print-directory -C "$p" test >"$logs/$p.log" 2>&1
    echo $? >"$logs/$p.done"
  ) &
  running[$!]=$p
}

# Prints the log of every package that has ended since the last call, whole.
report_ended() {
  local pid p rc status took
  for pid in "${!running[@]}"; do
    p=${running[$pid]}
    if [ -f "$logs/$p.done" ]; then
      wait "$pid" 2>/dev/null
      rc=$(<"$logs/$p.done")
    elif ! kill -0 "$pid" 2>/dev/null; then # killed before it could write its status
      rc=1
    else
      continue
    fi
    unset "running[$pid]"
    took=$((SECONDS - began[$p]))
    if [ "$rc" -eq 0 ]; then
      status=ok
      passed+=("$p")
    else
      status=FAILED
      failed+=("$p")
    fi
    echo "=== test: $p"
    cat "$logs/$p.log"
    echo "=== $p: $status ($took s)"
    line[$p]=$(printf '%-16s %-7s %5d s' "$p" "$status" "$took")
  done
}

for p in "${queue[@]}"; do
  while [ ${#running[@]} -ge "$slots" ]; do
    wait -n
    report_ended
  done
  start "$p"
done
while [ ${#running[@]} -gt 0 ]; do
  wait -n
  report_ended
done
rm -rf "$logs"

echo
for p in "$@"; do echo "${line[$p]}"; done
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "packages: ${#passed[@]} passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
