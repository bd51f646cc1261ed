#!/usr/bin/env bash
# The spec gate (make check-spec): everything that must hold when openapi.yaml changes.
#  1. validation + lint (committed ruleset) + house rules
#  2. generated code of the server and every SDK is fresh (regenerated in temp dirs)
#  3. no breaking change against the previous commit and the last release, unless the
#     major version is bumped and CHANGELOG.md says so
#  4. the server and every SDK embed the hash of this exact openapi.yaml
#  5. schemathesis (examples, coverage, fuzzing, stateful with links) against the live server
#  6. self-tests proving each check above fails on the fault it exists for
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
step() {
  local name=$1; shift
  echo "--- check-spec: $name"
  if ! "$@"; then failed+=("$name"); fi
}
step "lint" scripts/lint-spec.sh
step "generated code" make --no-print-directory check-generated
step "breaking changes" .venv/bin/python scripts/check_breaking.py
step "spec hash" .venv/bin/python scripts/check_spec_hash.py
step "schemathesis" .venv/bin/python -m pytest -q -p no:cacheprovider server/tests/test_contract.py
step "self-tests" .venv/bin/python -m pytest -q -p no:cacheprovider scripts/tests
if [ ${#failed[@]} -gt 0 ]; then
  echo "check-spec: FAILED: ${failed[*]}" >&2
  echo "see docs/changing-the-spec.md for what each check means and how to fix it" >&2
  exit 1
fi
echo "check-spec: all spec checks passed"
