#!/usr/bin/env bash
# Builds the Go-pinned spec tools (scripts/tools/go.mod `tool` lines) into .tools/bin.
# Idempotent: rebuilds only when go.mod or go.sum changed.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.tools/bin
stamp=$bin/.stamp
want=$(cat scripts/tools/go.mod scripts/tools/go.sum | sha256sum | cut -c1-16)
if [ -x "$bin/oasdiff" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
mkdir -p "$bin"
echo "setup: building oasdiff (pinned in scripts/tools/go.mod)"
(cd scripts/tools && go build -o "../../$bin/oasdiff" github.com/oasdiff/oasdiff)
echo "$want" > "$stamp"
