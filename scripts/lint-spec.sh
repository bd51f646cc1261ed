#!/usr/bin/env bash
# Validates openapi.yaml, lints it with the committed redocly ruleset, checks house rules.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/openapi-spec-validator openapi.yaml
(cd scripts/spec-lint && npx --no-install redocly lint ../../openapi.yaml --config redocly.yaml --format stylish)
.venv/bin/python scripts/check_spec_rules.py openapi.yaml
