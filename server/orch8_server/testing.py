"""Start real orch8-server processes for tests, benchmarks and examples.

This is the ONE Python launcher of the monorepo (server tests, sdk-python tests,
conformance and bench use it); nothing else finds ports or starts servers by hand.

    from orch8_server.testing import start_server

    with start_server("--lease-ms", "2000") as server:       # temp SQLite file
        httpx.post(server.url + "/tasks", json={"handler_name": "echo"})

    server = start_server(db="postgresql://postgres@127.0.0.1:5432/orch8")
    server.kill()        # SIGKILL, like a crash
    server.restart()     # same database, same port (same url)
    server.stop()        # SIGTERM, waits for exit

The server is started with `--port 0`; the launcher reads the one line it prints on stdout
(`orch8-server listening on http://HOST:PORT`), so there is no bind-then-release race. The
line appears only once the server accepts requests: no readiness polling is needed. The
server's stderr (JSON logs) goes to `server.log`; if the process exits before the line,
`ServerStartError` carries the tail of that log. `ORCH8_*` variables of the caller's
environment are NOT passed on (tests stay deterministic); pass them in `env`.

`free_port()` is for programs that cannot bind port 0 and report the port (PostgreSQL); the
port may be taken by another process before they bind it, so whatever can bind port 0 should.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from types import TracebackType

__all__ = ["LISTENING_LINE", "RunningServer", "ServerStartError", "free_port", "start_server"]

# Printed by orch8_server.cli.announce_listening.
LISTENING_LINE = re.compile(r"^orch8-server listening on (http://(.+):(\d+))$")


# Servers still running when the interpreter exits are killed, so a test run that crashes
# or forgets to stop one leaves no orphan behind.
_LIVE: set[subprocess.Popen[bytes]] = set()


@atexit.register
def _kill_leftovers() -> None:
    for process in list(_LIVE):
        if process.poll() is None:
            process.kill()


def free_port(host: str = "127.0.0.1") -> int:
    """A port free right now, for a process that cannot bind port 0 itself (never the server)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class ServerStartError(RuntimeError):
    """The server exited, or printed no listening line, before it was ready."""


class RunningServer:
    """One orch8-server subprocess. Context manager: leaving it stops the server."""

    def __init__(
        self,
        args: list[str],
        *,
        db: str,
        env: dict[str, str],
        log: Path,
        timeout: float,
        tmpdir: str | None,
    ) -> None:
        self.args = args
        self.db = db
        self.env = env
        self.log = log
        self.timeout = timeout
        self.url = ""
        self.host = ""
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.stdout_lines: list[str] = []
        self._reader: threading.Thread | None = None
        if tmpdir is not None:
            self._cleanup = weakref.finalize(self, shutil.rmtree, tmpdir, True)

    def _launch(self, port: int) -> RunningServer:
        found = threading.Event()
        with self.log.open("ab") as err:
            process = subprocess.Popen(
                [*self.args[:-1], str(port)] if port else self.args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                env=self.env,
            )
        self.process = process
        _LIVE.add(process)

        def read_stdout() -> None:
            # Keeps draining after the line so the pipe never fills up.
            assert process.stdout is not None
            with process.stdout:
                for raw in process.stdout:
                    line = raw.decode(errors="replace").rstrip("\n")
                    match = LISTENING_LINE.match(line)
                    if match and not found.is_set():
                        self.url, self.host, self.port = match[1], match[2], int(match[3])
                        found.set()
                    else:
                        self.stdout_lines.append(line)
            found.set()  # EOF: the process exited

        reader = threading.Thread(target=read_stdout, name="orch8-server-stdout", daemon=True)
        reader.start()
        self._reader = reader
        if not found.wait(self.timeout):
            self.kill()
            raise ServerStartError(
                f"orch8-server printed no listening line within {self.timeout} s; "
                f"stderr tail:\n{self.stderr_tail()}"
            )
        if not self.url:
            try:
                code = process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
                code = process.returncode
            raise ServerStartError(
                f"orch8-server exited with code {code} before listening; "
                f"stderr tail:\n{self.stderr_tail()}"
            )
        return self

    @property
    def running(self) -> bool:
        """True while the process is alive."""
        return self.process is not None and self.process.poll() is None

    def stderr_tail(self, chars: int = 4000) -> str:
        """The end of the server's log (stderr), for error messages."""
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0, sig: int = signal.SIGTERM) -> int | None:
        """Send `sig` (SIGTERM: graceful drain) and wait; SIGKILL after `timeout` s."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        _LIVE.discard(process)
        if self._reader is not None:
            self._reader.join(timeout=5)  # EOF follows the exit; the reader closes the pipe
        return process.returncode

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs (crash tests)."""
        self.stop(sig=signal.SIGKILL)

    def restart(self) -> RunningServer:
        """Start again on the same database and the same port, so `url` stays valid."""
        self.stop()
        return self._launch(self.port)

    def close(self) -> None:
        """Stop the server and delete the temp directory the launcher made, if any."""
        self.stop()
        cleanup = getattr(self, "_cleanup", None)
        if cleanup is not None:
            cleanup()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RunningServer {self.url or '(not started)'} db={self.db}>"


def start_server(
    *extra_args: str,
    db: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 30.0,
    host: str = "127.0.0.1",
    log: str | os.PathLike[str] | None = None,
    python: str | None = None,
) -> RunningServer:
    """Start `orch8-server --port 0` and return once it prints its listening line.

    `extra_args` are server flags (`"--lease-ms", "2000"`). `db` is a SQLite path or a
    postgresql:// URL; None means a new SQLite file in a temp directory removed by
    `close()` / the context manager. `env` is added to the caller's environment minus its
    `ORCH8_*` variables. `log` is where stderr goes (default: `server.log` in the temp
    directory). `python` is the interpreter that has orch8_server installed (default: this one).
    """
    tmpdir = None
    if db is None or log is None:
        tmpdir = tempfile.mkdtemp(prefix="orch8-server-")
    db_text = str(db) if db is not None else str(Path(tmpdir or ".") / "orch8.db")
    log_path = Path(log) if log is not None else Path(tmpdir or ".") / "server.log"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ORCH8_")}
    full_env.update(env or {})
    full_env["PYTHONUNBUFFERED"] = "1"
    # --port goes last so restart() can swap it for the port first bound.
    args = [
        python or sys.executable,
        "-m",
        "orch8_server",
        "--db",
        db_text,
        "--host",
        host,
        *map(str, extra_args),
        "--port",
        "0",
    ]
    server = RunningServer(
        args, db=db_text, env=full_env, log=log_path, timeout=timeout, tmpdir=tmpdir
    )
    return server._launch(0)
