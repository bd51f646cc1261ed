"""The SDK phase of `make bench`: each SDK's Worker (bench/sdk/) draining no-op tasks, and
what issue 18's telemetry costs.

Per SDK, three workers run side by side on one server, each on its own handler name so it
drains only its own tasks, timed in interleaved rounds (before, off, on, before, ...) so a
drift of the shared machine's load hits all three alike:

- `off`: today's SDK without a telemetry object: the row the summary's SDK verdict uses;
- `on`: ORCH8_TELEMETRY=1, the SDK's OpenTelemetry object on OpenTelemetry SDK providers
  whose exporters drop everything (bench/sdk/*): the instrumentation's own cost;
- `before`: the same worker on the SDK before issue 18 (before.py): off must match it.

Besides tasks/s, each round records the worker process's CPU time per task, the steadier
measure of an instrumentation's cost on a shared machine, and the polls and completion
requests the server answered per 1,000 tasks (issue 32: the batching of P-SDK-12/13/26).
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from orch8bench import before
from orch8bench.env import BENCH, REPO, RunningServer, cpu_seconds, loadgen_window, log
from orch8bench.measure import interleaved, repeat

SDK_CONCURRENCY = 100
VARIANTS = ("before", "off", "on")


def worker_cmd(name: str, url: str, c: str, handler: str) -> list[str]:
    """Today's worker program of SDK `name`."""
    return {
        "Python": [str(REPO / ".venv" / "bin" / "python"), str(BENCH / "sdk" / "py_worker.py"),
                   url, c, handler],
        "TypeScript": ["node", str(BENCH / "sdk" / "ts_worker.mjs"), url, c, handler],
        "Go": [str(BENCH / ".bin" / "goworker"), url, c, handler],
    }[name]  # fmt: skip


STALL_S = 60  # no task of the handler finished for this long: the worker is stuck
# Watching the drain through the server costs it a /queues answer per look, which counts
# the pending backlog (~5 ms at 20,000 pending; a 10 ms loop of them was ~46% of the
# server's CPU in an SDK row, py-spy). So the drain is followed by the worker's own count
# of handler calls (each program prints every 100th), and the server is asked only once
# that count covers the run: every 10 ms until it shows none pending or running.
TICK_S = 0.01


# The server's answered requests per operationId (the count of its request histogram).
# Other variants' idle workers add their parked polls (at most one per 30 s wait each).
COUNTED = {"polls": ("pollTasks",), "completion_requests": ("completeTasks", "completeTask")}
_ANSWERED = re.compile(r'^orch8_request_duration_seconds_count\{operation="(\w+)"\} (\S+)$', re.M)


def request_counts(metrics: str) -> dict[str, float]:
    """Answered requests so far of each COUNTED kind, read from a /metrics page."""
    by_op = {m[1]: float(m[2]) for m in _ANSWERED.finditer(metrics)}
    return {kind: sum(by_op.get(op, 0.0) for op in ops) for kind, ops in COUNTED.items()}


