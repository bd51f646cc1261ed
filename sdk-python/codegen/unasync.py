"""Write orch8/client.py (Orch8Client) from orch8/async_client.py (AsyncOrch8Client).

Usage: unasync.py [--check]. The two clients differ only by `await` and the httpx class, so
the sync one is derived (as httpcore derives its sync code) by the token table below and
formatted with ruff; `make generate` writes it, `make check-generated` runs --check, which
fails with the fixing command when client.py is stale or was edited by hand.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "orch8"
SOURCE, TARGET = PACKAGE / "async_client.py", PACKAGE / "client.py"
HEADER = (
    "# Generated from orch8/async_client.py by codegen/unasync.py (make generate). DO NOT EDIT.\n"
)

# Whole-word replacements, applied in this order (longer, more specific ones first).
TOKENS = (
    ("AsyncOrch8Client", "Orch8Client"),
    ("AsyncMethods", "SyncMethods"),
    ("AsyncWaiting", "SyncWaiting"),
    ("httpx.AsyncBaseTransport", "httpx.BaseTransport"),
    ("httpx.AsyncClient", "httpx.Client"),
    ("await self._http.aclose()", "self._http.close()"),
    ("await self.aclose()", "self.close()"),
    ("async def aclose", "def close"),
    ("__aenter__", "__enter__"),
    ("__aexit__", "__exit__"),
    ("await asyncio.sleep", "time.sleep"),
    ("import asyncio", "import time"),
    ("async def", "def"),
    ("await ", ""),
    ("the asyncio client", "the synchronous client"),
    ("Asyncio client.", "Blocking client."),
)


def unasync(text: str) -> str:
    for old, new in TOKENS:
        text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(old)}", new, text)
    formatted = subprocess.run(
        [
            str(Path(sys.executable).parent / "ruff"),
            "format",
            "--isolated",
            "--line-length",
            "100",
            "--stdin-filename",
            "client.py",
            "-",
        ],
        input=HEADER + text,
        capture_output=True,
        text=True,
        check=True,
    )
    return formatted.stdout


def main(check: bool) -> int:
    fresh = unasync(SOURCE.read_text())
    if not check:
        TARGET.write_text(fresh)
        return 0
    if TARGET.read_text() != fresh:
        print(
            "check-generated: sdk-python orch8/client.py is STALE: it does not match"
            " orch8/async_client.py\nfix: run 'make -C sdk-python generate' and commit the result",
            file=sys.stderr,
        )
        return 1
    print("check-generated: sdk-python orch8/client.py is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
