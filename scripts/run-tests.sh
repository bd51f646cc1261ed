#!/usr/bin/env bash
# Runs every package's tests in order and prints one summary line per package, with its
# duration. Exits non-zero if any package failed; never stops at the first failure.
# A package without a Makefile or without a `test` target counts as FAILED (named), so a
# package can never drop out of `make test` silently.
# The last line is always `packages: N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
passed=()
summary=()

# True when <dir>/Makefile defines <target>: make's rule database, nothing is run (the
# dummy goal `:` makes make exit 2, hence the `|| true` under pipefail).
has_target() {
  { make --no-print-directory -C "$1" -pRrq : 2>/dev/null || true; } | grep -q "^$2:"
}

for p in "$@"; do
  echo "=== test: $p"
  start=$SECONDS
  if [ ! -f "$p/Makefile" ]; then
    failed+=("$p")
    summary+=("$(printf '%-16s FAILED (no %s/Makefile)' "$p" "$p")")
    echo "=== $p: FAILED: there is no $p/Makefile" >&2
    continue
  fi
  if ! has_target "$p" test; then
    failed+=("$p")
    summary+=("$(printf '%-16s FAILED (no test target)' "$p")")
    echo "=== $p: FAILED: $p/Makefile has no 'test' target" >&2
    continue
  fi
  if make --no-print-directory -C "$p" test; then
    passed+=("$p")
    status=ok
  else
    failed+=("$p")
    status=FAILED
  fi
  took=$((SECONDS - start))
  echo "=== $p: $status ($took s)"
  summary+=("$(printf '%-16s %-7s %5d s' "$p" "$status" "$took")")
done
echo
printf '%s\n' "${summary[@]}"
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "packages: ${#passed[@]} passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
