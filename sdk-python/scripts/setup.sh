#!/usr/bin/env bash
# Installs orch8 (editable) and its pinned dev tools into the shared ../.venv. Idempotent: a
# stamp inside the venv keyed on pyproject + requirements skips the work when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=../.venv
# A checkout that borrows another tree's venv (the spec gate's git worktree, whose .venv
# is a link) must not reinstall orch8 from itself: the venv would then point at a tree
# that is deleted after the test.
if [ -n "${ORCH8_NO_SETUP:-}" ] && [ -x "$venv/bin/python" ]; then
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "sdk-python setup: creating $venv (the root 'make setup' adds the server)"
  "${PYTHON:-python3}" -m venv "$venv"
fi
stamp=$venv/.orch8-sdk-python-setup
want=$(cat pyproject.toml requirements-dev.txt | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "sdk-python setup: installing orch8 and its dev requirements"
"$venv/bin/pip" install -q -r requirements-dev.txt
"$venv/bin/pip" install -q -e .
echo "$want" > "$stamp"
