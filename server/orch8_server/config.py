"""Server settings: defaults from docs/protocol.md section 13, overridable by flags and env."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Settings:
    db: str = "./orch8.db"
    host: str = "127.0.0.1"
    port: int = 3001
    lease_ms: int = 60_000  # P-LEASE-2
    wait_ms: int = 30_000  # P-POLL-2
    max_wait_ms: int = 60_000  # P-POLL-2
    reaper_interval_ms: int = 1_000  # P-LEASE-6
    heartbeat_interval_ms: int = 5_000  # P-WORKER-1
    dead_after_ms: int = 30_000  # P-WORKER-5
    max_body_bytes: int = 1_048_576  # P-ERR-3
    api_keys: frozenset[str] = field(default_factory=frozenset)  # P-AUTH-1: admin keys, id env
    keys_file: str | None = None  # P-AUTH-4: TOML keys file, re-read on SIGHUP
    sqlite_synchronous: str = "NORMAL"
    pg_pool_size: int = 10  # connections per replica (PostgreSQL only)
    pg_acquire_timeout_ms: int = 5_000  # wait for a pooled connection, then 503
    # P-OBS-6: re-check when the LISTEN connection is silent (seed 004: notify_poll_interval_ms)
    notify_fallback_ms: int = 5000
    db_retry_initial_ms: int = 500  # P-OBS-6: first wait between start-up connection tries
    db_retry_max_ms: int = 30_000  # P-OBS-6: cap of the doubling wait
    db_retry_max_attempts: int = 0  # P-OBS-6: 0 = keep trying for ever
    migrate: bool = True  # False (--no-migrate): `orch8-server migrate` is a deploy step
    # P-TEL-2: the OTLP/HTTP base URL (traces go to <it>/v1/traces); None records no spans.
    otlp_endpoint: str | None = None
    otel_service_name: str = "orch8-server"  # OTEL_SERVICE_NAME
    # Backpressure (docs/protocol.md 12a); 0 = off except the waiting-poll cap.
    enqueue_rate: float = 0.0  # P-BP-1: tasks/s per tenant per replica
    enqueue_burst: int = 0  # P-BP-1: 0 = the rate (at least 1)
    max_queue_depth: int = 0  # P-BP-2: pending + scheduled per queue
    max_waiting_polls: int = 10_000  # P-BP-3: parked long-polls per replica
    max_inflight_requests: int = 0  # P-BP-3: requests in progress per replica
    # Request limits on the HTTP layer (http/limits.py).
    max_header_count: int = 100  # P-HTTP-1: header fields per request
    max_header_bytes: int = 65_536  # P-HTTP-1: field names + values per request
    header_timeout_ms: int = 10_000  # P-HTTP-2: request line + headers, from the first byte
    body_timeout_ms: int = 30_000  # P-HTTP-2: whole body, from the end of the headers
    log_level: str = "info"
    access_log: bool = False
    test_clock: bool = False  # P-CLOCK-1: time stands still until POST /clock/advance

    @property
    def poller_window_ms(self) -> int:
        """How long after its poll ends a worker still counts as an active poller (P-OBS-1):
        one heartbeat interval, the gap a live worker leaves between two polls."""
        return self.heartbeat_interval_ms
