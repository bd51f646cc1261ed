#!/usr/bin/env bash
# dist.sh: builds the release artefacts (sdist + wheel) into sdk-python/dist/ and checks them.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=$here/../.venv/bin
cd "$here"
rm -rf dist build
# Isolated build: the artefact depends only on pyproject.toml, not on the shared venv.
log=$(mktemp)
"$venv/python" -m build --sdist --wheel --outdir dist . >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
rm -rf build
"$venv/twine" check --strict dist/*
ls -1 dist | sed "s|^|dist: sdk-python/dist/|"
