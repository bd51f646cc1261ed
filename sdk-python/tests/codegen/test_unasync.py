"""orch8/client.py is exactly what codegen/unasync.py derives from orch8/async_client.py.

Not in tests/unit: those also run against the installed wheel, where codegen/ is absent.
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest

import orch8
from orch8 import AsyncOrch8Client, Orch8Client

CODEGEN = Path(__file__).resolve().parents[2] / "codegen" / "unasync.py"
_spec = importlib.util.spec_from_file_location("unasync", CODEGEN)
assert _spec is not None and _spec.loader is not None
unasync = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(unasync)


def test_the_sync_client_is_the_async_one_without_await() -> None:
    assert unasync.main(check=True) == 0


def test_a_hand_edit_of_the_sync_client_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = tmp_path / "client.py"
    edited.write_text(unasync.TARGET.read_text().replace("time.sleep(", "time.sleep(0 * "))
    monkeypatch.setattr(unasync, "TARGET", edited)
    assert unasync.main(check=True) == 1
    assert "make -C sdk-python generate" in capsys.readouterr().err


def test_both_clients_have_the_same_public_methods() -> None:
    def public(cls: type) -> set[str]:
        return {n for n, _ in inspect.getmembers(cls, callable) if not n.startswith("_")}

    assert public(Orch8Client) - {"close"} == public(AsyncOrch8Client) - {"aclose"}
    # x-orch8-sdk aliases are generated methods of both
    assert Orch8Client.heartbeat is Orch8Client.heartbeat_task
    assert AsyncOrch8Client.ready is AsyncOrch8Client.health_ready
    assert orch8.Orch8Client.__module__ == "orch8.client"
