"""WAL checkpoints on a thread of their own, off the event loop.

A checkpoint copies the pages committed to the WAL into the database file. SQLite runs it
inside the COMMIT that finds the WAL over `wal_autocheckpoint` pages: on the event loop,
where every request waits for it. At 10,000 pages that is ~40 MB copied and two fsyncs in
one COMMIT (tens of milliseconds), most often in the 3-step workflow row, whose instances
are rewritten at every step.

Here a thread with its own connection runs `PRAGMA wal_checkpoint(PASSIVE)` after commits,
at most once a second (`interval_s`). sqlite3 releases the GIL while the statement runs,
so the copy and its fsyncs use the other core while the loop serves requests. A PASSIVE
checkpoint never waits for and never blocks the writer: it copies what is committed and
not read by anyone older. The writer keeps its own `wal_autocheckpoint`: when it fires,
most pages are in the database file already, so it copies what arrived since the thread's
last pass and lets the WAL start over from its beginning (SQLite restarts a WAL only once
every frame is copied, which a checkpoint racing a busy writer rarely sees). If this thread
stops (an error it cannot get past), the writer's own checkpoints work as before: the
thread speeds checkpoints up, and durability never depends on it (each COMMIT is durable
in the WAL, P-LEASE-8).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

log = logging.getLogger("orch8.storage.sqlite")

# After a commit, wait this long before copying: the commits meanwhile go in the same pass,
# and a page written many times meanwhile is copied once. A pass every 100 ms copied hot
# pages so often that a workflow instance cost 4% more CPU than without the thread; one a
# second cost 2% less (bench/results/2026-11-28-sqlite-checkpoint.md).
DEFAULT_INTERVAL_S = 1.0


class Checkpointer:
    """`poke()` after each COMMIT; `stop()` before the writer's connection closes."""

    def __init__(
        self, connect: Callable[[], sqlite3.Connection], interval_s: float = DEFAULT_INTERVAL_S
    ) -> None:
        self._connect = connect
        self._interval_s = interval_s
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self.passes = 0  # checkpoints run (tests, diagnostics)
        self.last: tuple[int, int, int] | None = None  # the last one's (busy, frames, copied)
        self._thread = threading.Thread(
            target=self._run, name="orch8-sqlite-checkpoint", daemon=True
        )
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def poke(self) -> None:
        self._wake.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            conn = self._connect()
        except sqlite3.Error as exc:
            log.warning(
                "WAL checkpoints stay on the writer: no checkpoint connection",
                extra={"cause": repr(exc)},
            )
            return
        failures = 0
        try:
            while True:
                self._wake.wait()
                if self._stopping.wait(self._interval_s):  # commits meanwhile join this pass
                    return
                self._wake.clear()
                try:
                    self.last = tuple(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())
                except sqlite3.Error as exc:
                    failures += 1
                    # The writer's own checkpoints still run; say why this one did not.
                    log.warning(
                        "WAL checkpoint failed; the writer's own checkpoints go on",
                        extra={"cause": repr(exc), "failures": failures},
                    )
                    if self._stopping.wait(min(30.0, self._interval_s * 2**failures)):
                        return
                    continue
                failures = 0
                self.passes += 1
        finally:
            conn.close()
