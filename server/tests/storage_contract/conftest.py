"""`store`: the backend a contract test runs against (see __init__.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from storage_contract.support import Backend


@pytest.fixture(scope="session")
def contract_pg_url(new_database: Callable[[], str]) -> str:
    """One PostgreSQL database for the suite, emptied before each test."""
    return new_database()


@pytest.fixture
def store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Backend:
    if backend == "sqlite":
        return Backend(backend, str(tmp_path / "contract.db"))
    return Backend(backend, request.getfixturevalue("contract_pg_url"))
