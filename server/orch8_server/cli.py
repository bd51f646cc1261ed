"""`orch8-server` / `python -m orch8_server`: flags, environment, and the uvicorn loop."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
from types import FrameType
from typing import Any

from orch8_server import __version__
from orch8_server.config import Settings

# (flag, env var, Settings field, type, help)
_OPTIONS: list[tuple[str, str, str, type, str]] = [
    (
        "--db",
        "ORCH8_DATABASE_URL",
        "db",
        str,
        "SQLite file path (default ./orch8.db) or postgresql://user@host:port/dbname",
    ),
    ("--host", "ORCH8_HOST", "host", str, "bind address (default 127.0.0.1)"),
    ("--port", "ORCH8_PORT", "port", int, "port (default 3001; 0 picks a free one)"),
    ("--lease-ms", "ORCH8_LEASE_MS", "lease_ms", int, "default lease length"),
    ("--wait-ms", "ORCH8_WAIT_MS", "wait_ms", int, "default long-poll wait"),
    ("--max-wait-ms", "ORCH8_MAX_WAIT_MS", "max_wait_ms", int, "long-poll wait cap"),
    (
        "--reaper-interval-ms",
        "ORCH8_REAPER_INTERVAL_MS",
        "reaper_interval_ms",
        int,
        "how often expired leases and dead workers are reclaimed",
    ),
    (
        "--heartbeat-interval-ms",
        "ORCH8_HEARTBEAT_INTERVAL_MS",
        "heartbeat_interval_ms",
        int,
        "worker heartbeat cadence the server asks for",
    ),
    (
        "--dead-after-ms",
        "ORCH8_DEAD_AFTER_MS",
        "dead_after_ms",
        int,
        "silence after which a registered worker is declared dead",
    ),
    ("--max-body-bytes", "ORCH8_MAX_BODY_BYTES", "max_body_bytes", int, "request body limit"),
    (
        "--sqlite-synchronous",
        "ORCH8_SQLITE_SYNCHRONOUS",
        "sqlite_synchronous",
        str,
        "NORMAL (survives process crashes) or FULL (also power loss)",
    ),
    (
        "--pg-pool-size",
        "ORCH8_PG_POOL_SIZE",
        "pg_pool_size",
        int,
        "PostgreSQL connections per replica (default 10)",
    ),
    (
        "--pg-acquire-timeout-ms",
        "ORCH8_PG_ACQUIRE_TIMEOUT_MS",
        "pg_acquire_timeout_ms",
        int,
        "how long a request waits for a pooled connection before 503",
    ),
    (
        "--notify-fallback-ms",
        "ORCH8_NOTIFY_FALLBACK_MS",
        "notify_fallback_ms",
        int,
        "PostgreSQL: re-check for work this often while no wake-up arrives (50-300000)",
    ),
    (
        "--db-retry-initial-ms",
        "ORCH8_DB_RETRY_INITIAL_MS",
        "db_retry_initial_ms",
        int,
        "first wait between database connection tries at start-up, doubling (default 500)",
    ),
    (
        "--db-retry-max-ms",
        "ORCH8_DB_RETRY_MAX_MS",
        "db_retry_max_ms",
        int,
        "cap of the wait between database connection tries (default 30000)",
    ),
    (
        "--db-retry-max-attempts",
        "ORCH8_DB_RETRY_MAX_ATTEMPTS",
        "db_retry_max_attempts",
        int,
        "database connection tries at start-up before exiting; 0 = for ever (default)",
    ),
    (
        "--otlp-endpoint",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "otlp_endpoint",
        str,
        "export task spans (P-TEL-2) by OTLP/HTTP to this base URL, e.g. http://localhost:4318 "
        "(needs the otel extra); OTEL_SERVICE_NAME names the service (default orch8-server)",
    ),
    (
        "--enqueue-rate",
        "ORCH8_ENQUEUE_RATE",
        "enqueue_rate",
        float,
        "P-BP-1: enqueued tasks per second per tenant on this replica; 0 = no limit (default)",
    ),
    (
        "--enqueue-burst",
        "ORCH8_ENQUEUE_BURST",
        "enqueue_burst",
        int,
        "P-BP-1: tasks the enqueue rate lets through at once (default: the rate)",
    ),
    (
        "--max-queue-depth",
        "ORCH8_MAX_QUEUE_DEPTH",
        "max_queue_depth",
        int,
        "P-BP-2: refuse enqueues onto a queue holding this many pending + scheduled tasks; "
        "0 = no limit (default)",
    ),
    (
        "--max-waiting-polls",
        "ORCH8_MAX_WAITING_POLLS",
        "max_waiting_polls",
        int,
        "P-BP-3: long-polls this replica lets wait at once (default 10000)",
    ),
    (
        "--max-inflight-requests",
        "ORCH8_MAX_INFLIGHT_REQUESTS",
        "max_inflight_requests",
        int,
        "P-BP-3: requests this replica serves at once, /health/* and /metrics aside; "
        "0 = no cap (default)",
    ),
    (
        "--max-header-count",
        "ORCH8_MAX_HEADER_COUNT",
        "max_header_count",
        int,
        "P-HTTP-1: header fields a request may send; more is 431 (default 100)",
    ),
    (
        "--max-header-bytes",
        "ORCH8_MAX_HEADER_BYTES",
        "max_header_bytes",
        int,
        "P-HTTP-1: bytes of header names and values a request may send; more is 431 "
        "(default 65536)",
    ),
    (
        "--header-timeout-ms",
        "ORCH8_HEADER_TIMEOUT_MS",
        "header_timeout_ms",
        int,
        "P-HTTP-2: the request line and headers must arrive within this of the first byte, "
        "or 408 (default 10000)",
    ),
    (
        "--body-timeout-ms",
        "ORCH8_BODY_TIMEOUT_MS",
        "body_timeout_ms",
        int,
        "P-HTTP-2: the whole body must arrive within this of the headers, or 408 (default 30000)",
    ),
    ("--log-level", "ORCH8_LOG_LEVEL", "log_level", str, "debug, info, warning, error"),
    (
        "--keys-file",
        "ORCH8_KEYS_FILE",
        "keys_file",
        str,
        "P-AUTH-4: TOML file of scoped API keys (role, tenant, digest), re-read on SIGHUP; "
        "see `orch8-server keys new`",
    ),
]

# Ranges of the settings added with P-OBS-6, P-BP-1..3 and P-HTTP-1/2 (inclusive): a value
# outside is refused at start-up with the flag's name, never clamped.
_RANGES: list[tuple[str, str, float, float]] = [
    ("--notify-fallback-ms", "notify_fallback_ms", 50, 300_000),
    ("--db-retry-initial-ms", "db_retry_initial_ms", 1, 3_600_000),
    ("--db-retry-max-ms", "db_retry_max_ms", 1, 3_600_000),
    ("--db-retry-max-attempts", "db_retry_max_attempts", 0, 1_000_000),
    # P-BP-1..3 (docs/protocol.md 12a)
    ("--enqueue-rate", "enqueue_rate", 0, 1_000_000),
    ("--enqueue-burst", "enqueue_burst", 0, 1_000_000),
    ("--max-queue-depth", "max_queue_depth", 0, 1_000_000_000),
    ("--max-waiting-polls", "max_waiting_polls", 1, 10_000_000),
    ("--max-inflight-requests", "max_inflight_requests", 0, 10_000_000),
    # P-HTTP-1/2 (docs/protocol.md 12)
    ("--max-header-count", "max_header_count", 1, 100_000),
    ("--max-header-bytes", "max_header_bytes", 1024, 16_777_216),
    ("--header-timeout-ms", "header_timeout_ms", 10, 3_600_000),
    ("--body-timeout-ms", "body_timeout_ms", 10, 3_600_000),
]


# Old names (before spec 1.1.0, issue 19) -> new flag, env var. Still accepted for one minor
# version; each use logs one deprecation warning naming the replacement.
_DEPRECATED: list[tuple[str, str, str, str]] = [
    (
        "--worker-heartbeat-ms",
        "ORCH8_WORKER_HEARTBEAT_MS",
        "--heartbeat-interval-ms",
        "ORCH8_HEARTBEAT_INTERVAL_MS",
    ),
    (
        "--worker-dead-after-ms",
        "ORCH8_WORKER_DEAD_AFTER_MS",
        "--dead-after-ms",
        "ORCH8_DEAD_AFTER_MS",
    ),
]


_DESCRIPTION = (
    "Orch8 external-worker reference server. Every flag has an ORCH8_* environment "
    "equivalent; flags win. `orch8-server keys new|hash --help` makes API keys for "
    "--keys-file; `orch8-server migrate --help` applies the schema migrations alone."
)


def parse_settings(argv: list[str] | None = None) -> Settings:
    """Flags, then ORCH8_* environment, then the defaults of Settings."""
    return parse_settings_and_warnings(argv)[0]


def parse_settings_and_warnings(
    argv: list[str] | None = None, prog: str = "orch8-server", description: str = _DESCRIPTION
) -> tuple[Settings, list[str]]:
    """Like parse_settings, plus the warnings (deprecated options, a lease shorter than
    three heartbeat intervals) to log once logging is set up. `prog` and `description`
    are a sub-command's that takes the server's options (`orch8-server migrate`)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--version", action="version", version=f"orch8-server {__version__}")
    for flag, env, _, kind, help_text in _OPTIONS:
        parser.add_argument(flag, type=kind, default=None, help=f"{help_text} [{env}]")
    for old_flag, old_env, new_flag, _ in _DEPRECATED:
        parser.add_argument(
            old_flag,
            type=int,
            default=None,
            dest="old_" + old_flag[2:].replace("-", "_"),
            metavar="MS",
            help=f"deprecated alias of {new_flag} [{old_env}]",
        )
    parser.add_argument(
        "--api-key",
        action="append",
        default=None,
        help="an admin bearer API key, id env (repeatable) [ORCH8_API_KEYS, comma-separated]",
    )
    parser.add_argument("--access-log", action="store_true", help="log every request")
    parser.add_argument(
        "--no-migrate",
        action="store_true",
        help="create and migrate nothing (`orch8-server migrate` is then a deploy step); "
        "refuse to start on a missing or older schema [ORCH8_NO_MIGRATE=1]",
    )
    parser.add_argument(
        "--test-clock",
        action="store_true",
        help="P-CLOCK-1, for tests: the server's clock stands still until POST /clock/advance "
        "moves it (SQLite only) [ORCH8_TEST_CLOCK=1]",
    )
    args = parser.parse_args(argv)
    warnings = _apply_deprecated(parser, args)

    values: dict[str, object] = {}
    for flag, env, name, kind, _ in _OPTIONS:
        given = getattr(args, flag[2:].replace("-", "_"))
        if given is None and os.environ.get(env):
            try:
                given = kind(os.environ[env])
            except ValueError:
                parser.error(f"{env}={os.environ[env]!r} is not a valid {kind.__name__}")
        if given is not None:
            values[name] = given
    keys = args.api_key or [k for k in os.environ.get("ORCH8_API_KEYS", "").split(",") if k]
    values["api_keys"] = frozenset(k.strip() for k in keys if k.strip())
    values["access_log"] = args.access_log
    values["migrate"] = not (args.no_migrate or os.environ.get("ORCH8_NO_MIGRATE") == "1")
    values["test_clock"] = args.test_clock or os.environ.get("ORCH8_TEST_CLOCK") == "1"
    if os.environ.get("OTEL_SERVICE_NAME"):  # the standard OpenTelemetry variable
        values["otel_service_name"] = os.environ["OTEL_SERVICE_NAME"]
    settings = Settings(**values)  # type: ignore[arg-type]
    _check(parser, settings)
    if settings.lease_ms < 3 * settings.heartbeat_interval_ms:  # P-SDK-30
        warnings.append(
            f"--lease-ms {settings.lease_ms} is under three --heartbeat-interval-ms "
            f"({settings.heartbeat_interval_ms}): the SDK workers heartbeat at a third of the "
            "lease (P-SDK-30), but a worker that heartbeats on the interval loses its leases"
        )
    return settings, warnings


