"""A throwaway PostgreSQL cluster for tests and benchmarks: `initdb` + `pg_ctl` in a temp dir.

Debian keeps the binaries in /usr/lib/postgresql/<version>/bin, off PATH. PostgreSQL
refuses to run as root, so when we are root every command goes through
`runuser -u postgres --` and the temp dir belongs to postgres.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from orch8_server.testing import free_port


def _bin_dir() -> Path:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), reverse=True)
    if not candidates:
        raise RuntimeError("PostgreSQL is not installed: run `make setup` (installs postgresql)")
    return Path(candidates[0]).parent


def _as_postgres(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _owned_temp_dir() -> Path:
    """A new temp dir PostgreSQL may use: when we are root, it belongs to postgres."""
    root = Path(tempfile.mkdtemp(prefix="orch8-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        root.chmod(0o700)
    return root


@functools.cache
def _initdb_once(bin_dir: Path) -> Path:
    """A data directory fresh from initdb, made once per process. A server test session
    starts six clusters; each is a copy of this one (`cp -a`: 1-2 s on a loaded machine where
    initdb took 5-8 s, and a third of its CPU). A copy is the cluster initdb would make:
    nothing in it names its path or its port."""
    root = _owned_temp_dir()
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    data = root / "data"
    args = ["-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]
    cmd = _as_postgres([str(bin_dir / "initdb"), *args, "--no-instructions"])
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    return data


class PgCluster:
    """One postgres server on 127.0.0.1:<free port>, trust auth, user `postgres`."""

    def __init__(self, fsync: bool = False, settings: dict[str, str] | None = None) -> None:
        self.bin = _bin_dir()
        self.settings = settings or {}  # more `-c name=value` (the bench's statement stats)
        self.root = _owned_temp_dir()
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = free_port()  # postgres cannot bind port 0 and report it
        self.fsync = fsync
        self._log_from = 0  # where the log of the last start attempt begins

    def _run(self, *args: str, timeout: float = 60) -> None:
        cmd = _as_postgres([str(self.bin / args[0]), *args[1:]])
        subprocess.run(cmd, check=True, capture_output=True, timeout=timeout)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def init(self) -> PgCluster:
        """A new cluster, started (a copy of the process's initdb; `cp -a` keeps owner and modes).

        The port was free when picked, but another process may bind it before postgres
        does: then the start is tried again on another free port (at most 3 tries). Later
        starts (a restart after `stop`) keep the port, as clients reconnect to it."""
        subprocess.run(["cp", "-a", str(_initdb_once(self.bin)), str(self.data)], check=True)
        for tries_left in (2, 1, 0):
            self._log_from = self.log.stat().st_size if self.log.exists() else 0
            try:
                return self.start()
            except subprocess.CalledProcessError:
                if not tries_left or not self._port_taken():
                    raise
                self.port = free_port()
        raise AssertionError("unreachable")

    def _port_taken(self) -> bool:
        """Whether the last start failed because its port was in use (postgres's log)."""
        try:
            with self.log.open("rb") as f:
                f.seek(self._log_from)
                return b"Address already in use" in f.read()
        except OSError:
            return False

    def start(self) -> PgCluster:
        # Tests trade durability for speed (fsync off); a clean or immediate stop still
        # keeps every committed row because the OS page cache survives.
        opts = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            f"-c max_connections=300 -c fsync={'on' if self.fsync else 'off'} "
            "-c full_page_writes=off -c shared_buffers=128MB"
        ) + "".join(f" -c {name}={value}" for name, value in self.settings.items())
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            opts,
            "-w",
            "-t",
            "60",
            "start",
        )
        return self

    def stop(self, mode: str = "fast") -> None:
        """mode: smart, fast (disconnect clients) or immediate (like a crash)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("postgres did not come back")

    def create_database(self, name: str) -> str:
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        out = subprocess.run(
            [
                str(self.bin / "psql"),
                "-X",
                "-q",
                "-t",
                "-A",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                self.url(dbname),
                "-c",
                sql,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return out.stdout.strip()

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
