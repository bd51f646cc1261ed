"""Each spec-gate check, shown failing on the fault it exists for (and passing without it)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import PY, REPO, load_script

from orch8_server.testing import start_server

breaking = load_script("check_breaking")
spec_hash = load_script("check_spec_hash")
SPEC_TEXT = (REPO / "openapi.yaml").read_text()


def _write(tmp_path: Path, text: str, name: str = "openapi.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _bump(text: str, version: str) -> str:
    old = yaml.load(text, Loader=yaml.CSafeLoader)["info"]["version"]
    return text.replace(f"  version: {old}\n", f"  version: {version}\n", 1)


# Breaking changes ------------------------------------------------------------------------

def test_removed_required_field_is_breaking_until_major_bump_and_changelog(tmp_path: Path) -> None:
    old = "      required: [task_id, status, attempt, attempts_left, next_attempt_at, error_code]"
    assert old in SPEC_TEXT
    mutated = SPEC_TEXT.replace(old, old.replace("attempts_left, ", ""))
    current = _write(tmp_path, mutated)
    problems = breaking.verdict("base", SPEC_TEXT, current, tmp_path / "CHANGELOG.md")
    assert problems and "attempts_left" in problems[0] and "bump info.version to 2.0.0" in problems[0]

    bumped = _write(tmp_path, _bump(mutated, "2.0.0"))
    still = breaking.verdict("base", SPEC_TEXT, bumped, tmp_path / "CHANGELOG.md")
    assert still and "CHANGELOG.md" in still[0]  # a bump alone is not enough
    changelog = _write(tmp_path, "# Changelog\n\n## 2.0.0\n\n- attempts_left is optional\n", "CHANGELOG.md")
    assert breaking.verdict("base", SPEC_TEXT, bumped, changelog) == []


def test_renamed_operation_is_breaking(tmp_path: Path) -> None:
    current = _write(tmp_path, SPEC_TEXT.replace("operationId: getTask\n", "operationId: fetchTask\n"))
    changes = breaking.breaking_changes(SPEC_TEXT, current)
    assert any("operation-id-removed" in c and "getTask" in c for c in changes)


def test_additive_change_is_not_breaking(tmp_path: Path) -> None:
    anchor = "        reason: {type: string, maxLength: 2000}\n"
    assert anchor in SPEC_TEXT
    current = _write(tmp_path, SPEC_TEXT.replace(anchor, anchor + "        requested_by: {type: string}\n", 1))
    assert breaking.breaking_changes(SPEC_TEXT, current) == []


# Spec hash -------------------------------------------------------------------------------

def test_spec_hash_disagreement_is_caught(tmp_path: Path) -> None:
    assert spec_hash.mismatches(REPO) == []
    for _, rel, _ in spec_hash.EMBEDDED:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    _write(tmp_path, SPEC_TEXT + "\n# changed without regenerating\n")
    problems = spec_hash.mismatches(tmp_path)
    assert len(problems) == len(spec_hash.EMBEDDED)


# Generated-code drift --------------------------------------------------------------------

@pytest.fixture
def worktree(tmp_path: Path):
    """A throwaway checkout of HEAD sharing the installed toolchains, never the real tree."""
    tree = tmp_path / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree), "HEAD"], check=True)
    try:
        (tree / ".venv").symlink_to(REPO / ".venv")
        modules = REPO / "sdk-typescript" / "node_modules"
        if modules.exists() and (tree / "sdk-typescript").exists():
            (tree / "sdk-typescript" / "node_modules").symlink_to(modules)
        yield tree
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)


# The worktree's .venv is a link to this repo's: its makes must not reinstall into it.
NO_SETUP = {**os.environ, "ORCH8_NO_SETUP": "1"}


def _packages(tree: Path) -> list[str]:
    return [p for p in ("server", "sdk-python", "sdk-typescript", "sdk-go") if (tree / p / "Makefile").exists()]


def test_drift_check_catches_a_spec_change_without_regeneration(worktree: Path) -> None:
    anchor = "        reason: {type: string, maxLength: 2000}\n"
    spec = worktree / "openapi.yaml"
    spec.write_text(spec.read_text().replace(anchor, anchor + "        requested_by: {type: string}\n", 1))
    for package in _packages(worktree):
        result = subprocess.run(["make", "--no-print-directory", "-C", package, "check-generated"],
                                cwd=worktree, env=NO_SETUP, capture_output=True, text=True, timeout=600)
        output = result.stdout + result.stderr
        assert result.returncode != 0, f"{package} did not see the drift:\n{output[-2000:]}"
        assert re.search(r"make (-C \S+ )?generate", output), f"{package} does not say how to fix it:\n{output[-2000:]}"
    changed = subprocess.run(["git", "-C", str(worktree), "status", "--porcelain", "--", ".",
                              ":!.venv", ":!sdk-typescript/node_modules"], capture_output=True, text=True).stdout
    assert changed.strip() == "M openapi.yaml", f"a drift check wrote into the tree:\n{changed}"


def test_drift_check_catches_a_hand_edited_generated_file(worktree: Path) -> None:
    target = worktree / "server" / "orch8_server" / "_generated" / "models.py"
    target.write_text(target.read_text() + "\n# edited by hand\n")
    result = subprocess.run(["make", "--no-print-directory", "-C", "server", "check-generated"],
                            cwd=worktree, env=NO_SETUP, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "STALE" in result.stderr


# The server against its contract ---------------------------------------------------------

def test_schemathesis_catches_a_response_that_violates_the_schema(tmp_path: Path) -> None:
    # The contract says liveness answers status "healthy"; the server answers "ok".
    old = "        status:\n          type: string\n          enum: [ok]\n"
    assert old in SPEC_TEXT
    lying = _write(tmp_path, SPEC_TEXT.replace(old, old.replace("[ok]", "[healthy]"))
                   .replace("example: {status: ok, checks: {}}", "example: {status: healthy, checks: {}}"))
    with start_server(db=tmp_path / "st.db") as server:
        result = subprocess.run(
            [str(PY.parent / "schemathesis"), "run", str(lying), "--url", server.url,
             "--checks", "response_schema_conformance", "--include-operation-id", "getLiveness",
             "--max-examples", "3"],
            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode != 0, result.stdout[-2000:]
    assert "getLiveness" in result.stdout or "/health/live" in result.stdout


def test_spec_bytes_hash_is_what_the_server_reports() -> None:
    digest = hashlib.sha256((REPO / "openapi.yaml").read_bytes()).hexdigest()
    text = (REPO / "server/orch8_server/_generated/__init__.py").read_text()
    assert digest in text
