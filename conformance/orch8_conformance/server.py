"""The reference server of one run, started with the shared launcher (orch8_server.testing).

The launcher starts `orch8-server --port 0` and reads its `listening on` line, so there is
no port finding here; `restart()` keeps the port and the database.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from orch8_server.testing import RunningServer, ServerStartError, start_server

from .api import Api
from .keys import KeysFile

# Scenario `server` keys -> orch8-server flags (docs/protocol.md section 13).
FLAGS = {
    "lease_ms": "--lease-ms",
    "wait_ms": "--wait-ms",
    "max_wait_ms": "--max-wait-ms",
    "reaper_interval_ms": "--reaper-interval-ms",
    "heartbeat_interval_ms": "--heartbeat-interval-ms",
    "dead_after_ms": "--dead-after-ms",
    "max_body_bytes": "--max-body-bytes",
}


def server_args(settings: dict, keys_file: Path | None = None) -> list[str]:
    """orch8-server flags for a scenario's `server` block (`api_keys` becomes `--api-key`,
    `keys` the `--keys-file` written for it)."""
    keyed = keys_file is not None or bool(settings.get("api_keys"))
    # P-AUTH-8: a keyed server logs every request at debug, so that the run can check
    # that no secret reaches any log line (checks_sdk.secrets_in_server_log).
    args: list[str] = ["--access-log", "--log-level", "debug"] if keyed else ["--log-level", "warning"]
    for key, value in settings.items():
        if key == "api_keys":
            for api_key in value:
                args += ["--api-key", api_key]
        elif key == "test_clock":
            args += ["--test-clock"] if value else []  # P-CLOCK-1
        elif key != "keys":
            args += [FLAGS[key], str(value)]
    if keys_file is not None:
        args += ["--keys-file", str(keys_file)]  # P-AUTH-4
    return args


class ReferenceServer:
    """One orch8-server process; `restart()` keeps its port (so its url) and database."""

    def __init__(self, workdir: Path, settings: dict, db: str | None = None) -> None:
        self.db = db or str(workdir / "orch8.db")
        self._own_db = db is None  # a file in the workdir: a run starts it empty
        self.log_path = workdir / "server.log"
        self.settings = settings
        self.running: RunningServer | None = None
        self.url = ""
        keys = settings.get("api_keys") or []
        self.api_key = keys[0] if keys else None
        self.keys: KeysFile | None = None
        if "keys" in settings:  # scoped keys (P-AUTH-2..4): the runner reads back as admin
            self.keys = KeysFile(workdir / "keys.toml", settings["keys"])
            self.api_key = self.keys.runner_secret
        self.api: Api | None = None

    def first_start(self) -> None:
        if self._own_db:  # a failed run in the same --workdir leaves its tasks behind
            for suffix in ("", "-wal", "-shm"):
                Path(self.db + suffix).unlink(missing_ok=True)
        args = server_args(self.settings, self.keys.path if self.keys else None)
        try:
            self.running = start_server(*args, db=self.db, log=self.log_path)
        except ServerStartError as err:
            raise RuntimeError(str(err)) from None
        self.url = self.running.url
        self.api = Api(self.url, self.api_key)

    @property
    def port(self) -> int:
        return self.running.port if self.running else 0

    def stop(self) -> None:
        """SIGTERM (the server drains), then SIGKILL if it lingers."""
        if self.running is not None:
            self.running.stop(timeout=10)

    def restart(self, down_s: float) -> None:
        assert self.running is not None
        self.running.stop(timeout=10)
        time.sleep(down_s)  # the outage the scenario asked for
        try:
            self.running.restart()
        except ServerStartError as err:
            raise RuntimeError(str(err)) from None

    def reload_keys(self, keys: list[dict]) -> None:
        """Rewrite the keys file and send SIGHUP: the server re-reads it (P-AUTH-4)."""
        if self.keys is None or self.running is None or self.running.process is None:
            raise RuntimeError("the scenario's server has no keys file (server.keys)")
        self.keys.write(keys)
        self.running.process.send_signal(signal.SIGHUP)

    def secrets(self) -> list[str]:
        """Every key secret this server was given (P-AUTH-8: none may reach a log)."""
        found = list(self.settings.get("api_keys") or [])
        if self.keys is not None:
            found += [self.keys.runner_secret, *self.keys.secrets.values()]
        return found

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
