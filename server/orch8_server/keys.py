"""API keys: the env keys and the TOML keys file, looked up by digest (P-AUTH-4).

A keys file holds one `[[key]]` table per key:

    [[key]]
    id = "team-a-worker"
    sha256 = "<hex SHA-256 of the secret>"   # the secret itself is never stored
    role = "worker"                          # worker, producer, operator, admin, metrics
    tenant = "team-a"                        # default "default"
    tenants = ["team-a-staging"]             # optional: others X-Tenant-Id may select; ["*"] = any
    queues = ["images"]                      # worker keys only, optional
    handlers = ["resize"]                    # worker keys only, optional

Errors name the file and the entry (its index and id), never a secret or a digest.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orch8_server.principal import DEFAULT_TENANT, ROLES, TENANT_RE, Principal

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser from PyPI
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

log = logging.getLogger("orch8.auth")

ENV_KEY_ID = "env"  # P-AUTH-4: ORCH8_API_KEYS / --api-key are admin keys with this id
KEY_ID_RE = re.compile(r"[A-Za-z0-9_.:@-]{1,128}")
_DIGEST_RE = re.compile(r"[0-9a-f]{64}")
_FIELDS = {"id", "sha256", "role", "tenant", "tenants", "queues", "handlers"}


class KeysFileError(ValueError):
    """The keys file does not load; the message names the file and the entry."""


def digest(secret: str) -> bytes:
    """The SHA-256 of a presented key, the only form in which keys are compared."""
    return hashlib.sha256(secret.encode()).digest()


@dataclass(frozen=True, slots=True)
class KeyTable:
    """Principals by key digest, loaded at once so a reload swaps one reference."""

    by_digest: dict[bytes, tuple[bytes, Principal]]  # presented digest -> (stored, who)

    def lookup(self, token: str) -> Principal | None:
        """P-AUTH-4: the principal of `token`, comparing digests in constant time."""
        presented = digest(token)
        # The hash lookup is keyed by a digest no caller can steer byte by byte; the final
        # comparison of the stored digest is constant-time all the same.
        found = self.by_digest.get(presented)
        if found is None:
            return None
        stored, principal = found
        return principal if hmac.compare_digest(stored, presented) else None


def _names(path: Path, where: str, entry: dict[str, Any], field: str) -> frozenset[str] | None:
    value = entry.get(field)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise KeysFileError(f"{path}: {where}: {field} must be a list of non-empty strings")
    return frozenset(value)


def _entry(path: Path, index: int, entry: Any) -> tuple[bytes, Principal]:
    where = f"key #{index + 1}"
    if not isinstance(entry, dict):
        raise KeysFileError(f"{path}: {where}: must be a [[key]] table")
    key_id = entry.get("id")
    if not isinstance(key_id, str) or not KEY_ID_RE.fullmatch(key_id):
        raise KeysFileError(f"{path}: {where}: id must match {KEY_ID_RE.pattern}")
    where = f"key #{index + 1} (id {key_id!r})"
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise KeysFileError(f"{path}: {where}: unknown field(s) {', '.join(unknown)}")
    sha = entry.get("sha256")
    if not isinstance(sha, str) or not _DIGEST_RE.fullmatch(sha.lower()):
        raise KeysFileError(f"{path}: {where}: sha256 must be 64 hex digits")
    role = entry.get("role")
    if role not in ROLES:
        raise KeysFileError(f"{path}: {where}: role must be one of {', '.join(ROLES)}")
    tenant = entry.get("tenant", DEFAULT_TENANT)
    if not isinstance(tenant, str) or not TENANT_RE.fullmatch(tenant):
        raise KeysFileError(f"{path}: {where}: tenant must match ^{TENANT_RE.pattern}$")
    tenants = _names(path, where, entry, "tenants")
    if tenants is not None and "*" in tenants:
        if tenants != {"*"}:
            raise KeysFileError(f"{path}: {where}: tenants ['*'] may not list other tenants")
        tenants = None  # any
    elif tenants is not None:
        bad = sorted(t for t in tenants if not TENANT_RE.fullmatch(t))
        if bad:
            raise KeysFileError(f"{path}: {where}: tenants {bad} must match ^{TENANT_RE.pattern}$")
    else:
        tenants = frozenset()
    if role == "admin":
        tenants = None  # P-TEN-2: admin acts in any tenant
    queues = _names(path, where, entry, "queues")
    handlers = _names(path, where, entry, "handlers")
    if role != "worker" and (queues is not None or handlers is not None):
        raise KeysFileError(f"{path}: {where}: queues and handlers are for worker keys only")
    principal = Principal(key_id, role, tenant, tenants, queues, handlers)
    return bytes.fromhex(sha), principal


def load_keys_file(path: str | Path) -> dict[bytes, Principal]:
    """Parse and fully validate a keys file (P-AUTH-4); raise KeysFileError naming the entry."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KeysFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        # The decoder's message names a line and column, never the line's text.
        raise KeysFileError(f"{path}: not valid TOML: {exc}") from None
    extra = sorted(set(data) - {"key"})
    if extra:
        raise KeysFileError(f"{path}: unknown top-level table(s) {', '.join(extra)}; use [[key]]")
    entries = data.get("key", [])
    if not isinstance(entries, list):
        raise KeysFileError(f"{path}: key must be an array of tables ([[key]])")
    table: dict[bytes, Principal] = {}
    ids: set[str] = set()
    for index, entry in enumerate(entries):
        sha, principal = _entry(path, index, entry)
        where = f"key #{index + 1} (id {principal.key_id!r})"
        if principal.key_id in ids or principal.key_id == ENV_KEY_ID:
            raise KeysFileError(f"{path}: {where}: duplicate id")
        if sha in table:
            raise KeysFileError(
                f"{path}: {where}: same secret as key {table[sha].key_id!r}; "
                "every key needs its own secret"
            )
        ids.add(principal.key_id or "")
        table[sha] = principal
    return table


