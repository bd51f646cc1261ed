"""Render a run as bench/results/<date>-<host>.md (for people) and .json (for diffing).

The first table (verdicts.py) answers "are we there": our figure and CPU per task, the
best peer's, the physical limit (minimal table by bare SQL and over a minimal HTTP loop)
and the target of shared/design.md "Performance", with a verdict.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from orch8bench.verdicts import (
    HEAD,
    LATENCY,
    LOADED_DURING,
    all_cpu,
    fmt,
    headline,
    med,
    pct,
    ratio,
    row_for,
    sdk_share,
    telemetry_pairs,
)

# A run is flagged when the 1-minute load average *before it started* (others' load) is
# above LOADED.
LOADED = 1.5


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


def _has_db(rows: list[dict]) -> bool:
    """Rows that carry PostgreSQL's own CPU per task (run.py: `db_cpu`)."""
    return any("db_us_per_task" in r for r in rows)


def throughput_table(rows: list[dict], ceiling: dict[int, float], limit: dict) -> list[str]:
    body = []
    db = _has_db(rows)
    for r in rows:
        b = r["batch"]
        http, sql = med(row_for(limit.get("http"), b)), med(row_for(limit.get("sql"), b))
        body.append([
            b, fmt(r["median"]), f"{r['spread_pct']}%", _runs(r), r.get("server_cores", ""),
            fmt(r.get("cpu_us_per_task")),
            *([fmt(r.get("db_us_per_task"))] if db else []),
            r.get("client_cores", ""), fmt(ceiling.get(b)),
            fmt(http), pct(r["median"], http), fmt(sql), pct(r["median"], sql),
            f"{r['tasks']:,}", _load(r),
        ])  # fmt: skip
    head = ["batch", "tasks/s (median)", "spread", "runs", "server cores", "server CPU us/task",
            *(["PostgreSQL CPU us/task"] if db else []),
            "client cores", "client ceiling", "minimal HTTP", "of HTTP limit", "bare SQL",
            "of SQL limit", "tasks/run", "load 1m before -> after"]  # fmt: skip
    return _table(head, body)


def limit_table(limit: dict) -> list[str]:
    body = []
    db = _has_db([*limit.get("http", []), *limit.get("sql", [])])
    for h in limit.get("http", []):
        s = row_for(limit.get("sql"), h["batch"]) or {}
        body.append([
            h["batch"], fmt(h["median"]), f"{h['spread_pct']}%", fmt(h.get("cpu_us_per_task")),
            *([fmt(h.get("db_us_per_task"))] if db else []),
            fmt(s.get("median")), f"{s.get('spread_pct', '')}%", fmt(s.get("cpu_us_per_task")),
            *([fmt(s.get("db_us_per_task"))] if db else []),
            f"{_load(h)}; {_load(s) if s else ''}",
        ])  # fmt: skip
    pg = ["PostgreSQL CPU us/task"] if db else []
    head = ["batch", "minimal HTTP tasks/s", "spread", "its CPU us/task", *pg,
            "bare SQL tasks/s", "spread", "its CPU us/task", *pg,
            "load (HTTP; SQL)"]  # fmt: skip
    return _table(head, body)


def _rounds(res: dict, r: dict) -> str:
    """The share the verdict judges (verdicts.sdk_share) with the rounds it comes from."""
    shares, beside = r.get("raw_b100_rounds"), r.get("raw_b100_beside")
    if not shares or beside is None:
        return "n/a"
    each = ", ".join(f"{x:.0%}" for x in shares)
    return f"{sdk_share(res, r):.0%} (rounds {each}; raw median {fmt(beside)})"


def _requests(row: dict) -> list[str]:
    """Issue 32: polls and completion requests per 1,000 tasks (sdks.per_1000); blank for
    rows that did not count them (the raw client, runs before the count existed)."""
    return [
        fmt(row[k], 1) if k in row else ""
        for k in ("polls_per_1000", "completion_requests_per_1000")
    ]


