"""The keys file and `orch8-server keys` (P-AUTH-4): loading, validation, lookup, the CLI.

Unit level: no server. The real process (SIGHUP, logs, scopes) is in test_auth_server.py.
"""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys
from pathlib import Path

import pytest

from orch8_server import keys as keys_module
from orch8_server.keys import KeyRing, KeysFileError, digest, load_keys_file

SECRET = "o8k_unit_secret_never_logged"
SHA = hashlib.sha256(SECRET.encode()).hexdigest()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "keys.toml"
    path.write_text(text)
    return path


def entry(**fields: object) -> str:
    body = {"id": "k1", "sha256": SHA, "role": "worker", **fields}
    lines = ["[[key]]"]
    for name, value in body.items():
        if value is None:
            continue
        shown = (
            "[" + ", ".join(f'"{v}"' for v in value) + "]"
            if isinstance(value, list)
            else f'"{value}"'
        )
        lines.append(f"{name} = {shown}")
    return "\n".join(lines) + "\n\n"


def test_a_full_entry_loads_with_its_scope(tmp_path: Path) -> None:
    """P-AUTH-4: id, digest, role, tenant, tenants, queues, handlers."""
    path = write(
        tmp_path,
        entry(tenant="team-a", tenants=["team-b"], queues=["images"], handlers=["resize"]),
    )
    ((sha, principal),) = load_keys_file(path).items()
    assert sha == bytes.fromhex(SHA)
    assert principal.key_id == "k1" and principal.role == "worker"
    assert principal.tenant == "team-a" and principal.tenants == {"team-b"}
    assert principal.queues == {"images"} and principal.handlers == {"resize"}


def test_defaults_star_and_admin(tmp_path: Path) -> None:
    """P-TEN-2: tenant defaults to `default`; tenants ["*"] and admin mean any tenant."""
    other = hashlib.sha256(b"other").hexdigest()
    third = hashlib.sha256(b"third").hexdigest()
    table = load_keys_file(
        write(
            tmp_path,
            entry()
            + entry(id="k2", sha256=other, role="operator", tenants=["*"])
            + entry(id="k3", sha256=third, role="admin", tenant="ops"),
        )
    )
    by_id = {p.key_id: p for p in table.values()}
    assert by_id["k1"].tenant == "default" and by_id["k1"].tenants == frozenset()
    assert by_id["k1"].queues is None and by_id["k1"].handlers is None
    assert by_id["k2"].tenants is None and by_id["k3"].tenants is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (entry(role="root"), "key #1 (id 'k1'): role must be one of"),
        (entry(tenant="bad tenant"), "key #1 (id 'k1'): tenant must match"),
        (entry(tenants=["ok", "no/slash"]), "key #1 (id 'k1'): tenants ['no/slash']"),
        (entry(tenants=["*", "a"]), "tenants ['*'] may not list other tenants"),
        (entry(role="producer", queues=["q"]), "queues and handlers are for worker keys only"),
        (entry(role="operator", handlers=["h"]), "queues and handlers are for worker keys only"),
        (entry(sha256="abc"), "key #1 (id 'k1'): sha256 must be 64 hex digits"),
        (entry(id="has space"), "key #1: id must match"),
        (entry(secret="x"), "key #1 (id 'k1'): unknown field(s) secret"),
        (entry(queues="images"), "queues must be a list of non-empty strings"),
        (entry() + entry(sha256=hashlib.sha256(b"x").hexdigest()), "key #2 (id 'k1'): duplicate"),
        (entry() + entry(id="k2"), "key #2 (id 'k2'): same secret as key 'k1'"),
        (entry(id="env"), "duplicate id"),
        ("[key]\nid = 1\n", "key must be an array of tables"),
        ("[keys]\n", "unknown top-level table(s) keys"),
        ("[[key]\n", "not valid TOML"),
    ],
)
def test_invalid_files_name_file_and_entry_never_the_digest(
    tmp_path: Path, text: str, message: str
) -> None:
    """P-AUTH-4: every error names the file and the entry; none shows a digest."""
    path = write(tmp_path, text)
    with pytest.raises(KeysFileError) as caught:
        load_keys_file(path)
    assert str(caught.value).startswith(f"{path}: "), caught.value
    assert message in str(caught.value)
    assert SHA not in str(caught.value) and SECRET not in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(KeysFileError, match="cannot read"):
        load_keys_file(tmp_path / "nope.toml")


