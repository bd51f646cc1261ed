#!/usr/bin/env bash
# Runs every package's tests in order and prints one summary line per package.
# Exits non-zero if any package failed; never stops at the first failure.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
passed=()
for p in "$@"; do
  echo "=== test: $p"
  start=$SECONDS
  if make --no-print-directory -C "$p" test; then
    passed+=("$p")
    echo "=== $p: ok ($((SECONDS - start)) s)"
  else
    failed+=("$p")
    echo "=== $p: FAILED ($((SECONDS - start)) s)"
  fi
done
echo
echo "packages: ${#passed[@]} passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