def sdk_table(res: dict) -> list[str]:
    """Each SDK's worker against the raw client: rate, shares, server CPU and, since
    issue 32, the polls and completion requests it needed per 1,000 tasks."""
    raw_b100 = med(row_for(res.get("sqlite"), 100))
    pattern = med(res["sdk"][0])
    L = ["## SDK workers (SQLite server)", "",
         f"Each SDK's `Worker`, concurrency {res['sdk_concurrency']}, no-op handler; timed "
         "from the start of a batch-100 enqueue of the tasks to the server showing none "
         "pending or running (the drain is followed by the worker's own count of handler "
         "calls; the server is asked once that count covers the run). The raw row does "
         "the SDKs' request pattern (batch poll, one complete call per task) with the Go "
         "client. `of raw batch 100` compares with the end-to-end batch-100 row above; "
         "`in its rounds` with the raw client at batch 100 (same shape, same task count) "
         "run in the same interleaved rounds as that SDK's workers, on the same server, "
         "each round's SDK run over the raw run beside it: the design's 80% target is "
         "judged on the median of those shares, as the machine's speed drifts between "
         "phases and rounds (the batch-100 row moved 7,986-9,821 tasks/s between three "
         "runs of the same code). `polls` and `completion requests` per 1,000 tasks: "
         "the requests of those kinds the server answered during the SDK's runs (median "
         "of its rounds; the raw row, not counted, sends one completion request per task). "
         "Code measured: "
         + "; ".join(f"{k} {v}" for k, v in res.get("revisions", {}).items())
         + ".", ""]  # fmt: skip
    body = []
    for r in res["sdk"]:
        if "error" in r:
            body.append([r["sdk"], "FAILED", *[""] * 8, r["error"][:120]])
            continue
        body.append([r["sdk"], fmt(r["median"]), f"{r.get('spread_pct', '')}%",
                     pct(r["median"], pattern), pct(r["median"], raw_b100),
                     _rounds(res, r),
                     r.get("server_cores", ""), fmt(r.get("cpu_us_per_task")),
                     *_requests(r), _load(r)])  # fmt: skip
    L += _table(["worker", "tasks/s", "spread", "of raw, same pattern", "of raw batch 100",
                 "of raw batch 100 in its rounds", "server cores", "server CPU us/task",
                 "polls / 1,000 tasks", "completion requests / 1,000 tasks", "load"],
                body)  # fmt: skip
    return L


def telemetry_table(res: dict) -> list[str]:
    """Issue 18: per SDK, tasks/s and worker CPU per task before issue 18, telemetry off
    and on, measured in interleaved rounds (sdks.py)."""
    L = ["### Telemetry cost (issue 18)", "",
         "The same no-op worker per SDK, three processes on one server, each draining its own "
         "handler's tasks, timed in interleaved rounds: on the SDK **before issue 18** "
         f"(`{res.get('sdk_baseline', 'n/a')}`), today's SDK with telemetry **off** (no "
         "telemetry object), and **on** (`ORCH8_TELEMETRY=1`: the SDK's OpenTelemetry object "
         "on the OpenTelemetry SDK's own tracer and meter providers, spans batched into an "
         "exporter that drops them, metrics aggregated by a reader never read: the "
         "instrumentation's cost without a network exporter's). `worker CPU us/task`: the "
         "worker process's CPU time per task over the timed part, steadier than tasks/s on a "
         "shared machine.", ""]  # fmt: skip
    body = []
    for sdk, before, off, on in telemetry_pairs(res):
        cpu = [r.get("worker_cpu_us_per_task") for r in (before, off, on)]
        body.append([
            sdk, "FAILED" if "error" in before else fmt(med(before)),
            "FAILED" if "error" in off else fmt(med(off)), pct(med(off), med(before)),
            "FAILED" if "error" in on else fmt(med(on)), pct(med(on), med(off)),
            " / ".join(fmt(c) for c in cpu),
            fmt(cpu[2] - cpu[1]) if cpu[1] is not None and cpu[2] is not None else "n/a",
            " / ".join(f"{r['spread_pct']}%" if "spread_pct" in r else "-" for r in (before, off, on)),
            "; ".join(f"{k}: {r['error'][:100]}" for k, r in (("before", before), ("on", on)) if "error" in r),
        ])  # fmt: skip
    L += _table(["worker", "before issue 18 tasks/s", "telemetry off tasks/s", "off / before",
                 "telemetry on tasks/s", "on / off", "worker CPU us/task before / off / on",
                 "on - off CPU us/task", "spread before / off / on", "errors"], body)  # fmt: skip
    return L


