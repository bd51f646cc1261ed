"""The pytest fixture `orch8_test_server`, loaded by pytest through the `pytest11` entry point.

def test_nap(orch8_test_server):
    done = orch8_test_server.run_until_final(worker, instance_id=...)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .testing import TestServer


@pytest.fixture
def orch8_test_server() -> Iterator[TestServer]:
    """A fresh `orch8.testing.TestServer` (test clock, temp SQLite) for one test."""
    # Imported here: pytest loads this plugin in every session, most of which never use it.
    from .testing import TestServer

    with TestServer() as server:
        yield server
