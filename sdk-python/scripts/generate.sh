#!/usr/bin/env bash
# generate.sh OUTDIR: the ONE pinned generator command for orch8/_generated.
# Writes the bare package (meta none) into OUTDIR; the config's post-hooks format it with ruff
# and stamp the contract's version and SHA-256 (codegen/spec_stamp.py).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=$here/../.venv/bin
out=$1
export PATH="$venv:$PATH"   # the generator's ruff post-hooks need ruff on PATH
export ORCH8_SPEC="$here/../openapi.yaml" ORCH8_SPEC_STAMP="$here/codegen/spec_stamp.py" \
  ORCH8_GEN_CLIENT="$here/codegen/gen_client.py" ORCH8_SDK_FACTS="$here/../openapi.sdk.json" \
  ORCH8_GEN_CONSTANTS="$here/codegen/gen_constants.py"
want="0.29.1"
have=$("$venv/openapi-python-client" --version | awk '{print $NF}')
[ "$have" = "$want" ] || { echo "generate: need openapi-python-client $want, have $have (run make setup)" >&2; exit 1; }
cd "$here"
"$venv/openapi-python-client" generate --path "$ORCH8_SPEC" --config codegen/config.yaml \
  --custom-template-path codegen/templates --meta none --output-path "$out" \
  --overwrite --fail-on-warning
