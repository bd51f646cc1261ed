"""The reference server's keys file for scenarios with scoped keys (P-AUTH-2..4).

A scenario's `server.keys` lists keys with their secrets in the clear (test data); the
file the server reads holds only their SHA-256 (P-AUTH-4), plus an `admin` key of the
runner's own, with which it enqueues and reads back in any tenant (P-TEN-2).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path

RUNNER_KEY_ID = "conformance-runner"
_LISTS = ("tenants", "queues", "handlers")


class KeysFile:
    """`write()` (re)writes the file; the server re-reads it on SIGHUP."""

    def __init__(self, path: Path, keys: list[dict]) -> None:
        self.path = path
        self.runner_secret = secrets.token_urlsafe(24)
        self.secrets = {k["id"]: k["secret"] for k in keys}
        self.write(keys)

    def write(self, keys: list[dict]) -> None:
        self.secrets.update((k["id"], k["secret"]) for k in keys)
        entries = [{"id": RUNNER_KEY_ID, "secret": self.runner_secret, "role": "admin"}, *keys]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(_entry(k) for k in entries))
        tmp.replace(self.path)  # the server never reads a half-written file

    def secret(self, key_id: str) -> str:
        if key_id not in self.secrets:
            raise KeyError(f"no key {key_id!r} in the scenario's server.keys")
        return self.secrets[key_id]


def _entry(key: dict) -> str:
    """One `[[key]]` table; json.dumps quotes strings the way TOML's basic strings need."""
    lines = [
        "[[key]]",
        f"id = {json.dumps(key['id'])}",
        f"sha256 = {json.dumps(hashlib.sha256(key['secret'].encode()).hexdigest())}",
        f"role = {json.dumps(key['role'])}",
    ]
    if "tenant" in key:
        lines.append(f"tenant = {json.dumps(key['tenant'])}")
    lines += [f"{name} = {json.dumps(key[name])}" for name in _LISTS if name in key]
    return "\n".join(lines) + "\n\n"
