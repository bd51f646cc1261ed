"""An adapter process: a worker built by one SDK, driven by environment settings.

The adapter contract (conformance/README.md): ORCH8_* settings in, JSON-line events out on
stdout (`ready`, `start`, `end`, `cancelled`), anything else on stderr.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

# Worker options of a scenario -> the adapter's environment variables.
OPTION_ENV = {
    "concurrency": "ORCH8_CONCURRENCY",
    "grace_period_ms": "ORCH8_GRACE_PERIOD_MS",
    "queue": "ORCH8_QUEUE",
    "handlers": "ORCH8_HANDLERS",
    "heartbeat_interval_ms": "ORCH8_HEARTBEAT_INTERVAL_MS",
    "wait_ms": "ORCH8_WAIT_MS",
    "lease_ms": "ORCH8_LEASE_MS",
    "extra_handlers": "ORCH8_EXTRA_HANDLERS",
    "hooks_raise": "ORCH8_HOOKS_RAISE",
    "queue_names": "ORCH8_QUEUE_NAMES",  # P-SDK-23: "high,low"
    "queue_weights": "ORCH8_QUEUE_WEIGHTS",  # "a=3,b=1"
    "labels": "ORCH8_LABELS",  # "gpu=true" (P-LABEL-1)
    "telemetry": "ORCH8_TELEMETRY",  # "1": the SDK's OpenTelemetry object (P-TEL-3)
    "tenant": "ORCH8_TENANT",  # read by the SDK itself, sent as X-Tenant-Id (P-SDK-24)
    "wait_instance": "ORCH8_WAIT_INSTANCE",  # an instance id (the runner resolves the ref): waitInstance (P-SDK-25)
    "wait_timeout_ms": "ORCH8_WAIT_TIMEOUT_MS",  # its timeout_ms
}
NOT_ENV = ("worker_id", "expect_refusal", "key")  # options the runner handles itself
SIGNALS = {name: getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGKILL", "SIGTSTP", "SIGCONT", "SIGSTOP")}


def adapter_env(url: str, worker_id: str | None, options: dict, api_key: str | None = None) -> dict[str, str]:
    """The adapter's environment; no ORCH8_WORKER_ID means the SDK's default id (P-SDK-21)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCH8_")}
    env["ORCH8_URL"] = url
    if worker_id is not None:
        env["ORCH8_WORKER_ID"] = worker_id
    if api_key is not None:
        env["ORCH8_API_KEY"] = api_key  # read by the SDK itself (P-SDK-1)
    for key, value in options.items():
        if value is None or key in NOT_ENV:
            continue
        env[OPTION_ENV[key]] = env_value(value)
    return env


def env_value(value) -> str:
    """A list as "a,b", a map as "k=v,k=v", true as "1"."""
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return "1" if value is True else str(value)


class AdapterProcess:
    """One running adapter; its stdout events are collected with the time they arrived."""

    def __init__(self, name: str, worker_id: str | None, command: list[str], env: dict, workdir: Path):
        self.name = name
        self.worker_id = worker_id
        self.events: list[dict] = []
        # (event, task_id) -> those events in order: a check per task (1,000 tasks) would
        # otherwise scan every event of the run once per task.
        self.by_task: dict[tuple, list[dict]] = {}
        self.ready = threading.Event()
        self.exited_at: float | None = None
        self.last_command_at: float | None = None  # last signal or operator directive
        self.stderr_path = workdir / f"{name}.stderr.log"
        self.stdout_path = workdir / f"{name}.stdout.log"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr, env=env
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with open(self.stdout_path, "wb") as copy:
            for line in self.proc.stdout:
                copy.write(line)
                copy.flush()
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                event["_recv"] = time.time() * 1000
                self.by_task.setdefault((event.get("event"), event.get("task_id")), []).append(event)
                self.events.append(event)
                if event.get("event") == "ready":
                    if self.worker_id is None:  # the SDK chose it (P-SDK-21)
                        self.worker_id = event.get("worker_id")
                    self.ready.set()
        self.proc.wait()
        self.exited_at = time.time() * 1000

    @property
    def exit_code(self) -> int | None:
        return self.proc.returncode if self.exited_at is not None else None

    def send(self, name: str) -> None:
        self.last_command_at = time.time() * 1000
        if self.proc.poll() is None:
            self.proc.send_signal(SIGNALS[name])

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._reader.join(5)
        self._stderr.close()

    def stderr_tail(self, lines: int = 8) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])
