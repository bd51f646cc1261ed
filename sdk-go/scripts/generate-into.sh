#!/usr/bin/env bash
# generate-into.sh OUT_DIR
# Runs this module's go:generate directives in a scratch copy of the module (next to a copy
# of ../openapi.yaml) and copies the generated api/ files into OUT_DIR. The working tree is
# never written, so check-generated can diff the result against the committed api/.
set -euo pipefail
out=${1:?usage: generate-into.sh OUT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/sdk-go"
cp "$here/../openapi.yaml" "$scratch/openapi.yaml"
(cd "$here" && tar --exclude=./api --exclude=./bin -cf - .) | tar -xf - -C "$scratch/sdk-go"
mkdir -p "$scratch/sdk-go/api"
(cd "$scratch/sdk-go" && go generate .)
cp "$scratch/sdk-go/api/"*.gen.go "$out/"
