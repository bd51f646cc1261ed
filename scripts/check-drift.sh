#!/usr/bin/env bash
# check-drift.sh NAME COMMITTED_DIR FIX_COMMAND GENERATE_COMMAND...
# Runs GENERATE_COMMAND with $OUT set to a fresh temp dir, diffs the result against
# COMMITTED_DIR and fails with the command that fixes the drift. Never writes into the tree.
set -euo pipefail
name=$1 committed=$2 fix=$3
shift 3
OUT=$(mktemp -d)
export OUT
trap 'rm -rf "$OUT"' EXIT
"$@" >/dev/null
if ! diff -r -u --exclude=__pycache__ "$committed" "$OUT" > "$OUT.diff" 2>&1; then
  echo "check-generated: $name is STALE: $committed does not match openapi.yaml" >&2
  head -n 40 "$OUT.diff" >&2
  echo "fix: run '$fix' and commit the result" >&2
  rm -f "$OUT.diff"
  exit 1
fi
rm -f "$OUT.diff"
echo "check-generated: $name is up to date"
