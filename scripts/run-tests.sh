#!/usr/bin/env bash
# Runs the checks of `make test` (after its setup) and prints one summary line per check,
# with its duration. Each argument is a check: `lint` and `check-spec` are root targets
# (`make lint`, `make check-spec`), every other name is a package whose `make -C <pkg> test`
# runs. Exits non-zero if any check failed; never stops at the first failure.
# A package without a Makefile or without a `test` target counts as FAILED (named), so a
# package can never drop out of `make test` silently.
# The last line is always `checks: N passed, N failed (S s after set-up)`.
#
# Checks run side by side, ORCH8_TEST_JOBS at a time (default 2): most of their time is
# spent waiting on leases, timers and subprocesses, not computing. Three at a time was
# measured and is not faster: a fresh-clone run kept the 2 cores 97% busy, schemathesis
# (one client and one server trading requests) took 445 s instead of ~80 s, and a timing
# scenario of the conformance matrix failed. Lint and the spec gate are checks of the pool
# too, not steps before it: alone they kept a core idle for minutes before any package
# started. The longest start first so the short ones fill the gaps. Each check's output
# goes to a log printed whole when it ends, so two checks' lines never interleave.
# ORCH8_TEST_JOBS=1 runs them one after another.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT_CHECKS=(lint check-spec)
# Longest first (by their times in a fresh-clone run: 869, 758, 574, 558, 230, 143, 90 and
# 66 s with three at a time); any other check starts after these.
LONGEST_FIRST=(conformance server check-spec sdk-python sdk-typescript sdk-go lint bench)
slots=${ORCH8_TEST_JOBS:-2}
[[ $slots =~ ^[1-9][0-9]*$ ]] || { echo "ORCH8_TEST_JOBS must be a positive number, not '$slots'" >&2; exit 2; }
logs=$(mktemp -d "${TMPDIR:-/tmp}/orch8-tests-XXXXXX")
failed=()
passed=()
declare -A line=()    # check -> its summary line
declare -A running=() # pid -> check
declare -A began=()   # check -> $SECONDS at its start
declare -A seen=()

# True when <dir>/Makefile defines <target>: make's rule database, nothing is run (the
# dummy goal `:` makes make exit 2, hence the `|| true` under pipefail).
has_target() {
  { make --no-print-directory -C "$1" -pRrq : 2>/dev/null || true; } | grep -q "^$2:"
}

is_root_check() { [[ " ${ROOT_CHECKS[*]} " == *" $1 "* ]]; }

fail_early() { # check, reason for the summary, message
  failed+=("$1")
  line[$1]=$(printf '%-16s FAILED (%s)' "$1" "$2")
  echo "=== $1: FAILED: $3" >&2
}

# Checks in start order; those that cannot run are failed here, before anything starts.
queue=()
for c in "${LONGEST_FIRST[@]}" "$@"; do
  [[ " $* " == *" $c "* && -z ${seen[$c]:-} ]] || continue
  seen[$c]=1
  if is_root_check "$c"; then
    if has_target . "$c"; then queue+=("$c"); else fail_early "$c" "no $c target" "the Makefile has no '$c' target"; fi
  elif [ ! -f "$c/Makefile" ]; then
    fail_early "$c" "no $c/Makefile" "there is no $c/Makefile"
  elif ! has_target "$c" test; then
    fail_early "$c" "no test target" "$c/Makefile has no 'test' target"
  else
    queue+=("$c")
  fi
done

# Each check in its own process group (set -m), so an interrupt stops all it started.
set -m
stop_all() {
  for pid in "${!running[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  rm -rf "$logs"
  exit 130
}
trap stop_all INT TERM

start() {
  local c=$1 cmd
  if is_root_check "$c"; then cmd=(make --no-print-directory "$c"); else cmd=(make --no-print-directory -C "$c" test); fi
  # The spec's validation and lint are check-spec's first step: lint skips them when both run.
  [[ $c == lint && " ${queue[*]} " == *" check-spec "* ]] && cmd+=(SPEC_LINTED=1)
  echo "=== start: $c"
  began[$c]=$SECONDS
  (
    "${cmd[@]}" >"$logs/$c.log" 2>&1
    echo $? >"$logs/$c.done"
  ) &
  running[$!]=$c
}

# Prints the log of every check that has ended since the last call, whole.
report_ended() {
  local pid c rc status took
  for pid in "${!running[@]}"; do
    c=${running[$pid]}
    if [ -f "$logs/$c.done" ]; then
      wait "$pid" 2>/dev/null
      rc=$(<"$logs/$c.done")
    elif ! kill -0 "$pid" 2>/dev/null; then # killed before it could write its status
      rc=1
    else
      continue
    fi
    unset "running[$pid]"
    took=$((SECONDS - began[$c]))
    if [ "$rc" -eq 0 ]; then
      status=ok
      passed+=("$c")
    else
      status=FAILED
      failed+=("$c")
    fi
    echo "=== test: $c"
    cat "$logs/$c.log"
    echo "=== $c: $status ($took s, ended at $SECONDS s)"
    line[$c]=$(printf '%-16s %-7s %5d s' "$c" "$status" "$took")
  done
}

for c in "${queue[@]}"; do
  while [ ${#running[@]} -ge "$slots" ]; do
    wait -n
    report_ended
  done
  start "$c"
done
while [ ${#running[@]} -gt 0 ]; do
  wait -n
  report_ended
done
rm -rf "$logs"

echo
for c in "$@"; do echo "${line[$c]}"; done
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "checks: ${#passed[@]} passed, ${#failed[@]} failed ($SECONDS s after set-up)"
[ ${#failed[@]} -eq 0 ]