class KeyRing:
    """The keys in force: env keys plus the keys file, swapped whole on reload (SIGHUP)."""

    def __init__(self, env_keys: frozenset[str], keys_file: str | None) -> None:
        self.keys_file = keys_file
        self._env: dict[bytes, Principal] = {
            digest(k): Principal(ENV_KEY_ID, "admin", DEFAULT_TENANT, None) for k in env_keys
        }
        self._lock = threading.Lock()
        self.table = self._build()  # raises KeysFileError at start-up

    @property
    def required(self) -> bool:
        """P-AUTH-1: keys from the environment or a keys file mean every call needs one."""
        return bool(self._env) or self.keys_file is not None

    def _build(self) -> KeyTable:
        by_digest = {sha: (sha, p) for sha, p in self._env.items()}
        if self.keys_file is not None:
            for sha, principal in load_keys_file(self.keys_file).items():
                if sha in by_digest:
                    raise KeysFileError(
                        f"{self.keys_file}: key {principal.key_id!r}: same secret as an "
                        "ORCH8_API_KEYS / --api-key key"
                    )
                by_digest[sha] = (sha, principal)
        return KeyTable(by_digest)

    def reload(self) -> bool:
        """P-AUTH-4: re-read the keys file; on failure keep the keys in force and log why."""
        with self._lock:
            try:
                table = self._build()
            except KeysFileError as exc:
                log.error(
                    "keys file not reloaded; the previous keys stay in force: %s",
                    exc,
                    extra={"cause": "keys_file_invalid"},
                )
                return False
            self.table = table
        ids = sorted({p.key_id or "" for _, p in table.by_digest.values()})
        log.info("keys file reloaded", extra={"keys": len(ids), "key_ids": ids})
        return True

    def lookup(self, token: str) -> Principal | None:
        return self.table.lookup(token)
