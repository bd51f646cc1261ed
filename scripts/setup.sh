#!/usr/bin/env bash
# Creates the shared Python virtualenv (.venv) and the spec-lint toolchain.
# Idempotent: re-runs only when a requirements or lock file changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# curl and jq drive the seed's shell examples in the tests.
missing=()
for tool in curl jq; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${missing[*]} with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: please install ${missing[*]}" >&2
    exit 1
  fi
fi

# PostgreSQL binaries (initdb, pg_ctl): the server tests start a throwaway cluster.
# Debian installs them in /usr/lib/postgresql/<version>/bin, off PATH.
if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing postgresql with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    echo "setup: please install PostgreSQL (initdb, pg_ctl), e.g. apt-get install postgresql" >&2
    exit 1
  fi
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($python --version)"
  "$python" -m venv .venv
fi

stamp=.venv/.orch8-setup
want=$(cat server/requirements*.txt server/pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing server and dev requirements"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r server/requirements-dev.txt
  .venv/bin/pip install -q --no-deps -e server
  echo "$want" > "$stamp"
fi

# Bytecode for the repo's own Python (the editable server and SDK, the conformance runner and
# adapters, bench): with PYTHONDONTWRITEBYTECODE set, as in CI, every process would compile
# them from source again, and make test starts hundreds (a server start 0.79 -> 0.63 s of CPU,
# `import orch8` 1.1 -> 0.7 s). Only changed files are recompiled; a file that does not
# compile is left to lint and the tests to report.
.venv/bin/python -m compileall -q -x '/(node_modules|\.venv)/' server sdk-python conformance bench scripts \
  >/dev/null 2>&1 || true

lint=scripts/spec-lint
lstamp=$lint/node_modules/.orch8-setup
lwant=$(sha256sum "$lint/package-lock.json" | cut -c1-16)
if [ ! -f "$lstamp" ] || [ "$(cat "$lstamp")" != "$lwant" ]; then
  echo "setup: installing the spec linter (npm ci)"
  (cd "$lint" && npm ci --silent --no-audit --no-fund)
  echo "$lwant" > "$lstamp"
fi