def test_lookup_by_digest_compares_in_constant_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-AUTH-4: a presented key is hashed, found by digest, and the digests compared
    with hmac.compare_digest; env keys are admin keys with id `env`."""
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(keys_module.hmac, "compare_digest", spy)
    ring = KeyRing(frozenset({"env-secret"}), str(write(tmp_path, entry(role="producer"))))
    assert ring.required
    found = ring.lookup(SECRET)
    assert found is not None and found.key_id == "k1" and found.role == "producer"
    assert compared == [(bytes.fromhex(SHA), digest(SECRET))]
    env = ring.lookup("env-secret")
    assert env is not None and (env.key_id, env.role, env.tenants) == ("env", "admin", None)
    assert ring.lookup("o8k_unknown") is None and ring.lookup(SHA) is None
    assert not KeyRing(frozenset(), None).required


def test_reload_swaps_keys_or_keeps_the_old_ones(tmp_path: Path) -> None:
    """P-AUTH-4: a reload that fails leaves the keys in force."""
    path = write(tmp_path, entry())
    ring = KeyRing(frozenset(), str(path))
    other = "o8k_second"
    path.write_text(entry(id="k2", sha256=digest(other).hex()))
    assert ring.reload()
    assert ring.lookup(SECRET) is None and ring.lookup(other) is not None
    path.write_text(entry(id="k3", role="nobody"))
    assert not ring.reload()
    found = ring.lookup(other)
    assert found is not None and found.key_id == "k2"


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orch8_server", "keys", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_keys_new_round_trips(tmp_path: Path) -> None:
    """P-AUTH-4: `keys new` prints a fresh secret once and an entry holding its digest
    only; the entry loads, and the secret finds it."""
    done = _cli(
        "new", "--id", "team-a-worker", "--role", "worker", "--tenant", "team-a",
        "--queue", "images", "--handler", "resize", "--handler", "crop",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    secret = next(line for line in done.stdout.splitlines() if line.startswith("o8k_"))
    assert len(secret) == 4 + 32
    assert done.stdout.count(secret) == 1
    toml = done.stdout[done.stdout.index("[[key]]") :]
    assert digest(secret).hex() in toml and secret not in toml
    ring = KeyRing(frozenset(), str(write(tmp_path, toml)))
    principal = ring.lookup(secret)
    assert principal is not None
    assert (principal.key_id, principal.role, principal.tenant) == (
        "team-a-worker",
        "worker",
        "team-a",
    )
    assert principal.queues == {"images"} and principal.handlers == {"resize", "crop"}
    again = _cli("new", "--id", "x", "--role", "admin")
    assert secret not in again.stdout  # fresh every time


def test_keys_new_refuses_scope_on_other_roles_and_hash_reads_stdin() -> None:
    refused = _cli("new", "--id", "p", "--role", "producer", "--queue", "q")
    assert refused.returncode == 2 and "worker keys only" in refused.stderr
    hashed = _cli("hash", stdin=SECRET + "\n")
    assert hashed.returncode == 0 and hashed.stdout.strip() == SHA


def test_log_lines_blank_bearer_tokens() -> None:
    """P-AUTH-4: a token that slips into a message or a traceback is blanked in the log."""
    import logging

    from orch8_server.logs import JsonFormatter

    try:
        raise ValueError(f"request had 'Authorization: Bearer {SECRET}'")
    except ValueError as exc:
        record = logging.makeLogRecord(
            {"msg": "header was %s", "args": (f"bearer {SECRET}",), "exc_info": (
                type(exc), exc, exc.__traceback__)}
        )  # fmt: skip
    line = JsonFormatter().format(record)
    assert SECRET not in line
    assert "bearer [redacted]" in line and "Bearer [redacted]" in line