def workflow_lines(res: dict) -> list[str]:
    """Issue 16: 3-step instances completed per second, per backend."""
    rows = [res[k] for k in ("wf_sqlite", "wf_pg") if res.get(k)]
    if not rows:
        return []
    L = ["### Workflows", "",
         "3-step sequences (a -> b -> c, each step's params from the previous output): N "
         "instances started by 4 threads, 100 per `POST /instances/batch` (P-WF-14), drained by 4 raw workers (poll/batch 50 + "
         "complete/batch); from the first start to the last step's completion.", ""]  # fmt: skip
    L += _table(["backend", "instances", "instances/s", "step tasks/s", "spread", "runs",
                 "server CPU us/instance", "PostgreSQL CPU us/instance", "load"],
                [[r["label"], r["instances"], fmt(r["median"]), fmt(3 * r["median"]),
                  f"{r['spread_pct']}%", _runs(r), r.get("cpu_us_per_task", "") and
                  fmt(3 * r["cpu_us_per_task"]),
                  fmt(3 * r["db_us_per_task"]) if r.get("db_us_per_task") else "",
                  _load(r)] for r in rows])  # fmt: skip
    return L


def keys_lines(rows: list[dict]) -> list[str]:
    """Issue 33 (orch8bench/keys.py): batch 100 with concurrency keys off, 1,000 keys and one
    hot key per backend, in interleaved rounds; ratios to keys off of the same backend."""
    if not rows:
        return []
    L = ["## Concurrency keys", "",
         "The end-to-end batch-100 row with keys off, with 1,000 distinct keys (task i has key "
         "`k<i % 1000>`, `max_concurrency` 10: never full, every batch names 100 keys) and "
         "with one hot key (`max_concurrency` 200: every task queues for one key's slots), "
         "each on a fresh server and database, in interleaved rounds; medians. `CPU us/task, "
         "all`: server + PostgreSQL (whole cluster); `claims / 1,000 tasks`: polls answered "
         "(10 when every claim is full). `x off`: the row over keys off of the same backend.",
         ""]  # fmt: skip

    def cpu(r: dict) -> float | None:  # SQLite rows: the server alone
        return r.get("cpu_us_per_task") and r["cpu_us_per_task"] + r.get("db_us_per_task", 0)

    body = []
    for r in rows:
        if "error" in r:
            body.append([r["label"], f"FAILED: {r['error'][:120]}", *[""] * 9])
            continue
        off = next(o for o in rows if o["backend"] == r["backend"] and o.get("keys") == 0)
        body.append([r["label"], fmt(r["median"]), f"{r['spread_pct']}%", _runs(r),
                     fmt(r.get("cpu_us_per_task")), fmt(r.get("db_us_per_task")), fmt(cpu(r)),
                     fmt(r.get("polls_per_1000"), 1), ratio(r["median"], off["median"]),
                     ratio(cpu(r), cpu(off)), _load(r)])  # fmt: skip
    L += _table(["row", "tasks/s", "spread", "runs", "server CPU us/task",
                 "PostgreSQL CPU us/task", "CPU us/task, all", "claims / 1,000 tasks",
                 "tasks/s x off", "CPU/task x off", "load"], body)  # fmt: skip
    return L


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
    L += _table(HEAD, headline(res))
    L += ["## End-to-end throughput", "",
          "enqueue -> claim -> complete, no-op, raw HTTP client (bench/loadgen), finished rows "
          "kept (each backend's database grows through all batch sizes). `server cores` / "
          "`client cores`: CPU seconds per wall second of the server process and of the load "
          "client; `server CPU us/task`: the server's CPU time over the measured window "
          "(warm-up excluded) per task; `client ceiling`: the same client against a "
          "canned-answer stub; `minimal HTTP` / `bare SQL`: the physical limit below.", ""]  # fmt: skip
    for key, name in (("sqlite", "SQLite"), ("pg", "PostgreSQL")):
        if res.get(key):
            limit = res.get(f"limit_{key}") or {}
            L += [f"### {name}", "", *throughput_table(res[key], ceiling, limit)]
            if key == "pg":
                L += ["PostgreSQL runs on its defaults for every system measured here, "
                      "`autovacuum_naptime` 60 s included: until autovacuum visits `tasks`, each "
                      "claim steps over the entries of the tasks claimed since its last run "
                      "(`results/2026-11-28-pg-autovacuum.md`: after 300,000 tasks, PostgreSQL "
                      "CPU per task 90-92 us on the default, 69-76 at 5 s, the setting the server "
                      "README recommends for a busy queue).", ""]  # fmt: skip
            if key == "pg" and res.get("pg_replicas"):
                r = res["pg_replicas"]
                L += [f"Two replicas on the same database, one load client each (half the tasks "
                      f"each, batch 100): {fmt(r['median'])} tasks/s (spread {r['spread_pct']}%, "
                      f"runs {_runs(r)}; load {_load(r)}).", ""]  # fmt: skip
    L += workflow_lines(res)
    if res.get("client_ceiling"):
        L += ["### Load client ceiling", ""]
        L += _table(["batch", "tasks/s against the stub", "client cores"],
                    [[r["batch"], fmt(r["median"]), r.get("client_cores", "")]
                     for r in res["client_ceiling"]])  # fmt: skip
    L += keys_lines(res.get("keys", []))
    if res.get("limit_sqlite") or res.get("limit_pg"):
        L += ["## Physical limit: the minimal table", "",
              "A table of id, status, payload and lease with the claim index, nothing else "
              "(orch8bench/minimal.py), in the same run: `bare SQL` runs enqueue (one INSERT "
              "per batch), claim (one UPDATE ... RETURNING) and complete (one UPDATE per batch, "
              "lease checked) straight on the database (SQLite: one connection; PostgreSQL: 4 "
              "loops, claims with synchronous_commit off as the server's); `minimal HTTP` is "
              "the same table behind Starlette + uvicorn (orch8bench/minimal_http.py), driven "
              "by the same load client, batch sizes and counts as the server. CPU us/task is "
              "that process's own CPU time per task.", ""]  # fmt: skip
        for key, name in (("limit_sqlite", "SQLite"), ("limit_pg", "PostgreSQL")):
            if res.get(key, {}).get("error"):
                L += [f"### {name}", "", f"FAILED: {res[key]['error']}", ""]
            elif res.get(key):
                L += [f"### {name}", "", *limit_table(res[key])]
    lat = [res[k] for k in LATENCY if res.get(k)]
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
        if res.get("pg_settle"):
            st = res["pg_settle"]
            L += [f"PostgreSQL rows are measured once the database settled after the throughput "
                  f"phases: a CHECKPOINT ({st['checkpoint_s']} s), then no autovacuum worker "
                  f"running ({st['settle_s']} s in all; autovacuum seen: "
                  f"{', '.join(f'`{q}`' for q in st['autovacuum']) or 'none'}). The tasks table "
                  f"then held {st['tasks_live']:,} rows and {st['tasks_dead']:,} dead row versions "
                  "not yet vacuumed, which a claim's index scan walks past (PROFILE.md).",
                  ""]  # fmt: skip
        if res.get("pg_vacuum"):
            vac = res["pg_vacuum"]
            L += ["The row `right after the burst` is measured then. The PostgreSQL rows after "
                  "it, the ones the targets judge, wait until autovacuum has removed those dead "
                  "versions, as it does by itself on PostgreSQL's defaults within a minute or so "
                  "of a burst (the tasks table's scale factor is 1%): "
                  f"{vac['dead_before']:,} -> {vac['dead']:,} dead after {vac['waited_s']} s"
                  + ("" if vac["vacuumed"] else ", NOT vacuumed within the limit") + ".",
                  ""]  # fmt: skip
    if res.get("sdk"):
        L += sdk_table(res)
    if res.get("sdk_telemetry"):
        L += telemetry_table(res)
    if res.get("peers"):
        L += ["## Peers on the same PostgreSQL", "",
              "Each in a fresh database of the same cluster, at the throughput settings its own "
              "documentation recommends (cited in `settings`), no-op job, jobs enqueued in "
              "batches of 100 while its worker runs, timed to the database showing every job "
              "done. `process CPU us/job`: the peer's one process (worker and producer) over "
              "the timed part, per job; compare with our server's CPU per task (enqueue, claim "
              "and complete, HTTP included). `PostgreSQL CPU us/job`: the cluster's processes "
              "over the peer's whole run (schema setup and warm-up included, per job of both); "
              "`CPU us/job, both`: the two added, what a job costs this 2-core machine; "
              "`ours / peer, CPU both`: our batch-100 row's server + PostgreSQL CPU per task "
              "over that (the design's target: at most 1.0x graphile-worker).", ""]  # fmt: skip
        ours_row = row_for(res.get("pg"), 100) or {}
        ours, ours_cpu = med(ours_row), all_cpu(ours_row)
        body = [[r["peer"], "FAILED" if "error" in r else fmt(r["median"]),
                 r.get("spread_pct", ""), ratio(ours, r.get("median")),
                 fmt(r.get("cpu_us_per_task")), fmt(r.get("db_us_per_task")),
                 fmt(all_cpu(r)), ratio(ours_cpu, all_cpu(r)),
                 r.get("settings") or r.get("error", "")[:120], _load(r)]
                for r in res["peers"]]  # fmt: skip
        if ours_row:
            body.append(["ours: server, raw client at batch 100", fmt(ours), ours_row["spread_pct"],
                         "1.00x", fmt(ours_row.get("cpu_us_per_task")),
                         fmt(ours_row.get("db_us_per_task")), fmt(ours_cpu), "1.00x",
                         "the PostgreSQL batch-100 row above (server only; the load client's "
                         "CPU is not in it)", _load(ours_row)])  # fmt: skip
        L += _table(["peer", "jobs/s", "spread %", "ours (batch 100) / peer",
                     "process CPU us/job", "PostgreSQL CPU us/job", "CPU us/job, both",
                     "ours / peer, CPU both", "settings", "load"], body)  # fmt: skip
    rss = res.get("rss")
    if rss:
        L += ["## Server memory while draining", "",
              f"{rss['tasks']:,} tasks enqueued first ({fmt(rss['fill_tasks_per_s'])} tasks/s), "
              f"then drained at batch 100 ({fmt(rss['drain_tasks_per_s'])} tasks/s); RSS at "
              f"drain start {rss['rss_start_mb']} MiB, end {rss['rss_end_mb']} MiB, peak (VmHWM, "
              f"includes the fill) {rss['peak_mb']} MiB. Load {_load(rss)}.", ""]  # fmt: skip
        step = max(1, len(rss["samples"]) // 12)
        body, prev = [], None
        for smp in rss["samples"][::step]:  # drain rate between shown rows: flat = claims stay fast
            rate = ""
            if prev and smp["t"] > prev["t"] and smp["done"] > prev["done"]:
                rate = fmt((smp["done"] - prev["done"]) / (smp["t"] - prev["t"]))
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
