"""ORCH8_SERVER is split into a command as shlex.split does, in every SDK: the cases are
shared (conformance/shell-words-cases.json) with sdk-typescript and sdk-go."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from orch8._test_server import server_command

# scripts/runtimes.py runs a copy of tests/unit outside the repo and names the spec.
SPEC = Path(os.environ.get("ORCH8_SPEC") or Path(__file__).resolve().parents[3] / "openapi.yaml")
CASES = json.loads((SPEC.parent / "conformance" / "shell-words-cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["value"] for c in CASES])
def test_orch8_server_is_split_as_shlex_does(case: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH8_SERVER", case["value"])
    if case.get("error"):
        with pytest.raises(ValueError, match=r"ORCH8_SERVER=.*unclosed"):
            server_command()
    else:
        assert server_command() == case["words"]
