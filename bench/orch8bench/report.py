"""Render a run as bench/results/<date>-<host>.md (for people) and .json (for diffing).

The first table answers "are we there": our figure, the best peer's, the physical limit
(direct SQL, no HTTP) and the target of shared/design.md "Performance", with a verdict.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

# shared/design.md, "Performance" (2-core machine, server and load on the same box).
TARGETS = {
    "sqlite_b100": 25_000,
    "sqlite_b1": 2_500,
    "pg_b100": 10_000,
    "p50_ms": 5.0,
    "p99_ms": 25.0,
}
# A run is flagged when the 1-minute load average *before it started* (others' load) is
# above LOADED. During a run our own server, client and PostgreSQL keep ~2-3 of it busy,
# so a row is flagged only above LOADED_DURING.
LOADED = 1.5
LOADED_DURING = 4.0


def _row(rows: list[dict] | None, batch: int) -> dict | None:
    for r in rows or []:
        if r.get("batch") == batch:
            return r
    return None


def _med(row: dict | None) -> float | None:
    return None if row is None or "median" not in row else row["median"]


def _fmt(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.{digits}f}"


def _pct(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b * 100:.0f}%"


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b:.1f}x"


def _verdict(value: float | None, target: float, higher_is_better: bool) -> str:
    if value is None:
        return "not measured"
    ok = value >= target if higher_is_better else value <= target
    return "meets" if ok else f"misses ({value / target * 100:.0f}% of target)"


def _loaded(row: dict | None) -> str:
    if not row or "load_before" not in row:
        return ""
    worst = max(row["load_before"][0], row.get("load_after", [0])[0])
    return f" (load {worst:.1f})" if worst > LOADED_DURING else ""


def headline(res: dict) -> list[list[str]]:
    """Rows of the first table."""
    best_peer = max(
        (p for p in res.get("peers", []) if "median" in p), key=lambda p: p["median"], default=None
    )
    out = []
    for key, name, rows, ref_rows, batch in (
        ("sqlite_b100", "SQLite, batch 100, tasks/s", "sqlite", "sqlref_sqlite", 100),
        ("sqlite_b1", "SQLite, single poll/complete, tasks/s", "sqlite", "sqlref_sqlite", 1),
        ("pg_b100", "PostgreSQL, batch 100, tasks/s", "pg", "sqlref_pg", 100),
    ):
        row = _row(res.get(rows), batch)
        ours, ref = _med(row), _med(_row(res.get(ref_rows), batch))
        peer = _med(best_peer) if key == "pg_b100" else None
        peer_txt = f"{_fmt(peer)} ({best_peer['peer']})" if peer is not None else "n/a"
        out.append([
            name, _fmt(ours) + _loaded(row), peer_txt, _ratio(ours, peer), _fmt(ref),
            _pct(ours, ref), f">= {TARGETS[key]:,}", _verdict(ours, TARGETS[key], True),
        ])  # fmt: skip
    rep = res.get("pg_replicas")
    if rep and "median" in rep:
        ours = rep["median"]
        peer = _med(best_peer)
        out.append([
            f"PostgreSQL, batch 100, {rep['replicas']} replicas, tasks/s", _fmt(ours) + _loaded(rep),
            f"{_fmt(peer)} ({best_peer['peer']})" if peer is not None else "n/a",
            _ratio(ours, peer), "n/a", "n/a", f">= {TARGETS['pg_b100']:,}",
            _verdict(ours, TARGETS["pg_b100"], True),
        ])  # fmt: skip
    for key, label in (("latency_sqlite", "SQLite"), ("latency_pg", "PostgreSQL"),
                       ("latency_pg_cross", "PostgreSQL across replicas")):  # fmt: skip
        lat = res.get(key)
        for q in ("p50_ms", "p99_ms"):
            v = lat.get(q) if lat else None
            out.append([
                f"pickup latency {q[:3]}, {label}, ms", _fmt(v, 2) + _loaded(lat), "n/a", "n/a",
                "n/a", "n/a", f"<= {TARGETS[q]:g}", _verdict(v, TARGETS[q], False),
            ])  # fmt: skip
    rss = res.get("rss")
    if rss:
        growth = rss["rss_end_mb"] - rss["rss_start_mb"]
        flat = growth <= max(20.0, 0.1 * rss["rss_start_mb"])
        verdict = "meets" if flat else "misses (grows)"
        if rss["tasks"] < 1_000_000:
            verdict += f", only {rss['tasks']:,} tasks (QUICK)"
        out.append([
            f"server RSS draining {rss['tasks']:,} tasks (SQLite), MiB",
            f"peak {rss['peak_mb']:.0f}, {rss['rss_start_mb']:.0f} -> {rss['rss_end_mb']:.0f}",
            "n/a", "n/a", "n/a", "n/a", "flat", verdict,
        ])  # fmt: skip
    return out


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return [*lines, ""]


def _load(row: dict) -> str:
    return (
        f"{row['load_before'][0]:.2f} -> {row['load_after'][0]:.2f}" if "load_before" in row else ""
    )


def _runs(row: dict) -> str:
    return ", ".join(f"{v:,.0f}" for v in row.get("runs", []))


def throughput_table(rows: list[dict], ceiling: dict[int, float], ref: list[dict]) -> list[str]:
    body = []
    for r in rows:
        b = r["batch"]
        body.append([
            b, _fmt(r["median"]), f"{r['spread_pct']}%", _runs(r), r.get("server_cores", ""),
            r.get("client_cores", ""), _fmt(ceiling.get(b)), _fmt(_med(_row(ref, b))),
            _pct(r["median"], _med(_row(ref, b))), f"{r['tasks']:,}", _load(r),
        ])  # fmt: skip
    head = ["batch", "tasks/s (median)", "spread", "runs", "server cores", "client cores",
            "client ceiling", "direct SQL", "of SQL", "tasks/run", "load 1m before -> after"]  # fmt: skip
    return _table(head, body)


def render(res: dict) -> str:
    m = res["machine"]
    ceiling = {r["batch"]: r["median"] for r in res.get("client_ceiling", [])}
    loaded = res["load_start"][0] > LOADED
    L = [f"# Orch8 benchmark, {res['date']} on {m['host']}", ""]
    L += [
        f"{'QUICK run (small counts: a smoke test, not a measurement)' if res['quick'] else 'Full run'}"
        f", {res['duration_s']} s. Load average (1, 5, 15 min) at start {res['load_start']}, "
        f"at end {res['load_end']}."
        + " Load during a row includes the benchmark's own processes (server, load client, "
        "PostgreSQL: 2-3 on 2 cores); a summary figure is marked `(load x)` above "
        f"{LOADED_DURING:g}."
        + (" **The machine was loaded (other processes competing for the 2 cores): figures "
           "are lower bounds, compare them only with runs at a similar load.**" if loaded else ""),
        "",
    ]  # fmt: skip
    L += ["## Summary", ""]
    L += _table(
        ["measure", "ours", "best peer", "ours / peer", "physical limit (direct SQL)",
         "ours / limit", "target (design.md)", "verdict"],
        headline(res),
    )  # fmt: skip
    L += ["## End-to-end throughput", "",
          "enqueue -> claim -> complete, no-op, raw HTTP client (bench/loadgen), finished rows "
          "kept (each backend's database grows through all batch sizes). `server cores` / "
          "`client cores`: CPU seconds per wall second of the server process and of the load "
          "client; `client ceiling`: the same client against a canned-answer stub.", ""]  # fmt: skip
    for key, name, ref in (
        ("sqlite", "SQLite", "sqlref_sqlite"),
        ("pg", "PostgreSQL", "sqlref_pg"),
    ):
        if res.get(key):
            L += [f"### {name}", "", *throughput_table(res[key], ceiling, res.get(ref, []))]
            if key == "pg" and res.get("pg_replicas"):
                r = res["pg_replicas"]
                L += [f"Two replicas on the same database, one load client each (half the tasks "
                      f"each, batch 100): {_fmt(r['median'])} tasks/s (spread {r['spread_pct']}%, "
                      f"runs {_runs(r)}; load {_load(r)}).", ""]  # fmt: skip
    if res.get("client_ceiling"):
        L += ["### Load client ceiling", ""]
        L += _table(["batch", "tasks/s against the stub", "client cores"],
                    [[r["batch"], _fmt(r["median"]), r.get("client_cores", "")]
                     for r in res["client_ceiling"]])  # fmt: skip
    lat = [res[k] for k in ("latency_sqlite", "latency_pg", "latency_pg_cross") if res.get(k)]
    if lat:
        L += ["## Pickup latency", "", "Enqueue (client clock, before the POST) to the waiting "
              "long-poll's answer in the worker; one task at a time, worker parked 20 ms before "
              "each enqueue.", ""]  # fmt: skip
        L += _table(["setup", "samples", "p50 ms", "p99 ms", "max ms",
                     "enqueue call p50 / p99 ms", "load before -> after"],
                    [[r["label"], r["samples"], f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}",
                      f"{r['max_ms']:.2f}",
                      f"{r.get('enqueue_p50_ms', 0):.2f} / {r.get('enqueue_p99_ms', 0):.2f}",
                      _load(r)] for r in lat])  # fmt: skip
        L += ["The enqueue call's own round trip (its commit; with fsync on, PostgreSQL's WAL "
              "flush) bounds pickup from below: the task is not claimable before it commits.",
              ""]  # fmt: skip
    if res.get("sdk"):
        raw_b100 = _med(_row(res.get("sqlite"), 100))
        pattern = _med(res["sdk"][0])
        L += ["## SDK workers (SQLite server)", "",
              f"Each SDK's `Worker`, concurrency {res['sdk_concurrency']}, no-op handler; timed "
              "from the start of a batch-100 enqueue of the tasks to the server showing none "
              "pending or running. The raw row does the SDKs' request pattern (batch poll, "
              "one complete call per task) with the Go client.", ""]  # fmt: skip
        body = []
        for r in res["sdk"]:
            if "error" in r:
                body.append([r["sdk"], "FAILED", "", "", "", "", r["error"][:120]])
                continue
            body.append([r["sdk"], _fmt(r["median"]), f"{r['spread_pct']}%",
                         _pct(r["median"], pattern), _pct(r["median"], raw_b100),
                         r.get("server_cores", ""), _load(r)])  # fmt: skip
        L += _table(["worker", "tasks/s", "spread", "of raw, same pattern", "of raw batch 100",
                     "server cores", "load"], body)  # fmt: skip
    if res.get("peers"):
        L += ["## Peers on the same PostgreSQL", "",
              "Each in a fresh database of the same cluster, its documented settings, no-op job, "
              "jobs enqueued in batches of 100 while its worker runs, timed to the database "
              "showing every job done.", ""]  # fmt: skip
        ours = _med(_row(res.get("pg"), 100))
        body = [[r["peer"], "FAILED" if "error" in r else _fmt(r["median"]),
                 r.get("spread_pct", ""), _ratio(ours, r.get("median")), r.get("settings") or
                 r.get("error", "")[:120], _load(r)] for r in res["peers"]]  # fmt: skip
        L += _table(["peer", "jobs/s", "spread %", "ours (batch 100) / peer", "settings", "load"],
                    body)  # fmt: skip
    rss = res.get("rss")
    if rss:
        L += ["## Server memory while draining", "",
              f"{rss['tasks']:,} tasks enqueued first ({_fmt(rss['fill_tasks_per_s'])} tasks/s), "
              f"then drained at batch 100 ({_fmt(rss['drain_tasks_per_s'])} tasks/s); RSS at "
              f"drain start {rss['rss_start_mb']} MiB, end {rss['rss_end_mb']} MiB, peak (VmHWM, "
              f"includes the fill) {rss['peak_mb']} MiB. Load {_load(rss)}.", ""]  # fmt: skip
        step = max(1, len(rss["samples"]) // 12)
        body, prev = [], None
        for smp in rss["samples"][::step]:  # drain rate between shown rows: flat = claims stay fast
            rate = ""
            if prev and smp["t"] > prev["t"] and smp["done"] > prev["done"]:
                rate = _fmt((smp["done"] - prev["done"]) / (smp["t"] - prev["t"]))
            body.append([smp["t"], f"{smp['done']:,}", rate, smp["rss_mb"]])
            prev = smp
        L += _table(
            ["s", "done (client's 2 s progress)", "tasks/s since previous row", "RSS MiB"], body
        )
    if res.get("notes"):  # added by hand to the JSON after a run, then re-rendered
        L += ["## Notes", "", *[f"- {n}" for n in res["notes"]], ""]
    L += ["## Machine and settings", ""]
    L += [f"- {k}: {v}" for k, v in m.items()]
    L += [f"- settings: `{json.dumps(res['settings'])}`",
          f"- load client shape (producers, consumers) per batch: `{json.dumps(res['shape'])}`",
          "- PostgreSQL: throwaway cluster (server/tests/pg_cluster.py), fsync on, "
          "shared_buffers 128MB, full_page_writes off; SQLite: WAL, synchronous NORMAL.", ""]  # fmt: skip
    return "\n".join(L)


def write(res: dict[str, Any], outdir: Path) -> tuple[str, str]:
    res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    outdir.mkdir(parents=True, exist_ok=True)
    stem = time.strftime("%Y-%m-%d", time.gmtime()) + "-" + res["machine"]["host"]
    if res["quick"]:
        stem += "-quick"
    if res.get("partial"):  # --only: a debugging run, never the committed report
        stem += "-partial"
    md, js = outdir / f"{stem}.md", outdir / f"{stem}.json"
    md.write_text(render(res))
    js.write_text(json.dumps(res, indent=1))
    return str(md), str(js)


def main() -> None:
    """Re-render the Markdown of a run from its JSON: python -m orch8bench.report X.json"""
    import sys

    path = Path(sys.argv[1])
    path.with_suffix(".md").write_text(render(json.loads(path.read_text())))


if __name__ == "__main__":
    main()