def answered(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        return request_counts(r.read().decode())


def per_1000(before: dict[str, float], after: dict[str, float], n: int) -> dict[str, float]:
    """`polls_per_1000`, `completion_requests_per_1000` of a run of n tasks."""
    return {f"{k}_per_1000": round((after[k] - before[k]) * 1000 / n, 1) for k in COUNTED}


def left(url: str, handler: str) -> int:
    """Tasks of `handler` pending or running (another variant's leftovers do not count)."""
    with urllib.request.urlopen(url + "/queues", timeout=5) as r:
        qs = json.loads(r.read())["queues"]
    return sum(q["pending"] + q["running"] for q in qs if q["handler_name"] == handler)


def drained(done: int, n: int, filling: bool, left: Callable[[], int]) -> bool:
    """Whether a run of n tasks is over: the worker handled n of them, the fill ended and
    the server shows none left. The server is asked (`left`) only once the rest holds."""
    return done >= n and not filling and left() == 0


class RunningWorker:
    """One SDK worker process and the timed fill + drain of its handler's tasks."""

    def __init__(
        self, label: str, cmd: list[str], env: dict[str, str], handler: str, server_pid: int = 0
    ) -> None:
        self.label, self.handler, self.server_pid = label, handler, server_pid
        self.handled = 0  # handler calls so far, as the program last printed
        # The last lines the worker logged: read all along, so a worker that logs a lot
        # never blocks on a full pipe (it would look stalled), and an error can say why.
        self.logged: collections.deque[str] = collections.deque(maxlen=40)
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **env},
        )  # fmt: skip
        threading.Thread(target=self._follow, daemon=True).start()
        self._log_reader = threading.Thread(target=self._keep_log, daemon=True)
        self._log_reader.start()

    def _follow(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip().isdigit():
                self.handled = int(line)

    def _keep_log(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.logged.append(line)

    def log_tail(self) -> str:
        return "".join(self.logged)[-2000:]

    def _alive(self) -> None:
        """Raise, with the worker's last log lines, if it exited."""
        if self.proc.poll() is not None:
            self._log_reader.join(timeout=5)  # until its stderr ends: the last lines
            raise RuntimeError(f"{self.label} worker exited: {self.log_tail()}")

    def once(self, url: str, n: int) -> dict:
        """Enqueue n tasks (batch 100) and time them to the server showing none pending
        or running; count the requests the server answered meanwhile.

        The server's CPU (`cpu_s`) is read inside the two /metrics reads, so rendering
        them is not counted."""
        self._alive()  # one that exited since the last run has no CPU time to read
        counts = answered(url)
        server0 = cpu_seconds(self.server_pid) if self.server_pid else 0.0
        start = time.perf_counter()
        cpu0 = cpu_seconds(self.proc.pid)
        base = self.handled
        fill = subprocess.Popen(
            [str(BENCH / ".bin" / "loadgen"), "-mode=fill", f"-url={url}", f"-n={n}",
             f"-handler={self.handler}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        last, moved = -1, start
        while True:
            now = time.perf_counter()
            self._alive()
            handled = self.handled
            if drained(handled - base, n, fill.poll() is None, lambda: left(url, self.handler)):
                break
            if handled != last:
                last, moved = handled, now
            elif now - moved > STALL_S:
                todo = left(url, self.handler)
                raise RuntimeError(
                    f"{self.label} worker stalled: {todo} of {n} tasks left; it logged: "
                    f"{self.log_tail() or '(nothing)'}"
                )
            time.sleep(TICK_S)
        secs = time.perf_counter() - start
        worker_us = (cpu_seconds(self.proc.pid) - cpu0) / n * 1e6
        out = {"tasks_per_s": n / secs, "seconds": secs, "tasks": n,
               "worker_cpu_us_per_task": round(worker_us, 1)}  # fmt: skip
        if self.server_pid:
            out["cpu_s"] = cpu_seconds(self.server_pid) - server0
        return out | per_1000(counts, answered(url), n)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def round_shares(sdk: dict, raw: dict) -> list[float]:
    """Per interleaved round, the SDK's rate over the raw client's run beside it: pairs
    close in time, so a drift of the machine's speed between rounds cancels out."""
    pairs = zip(sdk.get("details", []), raw.get("details", []), strict=False)
    return [round(a["tasks_per_s"] / b["tasks_per_s"], 3) for a, b in pairs if b.get("tasks_per_s")]


def raw_b100_args(url: str, n: int, cfg: dict) -> list[str]:
    """The raw client at batch 100 as the end-to-end rows run it (2 producers, 4 consumers),
    on a handler no SDK worker polls."""
    return ["-mode=run", f"-url={url}", "-batch=100", f"-n={n}", f"-warmup={cfg['warmup']}",
            "-producers=2", "-consumers=4", "-handler=noop_raw"]  # fmt: skip


def sdk_variants(name: str, server: RunningServer, cfg: dict, workdir: Path) -> dict[str, dict]:
    """{variant: row or {"error"}} of SDK `name`; one broken variant keeps the others."""
    url, c, n = server.url, str(SDK_CONCURRENCY), cfg["sdk_tasks"][name]
    out: dict[str, dict] = {}
    workers: dict[str, RunningWorker] = {}
    try:
        for v in VARIANTS:
            label, handler = f"{name} SDK Worker, telemetry {v}", f"noop_{v}"
            if v == "before":
                label = f"{name} SDK Worker, before issue 18"
            try:
                if v == "before":
                    cmd, env = before.worker(name, url, c, handler, workdir)
                else:
                    cmd, env = worker_cmd(name, url, c, handler), {}
                if v == "on":
                    env["ORCH8_TELEMETRY"] = "1"
                w = workers[v] = RunningWorker(label, cmd, env, handler, server.process.pid)
                w.once(url, max(200, n // 10))  # warm-up, not counted
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                log(f"  {label} FAILED: {exc}")
                out[v] = {"sdk": name, "label": label, "error": str(exc)[-2000:]}
                if v in workers:
                    workers.pop(v).stop()
        onces = {w.label: (lambda w=w: w.once(url, n)) for w in workers.values()}
        # The SDK's yardstick, in the same rounds: the raw client at batch 100 (the bench's
        # end-to-end shape) on its own handler, beside this SDK's idle workers.
        beside = f"raw client, batch 100, beside the {name} workers"
        if onces:
            onces[beside] = lambda: loadgen_window(server.process.pid, *raw_b100_args(url, n, cfg))
        rows = interleaved(onces, cfg["reps"], server_pid=server.process.pid) if onces else {}
        for v, w in workers.items():
            out[v] = rows[w.label] | {"sdk": name, "variant": v, "concurrency": SDK_CONCURRENCY,
                                      "tasks": n}  # fmt: skip
        if beside in rows:
            out["raw_b100"] = rows[beside] | {"tasks": n}
            if "off" in workers:  # each round's off run over the raw run beside it
                out["off"]["raw_b100_rounds"] = round_shares(
                    rows[workers["off"].label], rows[beside]
                )
    except RuntimeError as exc:  # a worker died mid-round: every variant of this SDK is lost
        log(f"  {name} FAILED: {exc}")
        out = {v: {"sdk": name, "label": f"{name} SDK Worker", "error": str(exc)[-2000:]}
               for v in VARIANTS}  # fmt: skip
    finally:
        for w in workers.values():
            w.stop()
    return out


def sdks(server: RunningServer, cfg: dict, workdir: Path) -> tuple[list[dict], list[dict]]:
    """(the SDK rows: raw client, then each SDK with telemetry off; the telemetry rows:
    per SDK its `before` and `on` rows)."""
    url = server.url
    args = ["-mode=run", f"-url={url}", "-batch=100", f"-n={cfg['sdk_tasks']['raw']}",
            f"-warmup={cfg['warmup']}", "-producers=2", "-consumers=1", "-complete-each"]  # fmt: skip
    raw = repeat("raw client, SDK request pattern", cfg["reps"],
                 lambda: loadgen_window(server.process.pid, *args))  # fmt: skip
    raw.update(sdk="raw (poll batch 100, one complete per task)", tasks=cfg["sdk_tasks"]["raw"])
    rows, telemetry = [raw], []
    for name in ("Python", "TypeScript", "Go"):
        log(
            f"SDK {name} Worker (concurrency {SDK_CONCURRENCY}): before issue 18, telemetry off, on"
        )
        got = sdk_variants(name, server, cfg, workdir)
        off = got["off"]
        off["label"] = f"{name} SDK Worker"
        if "median" in got.get("raw_b100", {}):
            off["raw_b100_beside"] = got["raw_b100"]["median"]
        rows.append(off)
        telemetry.append({"sdk": name, "before": got["before"], "on": got["on"]})
    return rows, telemetry
