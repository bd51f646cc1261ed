"""Self-check of the concurrency-key rows (issue 33): the load client's bodies (byte for
byte today's without -keys), the three rows against real SQLite servers, and the report."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

from orch8bench import keys, report  # noqa: E402
from orch8bench.env import LOADGEN, Workdir  # noqa: E402


def _bodies(*flags: str) -> list[bytes]:
    """What `loadgen -mode=fill` sends for 5 tasks, batch 100, to a server that records."""
    got: list[bytes] = []

    class Record(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *_: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Record)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        out = subprocess.run([str(LOADGEN), "-mode=fill", f"-url={url}", "-n=5", "-producers=1",
                              *flags], capture_output=True, text=True, timeout=30)  # fmt: skip
        assert out.returncode == 0, out.stderr
    finally:
        httpd.shutdown()
    return got


def test_keys_off_sends_todays_bodies_and_keys_on_names_key_i_mod_n() -> None:
    task = '{"handler_name":"noop","params":{}}'
    assert _bodies() == [f'{{"tasks":[{",".join([task] * 5)}]}}'.encode()]
    (body,) = _bodies("-keys=2", "-key-limit=7")
    tasks = json.loads(body)["tasks"]
    assert [t["concurrency_key"] for t in tasks] == ["k0", "k1", "k0", "k1", "k0"]
    assert {t["max_concurrency"] for t in tasks} == {7}


def test_three_rows_drain_on_real_servers_and_render(tmp_path: Path) -> None:
    work = Workdir()
    try:
        rows = keys.measure("sqlite", 300, 50, 1, work, None)
        stored = {}
        for db in sorted(work.path.glob("keys_*.db")):  # keys_<row>_<ns>: in ROWS' order
            with sqlite3.connect(db) as c:
                stored[db.name.split("_")[1]] = c.execute(
                    "SELECT count(DISTINCT concurrency_key), max(max_concurrency), "
                    "sum(status = 'completed'), count(*) FROM tasks"
                ).fetchone()
    finally:
        shutil.rmtree(work.path, ignore_errors=True)
    # Every task (warm-up and measured) completed, with the keys its row asked for; the
    # measured run numbers its tasks from 0 again, so 300 keys among the 1,000.
    assert stored == {"0": (0, None, 350, 350), "1": (300, 10, 350, 350), "2": (1, 200, 350, 350)}
    assert [(r["keys"], r["key_limit"]) for r in rows] == list(keys.ROWS.values())
    assert all(r["median"] > 0 and r["cpu_us_per_task"] > 0 and r["polls_per_1000"] >= 10
               for r in rows)  # fmt: skip
    text = "\n".join(report.keys_lines(rows))
    assert "## Concurrency keys" in text and "SQLite, one hot key, limit 200" in text
    off = next(line for line in text.splitlines() if "SQLite, keys off" in line)
    assert off.count("1.00x") == 2  # keys off over itself: tasks/s and CPU per task


def test_report_ratios_add_postgresql_cpu_and_a_failed_backend_keeps_its_place() -> None:
    def row(label: str, keys: int, rate: float, cpu: float, db: float) -> dict:
        return {"backend": "PostgreSQL", "label": f"PostgreSQL, {label}", "keys": keys,
                "median": rate, "spread_pct": 5.0, "runs": [rate], "cpu_us_per_task": cpu,
                "db_us_per_task": db, "polls_per_1000": 10.0}  # fmt: skip

    rows = [row("keys off", 0, 2000, 100, 100), row("1,000 keys", 1000, 500, 150, 250),
            {"backend": "SQLite", "label": "SQLite", "error": "loadgen failed"}]  # fmt: skip
    lines = report.keys_lines(rows)
    keyed = next(line for line in lines if "PostgreSQL, 1,000 keys" in line)
    # (150 + 250) / (100 + 100): server and PostgreSQL CPU together, not the server's alone
    assert "| 0.25x | 2.00x |" in keyed, keyed
    assert any(line.startswith("| SQLite | FAILED: loadgen failed") for line in lines)
