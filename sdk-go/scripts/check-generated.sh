#!/usr/bin/env bash
# check-generated.sh: regenerates api/ and client_gen.go in a scratch copy and fails with
# the fixing command when the committed files differ (generated code is never hand-edited).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$here/scripts/generate-into.sh" "$out" >/dev/null
mkdir -p "$out/committed/api"
cp "$here/api/"*.gen.go "$out/committed/api/"
cp "$here/client_gen.go" "$out/committed/"
mkdir -p "$out/fresh" && mv "$out/api" "$out/client_gen.go" "$out/fresh/"
if ! diff -r -u "$out/committed" "$out/fresh" > "$out/diff"; then
  echo "check-generated: sdk-go is STALE: api/ or client_gen.go does not match openapi.yaml" >&2
  head -n 40 "$out/diff" >&2
  echo "fix: run 'make -C sdk-go generate' and commit the result" >&2
  exit 1
fi
echo "check-generated: sdk-go is up to date (api/, client_gen.go)"
