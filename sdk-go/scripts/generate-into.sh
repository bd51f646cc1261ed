#!/usr/bin/env bash
# generate-into.sh OUT_DIR
# Runs this module's go:generate directives in a scratch copy of the module (next to a copy
# of ../openapi.yaml and ../openapi.sdk.json) and copies every generated file (api/*.gen.go, client_gen.go) into
# OUT_DIR with the same layout. The working tree is never written, so check-generated can
# diff the result against the committed files.
set -euo pipefail
out=${1:?usage: generate-into.sh OUT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/sdk-go"
cp "$here/../openapi.yaml" "$here/../openapi.sdk.json" "$scratch/"
(cd "$here" && tar --exclude=./api --exclude=./bin --exclude=./dist --exclude=./client_gen.go -cf - .) | tar -xf - -C "$scratch/sdk-go"
mkdir -p "$scratch/sdk-go/api"
(cd "$scratch/sdk-go" && go generate .)
mkdir -p "$out/api"
cp "$scratch/sdk-go/api/"*.gen.go "$out/api/"
cp "$scratch/sdk-go/client_gen.go" "$out/"