def _apply_deprecated(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """Map old flags/env onto the new names (the new name wins when both are given)."""
    warnings = []
    for old_flag, old_env, new_flag, new_env in _DEPRECATED:
        new_dest = new_flag[2:].replace("-", "_")
        old_value = getattr(args, "old_" + old_flag[2:].replace("-", "_"))
        used = old_flag
        if old_value is None and os.environ.get(old_env):
            used = old_env
            try:
                old_value = int(os.environ[old_env])
            except ValueError:
                parser.error(f"{old_env}={os.environ[old_env]!r} is not a valid int")
        if old_value is None:
            continue
        warnings.append(f"{used} is deprecated and will be removed; use {new_flag} / {new_env}")
        if getattr(args, new_dest) is None and not os.environ.get(new_env):
            setattr(args, new_dest, old_value)
    return warnings


def _check(parser: argparse.ArgumentParser, s: Settings) -> None:
    if s.sqlite_synchronous.upper() not in ("NORMAL", "FULL"):
        parser.error("--sqlite-synchronous must be NORMAL or FULL")
    for name in (
        "lease_ms",
        "reaper_interval_ms",
        "heartbeat_interval_ms",
        "dead_after_ms",
        "max_body_bytes",
        "pg_pool_size",
        "pg_acquire_timeout_ms",
    ):
        if getattr(s, name) <= 0:
            parser.error(f"{name} must be positive")
    for flag, name, low, high in _RANGES:
        if not low <= getattr(s, name) <= high:
            parser.error(f"{flag} must be between {low} and {high} (got {getattr(s, name)})")
    if s.db_retry_max_ms < s.db_retry_initial_ms:
        parser.error("--db-retry-max-ms must be at least --db-retry-initial-ms")
    if s.otlp_endpoint:
        try:
            import opentelemetry.exporter.otlp.proto.http
            import opentelemetry.sdk  # noqa: F401
        except ImportError:
            parser.error("--otlp-endpoint needs the otel extra: pip install 'orch8-server[otel]'")
    if s.keys_file is not None:  # P-AUTH-4: a file that does not load stops the start-up
        from orch8_server.keys import KeysFileError, load_keys_file

        try:
            load_keys_file(s.keys_file)
        except KeysFileError as exc:
            parser.error(str(exc))
    if s.test_clock and s.db.startswith(("postgres://", "postgresql://")):
        parser.error(
            "--test-clock needs SQLite: the test clock is one process's, and replicas sharing "
            "a PostgreSQL database would each keep their own"
        )
    if s.db.startswith(("postgres://", "postgresql://")):
        try:
            import asyncpg  # noqa: F401
        except ImportError:
            parser.error("PostgreSQL needs the asyncpg package: pip install asyncpg")


def listening_line(host: str, port: int) -> str:
    """The one stdout line a harness reads to learn the bound address (`--port 0`)."""
    shown = f"[{host}]" if ":" in host else host
    return f"orch8-server listening on http://{shown}:{port}"


def announce_listening(sockname: tuple[Any, ...]) -> None:
    """Print (flushed) and log the bound address once the server accepts requests."""
    host, port = sockname[0], sockname[1]
    line = listening_line(host, port)
    # Printed only after startup (storage open, socket listening), so a harness that
    # reads this line may send requests at once.
    print(line, flush=True)
    logging.getLogger("orch8.server").info(line, extra={"host": host, "port": port})


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["keys"]:  # P-AUTH-4: orch8-server keys new|hash
        from orch8_server.keys_cli import main as keys_main

        keys_main(args[1:])
        return
    if args[:1] == ["migrate"]:  # seed 004: migrations as a deploy step
        from orch8_server.migrate_cli import main as migrate_main

        migrate_main(args[1:])
        return

    import uvicorn

    from orch8_server.http.app import create_app
    from orch8_server.http.limits import limited_protocol
    from orch8_server.keys import KeyRing, KeysFileError
    from orch8_server.logs import configure_logging

    settings, warnings = parse_settings_and_warnings(args)
    configure_logging(settings.log_level)
    for warning in warnings:
        logging.getLogger("orch8.server").warning(warning, extra={"cause": "settings"})
    try:
        keyring = KeyRing(settings.api_keys, settings.keys_file)
    except KeysFileError as exc:  # changed since the check of parse_settings
        sys.exit(f"orch8-server: {exc}")
    app = create_app(settings, keyring=keyring)

    def refused(code: str) -> None:  # P-HTTP-1/2 answers never reach problem_response
        app.state.engine.metrics.problems.labels(code).inc()

    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        loop="uvloop" if sys.platform != "win32" else "asyncio",
        # httptools, one socket write per response, P-HTTP-1/2 request limits
        http=limited_protocol(settings, refused),
        lifespan="on",
        access_log=settings.access_log,
        log_config=None,
        timeout_graceful_shutdown=5,
        # Long-polls hold connections open for up to max_wait_ms.
        timeout_keep_alive=max(5, settings.max_wait_ms // 1000 + 5),
    )

    class DrainingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and settings.keys_file is not None and hasattr(signal, "SIGHUP"):
                # P-AUTH-4: re-read the keys file; a broken one keeps the keys in force.
                asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, keyring.reload)
            if self.started:
                # Printed even while the database is still unreachable (P-OBS-6): the
                # port accepts requests; /health/ready says when they can succeed.
                announce_listening(self.servers[0].sockets[0].getsockname())

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            # Release long-polls first, or uvicorn would wait for each to time out.
            app.state.engine.begin_drain()
            super().handle_exit(sig, frame)

    server = DrainingServer(config)

    def give_up() -> None:  # P-OBS-6: --db-retry-max-attempts failed tries
        server.should_exit = True

    app.state.engine.on_give_up = give_up
    try:
        server.run()
    except SystemExit:  # uvicorn's exit when start-up failed: say why, if the engine knows
        if app.state.engine.gave_up is None:
            raise
    if app.state.engine.gave_up is not None:
        sys.exit(f"orch8-server: {app.state.engine.gave_up}")
    if not server.started:
        sys.exit("orch8-server: start-up failed (see the log above)")
