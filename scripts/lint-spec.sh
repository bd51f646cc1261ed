#!/usr/bin/env bash
# Validates openapi.yaml, lints it with the committed redocly ruleset, checks house rules,
# and that no SDK generator names an operation (the spec's x-orch8-sdk says it instead).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/openapi-spec-validator openapi.yaml
(cd scripts/spec-lint && npx --no-install redocly lint ../../openapi.yaml --config redocly.yaml --format stylish)
.venv/bin/python scripts/check_spec_rules.py openapi.yaml
.venv/bin/python scripts/check_generators.py
