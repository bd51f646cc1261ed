"""`orch8-server keys new|hash`: make a key and its keys-file entry (P-AUTH-4).

The secret is printed once, on its own line; the entry to paste holds only its digest.
"""

from __future__ import annotations

import argparse
import secrets
import sys

from orch8_server.keys import KEY_ID_RE, digest
from orch8_server.principal import DEFAULT_TENANT, ROLES, TENANT_RE

PREFIX = "o8k_"


def new_secret() -> str:
    """A fresh random key: `o8k_` and 32 URL-safe characters (192 bits)."""
    return PREFIX + secrets.token_urlsafe(24)


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(_toml_str(v) for v in values) + "]"


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def entry(
    key_id: str,
    role: str,
    sha256: str,
    tenant: str = DEFAULT_TENANT,
    tenants: list[str] | None = None,
    queues: list[str] | None = None,
    handlers: list[str] | None = None,
) -> str:
    """The `[[key]]` table of a keys file for one key (its digest, never the secret)."""
    lines = [
        "[[key]]",
        f"id = {_toml_str(key_id)}",
        f"sha256 = {_toml_str(sha256)}",
        f"role = {_toml_str(role)}",
        f"tenant = {_toml_str(tenant)}",
    ]
    for name, values in (("tenants", tenants), ("queues", queues), ("handlers", handlers)):
        if values:
            lines.append(f"{name} = {_toml_list(values)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="orch8-server keys", description="Make API keys for a keys file (--keys-file)."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    new = sub.add_parser("new", help="print a fresh secret and the [[key]] entry to paste")
    new.add_argument("--id", required=True, help="the key's id, named in logs and /whoami")
    new.add_argument("--role", required=True, choices=ROLES)
    new.add_argument(
        "--tenant",
        default=DEFAULT_TENANT,
        help="its tenant (default: default); an admin key acts in every tenant, this one "
        "when a request sends no X-Tenant-Id",
    )
    new.add_argument(
        "--tenants",
        action="append",
        metavar="T",
        help="another tenant X-Tenant-Id may select (repeatable; '*' = any)",
    )
    new.add_argument("--queue", action="append", help="worker keys: a queue it may poll")
    new.add_argument("--handler", action="append", help="worker keys: a handler it may run")
    sub.add_parser("hash", help="read a secret on stdin, print its sha256 for the keys file")
    args = parser.parse_args(argv)
    if args.command == "hash":
        secret = sys.stdin.readline().strip()
        if not secret:
            parser.error("hash: give the secret on stdin")
        print(digest(secret).hex())
        return
    if not KEY_ID_RE.fullmatch(args.id):
        parser.error(f"--id must match ^{KEY_ID_RE.pattern}$")
    if not TENANT_RE.fullmatch(args.tenant):
        parser.error(f"--tenant must match ^{TENANT_RE.pattern}$")
    if args.role != "worker" and (args.queue or args.handler):
        parser.error("--queue and --handler are for worker keys only")
    secret = new_secret()
    print(
        f"# The secret of key {args.id!r}, shown once (give it to the client as its API key):",
        secret,
        "",
        "# Append to the keys file, then send the server SIGHUP (kill -HUP <pid>):",
        entry(
            args.id,
            args.role,
            digest(secret).hex(),
            args.tenant,
            args.tenants,
            args.queue,
            args.handler,
        ),
        sep="\n",
        end="",
    )
