"""The first table of the report: per target of shared/design.md "Performance", our figure,
the server's CPU per task, the best peer's figure, the physical limit (the minimal table
by bare SQL and over a minimal HTTP loop, same run), the target and a verdict."""

from __future__ import annotations

import statistics
from typing import Any

# shared/design.md, "Performance" (2-core machine, server and load on the same box).
TARGETS: dict[str, float] = {
    "sqlite_b100": 25_000,
    "sqlite_b1": 2_500,
    "pg_b1": 1_500,
    "p50_sqlite_ms": 3.0,
    "p50_pg_ms": 4.0,
    "p99_ms": 15.0,
    "of_http_limit": 0.40,
    "sdk_of_raw_b100": 0.80,
    # Issue 18: an SDK without telemetry runs as fast as before it (interleaved rounds).
    "telemetry_off_of_before": 0.95,
    # Issue 30: 3-step workflow instances per second, and a 3-step instance's CPU against
    # one batch-100 task's of the same run (all CPU: server, plus PostgreSQL there).
    "wf_sqlite": 2_000,
    "wf_pg": 1_000,
    "wf_of_b100_cpu": 4.0,
}
# Issue 30 (design.md "Performance"): PostgreSQL batch 100 against named peers of the same
# run. Ours / peer in tasks/s (at least), and all CPU per task, server + PostgreSQL, against
# the peer's per job, process + PostgreSQL (at most); None: stated, no target.
PEER_RATE_TARGETS: dict[str, float | None] = {
    "pg-boss": 1.2,
    "pgqueuer": 1.2,
    "graphile-worker": 0.8,
    "river": None,
}
PEER_CPU_TARGETS: dict[str, float | None] = {"graphile-worker": 1.0, "river": None}
HEAD = ["measure", "ours", "server CPU us/task", "best peer", "ours / peer",
        "limit: bare SQL", "limit: minimal HTTP", "ours / HTTP limit", "target", "verdict"]  # fmt: skip
# A row is marked `(load x)` when the 1-minute load around it exceeded this: the bench's
# own server, client and PostgreSQL keep ~2-3 of the 2 cores busy.
LOADED_DURING = 4.0

# The pickup-latency rows of a run, in report order (run.py: `latency(...)`).
LATENCY = ("latency_sqlite", "latency_pg_burst", "latency_pg", "latency_pg_cross")


def row_for(rows: list[dict] | None, batch: int) -> dict | None:
    for r in rows or []:
        if r.get("batch") == batch:
            return r
    return None


def med(row: dict | None) -> float | None:
    return None if row is None or "median" not in row else row["median"]


def fmt(v: float | None, digits: int = 0) -> str:
    return "n/a" if v is None else f"{v:,.{digits}f}"


def pct(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b * 100:.0f}%"


def ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b:.2f}x"


def verdict(value: float | None, target: float, higher_is_better: bool = True) -> str:
    if value is None:
        return "not measured"
    ok = value >= target if higher_is_better else value <= target
    return "meets" if ok else f"misses ({value / target * 100:.0f}% of target)"


def loaded(row: dict | None) -> str:
    if not row or "load_before" not in row:
        return ""
    worst = max(row["load_before"][0], row.get("load_after", [0])[0])
    return f" (load {worst:.1f})" if worst > LOADED_DURING else ""


def all_cpu(row: dict | None) -> float | None:
    """Process (or server) CPU + PostgreSQL CPU per job, when both were measured."""
    a, b = (row or {}).get("cpu_us_per_task"), (row or {}).get("db_us_per_task")
    return a + b if a is not None and b is not None else None


def peer_row(res: dict, name: str) -> dict | None:
    return next((p for p in res.get("peers", []) if p.get("peer") == name), None)


def best_peer(res: dict) -> dict | None:
    return max(
        (p for p in res.get("peers", []) if "median" in p), key=lambda p: p["median"], default=None
    )


def _limits(res: dict, backend: str, batch: int) -> tuple[float | None, float | None]:
    lim = res.get(f"limit_{backend}") or {}
    return med(row_for(lim.get("sql"), batch)), med(row_for(lim.get("http"), batch))


def _throughput_rows(res: dict) -> list[list[str]]:
    peer = best_peer(res)
    peer_v = med(peer)
    peer_txt = f"{fmt(peer_v)} ({peer['peer']})" if peer is not None else "n/a"
    out = []
    for name, backend, rows, batch, key in (
        ("SQLite, batch 100, tasks/s", "sqlite", "sqlite", 100, "sqlite_b100"),
        ("SQLite, single poll/complete, tasks/s", "sqlite", "sqlite", 1, "sqlite_b1"),
        ("PostgreSQL, batch 100, tasks/s", "pg", "pg", 100, "pg_vs_peers"),
        ("PostgreSQL, single poll/complete, tasks/s", "pg", "pg", 1, "pg_b1"),
    ):
        row = row_for(res.get(rows), batch)
        ours = med(row)
        sql, http = _limits(res, backend, batch)
        cpu = fmt(row.get("cpu_us_per_task")) if row else "n/a"
        if key == "pg_vs_peers":  # judged per named peer (_peer_rows)
            target, v = "per peer, below", "stated"
            p_txt, p_ratio = peer_txt, ratio(ours, peer_v)
        else:
            target, v = f">= {TARGETS[key]:,.0f}", verdict(ours, TARGETS[key])
            p_txt, p_ratio = "n/a", "n/a"
        out.append([name, fmt(ours) + loaded(row), cpu, p_txt, p_ratio, fmt(sql), fmt(http),
                    pct(ours, http), target, v])  # fmt: skip
    rep = res.get("pg_replicas")
    if rep and "median" in rep:
        out.append([f"PostgreSQL, batch 100, {rep['replicas']} replicas, tasks/s",
                    fmt(rep["median"]) + loaded(rep), "n/a", peer_txt,
                    ratio(rep["median"], peer_v), "n/a", "n/a", "n/a", "scale-out evidence",
                    "n/a"])  # fmt: skip
    for backend, rows, label in (("sqlite", "sqlite", "SQLite"), ("pg", "pg", "PostgreSQL")):
        ours = med(row_for(res.get(rows), 100))
        _, http = _limits(res, backend, 100)
        frac = ours / http if ours and http else None
        out.append([f"{label}, batch 100, share of the minimal HTTP limit", pct(ours, http),
                    "n/a", "n/a", "n/a", "n/a", fmt(http), pct(ours, http),
                    f">= {TARGETS['of_http_limit']:.0%}",
                    verdict(frac, TARGETS["of_http_limit"])])  # fmt: skip
    return out


def _peer_rows(res: dict) -> list[list[str]]:
    """Ours at PostgreSQL batch 100 against each peer the targets name, same run."""
    row = row_for(res.get("pg"), 100)
    ours, ours_cpu = med(row), all_cpu(row)
    cpu = fmt((row or {}).get("cpu_us_per_task"))
    out = []
    for name, least in PEER_RATE_TARGETS.items():
        peer = peer_row(res, name)
        theirs = med(peer)
        frac = ours / theirs if ours and theirs else None
        target = f">= {least:g}x {name}" if least else "none (stated)"
        judged = verdict(frac, least) if least else "stated" if frac else "not measured"
        failed = peer is not None and "error" in peer
        out.append([f"PostgreSQL, batch 100, tasks/s against {name}", fmt(ours) + loaded(row),
                    cpu, f"{name} FAILED" if failed else f"{fmt(theirs)} ({name})",
                    ratio(ours, theirs), "n/a", "n/a", "n/a", target, judged])  # fmt: skip
    for name, most in PEER_CPU_TARGETS.items():
        theirs = all_cpu(peer_row(res, name))
        frac = ours_cpu / theirs if ours_cpu and theirs else None
        target = f"<= {most:g}x {name}" if most else "none (stated)"
        judged = (verdict(frac, most, higher_is_better=False) if most
                  else "stated" if frac else "not measured")  # fmt: skip
        out.append([f"PostgreSQL, batch 100, all CPU us/task (server + PostgreSQL) against "
                    f"{name}'s per job (process + PostgreSQL)", fmt(ours_cpu), cpu,
                    f"{fmt(theirs)} ({name})", ratio(ours_cpu, theirs), "n/a", "n/a", "n/a",
                    target, judged])  # fmt: skip
    return out


def _latency_rows(res: dict) -> list[list[str]]:
    out = []
    for key, label, p50 in (
        ("latency_sqlite", "SQLite", "p50_sqlite_ms"),
        ("latency_pg", "PostgreSQL", "p50_pg_ms"),
        ("latency_pg_cross", "PostgreSQL across replicas", "p50_pg_ms"),
    ):
        lat = res.get(key)
        for q, target in (("p50_ms", TARGETS[p50]), ("p99_ms", TARGETS["p99_ms"])):
            v = lat.get(q) if lat else None
            out.append([f"pickup latency {q[:3]}, {label}, ms", fmt(v, 2) + loaded(lat), "n/a",
                        "n/a", "n/a", "n/a", "n/a", "n/a", f"<= {target:g}",
                        verdict(v, target, higher_is_better=False)])  # fmt: skip
    burst = res.get("latency_pg_burst")
    if burst:
        dead = (res.get("pg_settle") or {}).get("tasks_dead")
        out.append(["pickup latency p50, PostgreSQL right after the throughput phases, ms",
                    fmt(burst["p50_ms"], 2) + loaded(burst), "n/a", "n/a", "n/a", "n/a", "n/a",
                    "n/a", f"none ({dead:,} dead rows not yet vacuumed)" if dead is not None
                    else "none", "stated"])  # fmt: skip
    return out


def sdk_share(res: dict, row: dict) -> float | None:
    """An SDK row's share of the raw client at batch 100: the median of its per-round
    shares against the raw run beside it in the same rounds (sdks.py), else its median over
    the end-to-end batch-100 row (a report without rounds)."""
    if row.get("raw_b100_rounds"):
        return statistics.median(row["raw_b100_rounds"])
    raw = med(row_for(res.get("sqlite"), 100))
    return row["median"] / raw if "median" in row and raw else None


def _sdk_rows(res: dict) -> list[list[str]]:
    out = []
    for r in res.get("sdk", [])[1:]:  # the first row is the raw client's SDK pattern
        frac = sdk_share(res, r)
        out.append([f"{r['sdk']} SDK Worker, share of raw batch 100 (SQLite)",
                    "FAILED" if "error" in r else "n/a" if frac is None else f"{frac:.0%}",
                    fmt(r.get("cpu_us_per_task")), "n/a", "n/a", "n/a", "n/a", "n/a",
                    f">= {TARGETS['sdk_of_raw_b100']:.0%}",
                    verdict(frac, TARGETS["sdk_of_raw_b100"])])  # fmt: skip
    return out


def telemetry_pairs(res: dict) -> list[tuple[str, dict, dict, dict]]:
    """(sdk, before, off, on) rows of the SDK phase (sdks.py); a missing one is {}."""
    off = {r.get("sdk"): r for r in res.get("sdk", [])}
    return [(t["sdk"], t.get("before") or {}, off.get(t["sdk"]) or {}, t.get("on") or {})
            for t in res.get("sdk_telemetry", [])]  # fmt: skip


def _cpu(a: dict, b: dict) -> str:
    """ ", worker CPU 74 vs 75 us/task": the steadier figure beside a tasks/s ratio."""
    x, y = a.get("worker_cpu_us_per_task"), b.get("worker_cpu_us_per_task")
    return "" if x is None or y is None else f", worker CPU {x:,.0f} vs {y:,.0f} us/task"


def _telemetry_rows(res: dict) -> list[list[str]]:
    """Issue 18: telemetry off against the SDK before it (a target), and on against off
    (stated, no target)."""
    out = []
    for sdk, before, off, on in telemetry_pairs(res):
        frac = off["median"] / before["median"] if "median" in off and "median" in before else None
        judged = verdict(frac, TARGETS["telemetry_off_of_before"])
        noise = max(before.get("spread_pct", 0.0), off.get("spread_pct", 0.0))
        if frac is not None and judged.startswith("misses") and (1 - frac) * 100 < noise:
            # As compare.py: a gap inside the rows' own spread is noise, not a change.
            judged = f"meets (gap within the {noise:g}% spread)"
        out.append([f"{sdk} SDK Worker, telemetry off / before issue 18",
                    pct(med(off), med(before)) + _cpu(off, before),
                    fmt(off.get("cpu_us_per_task")), "n/a", "n/a", "n/a", "n/a", "n/a",
                    f">= {TARGETS['telemetry_off_of_before']:.0%} (unchanged)", judged])  # fmt: skip
        extra = ""
        if "worker_cpu_us_per_task" in on and "worker_cpu_us_per_task" in off:
            extra = f", {on['worker_cpu_us_per_task'] - off['worker_cpu_us_per_task']:+,.0f} worker CPU us/task"
        out.append([f"{sdk} SDK Worker, telemetry on / off", pct(med(on), med(off)) + extra,
                    fmt(on.get("cpu_us_per_task")), "n/a", "n/a", "n/a", "n/a", "n/a",
                    "stated (its cost)", "stated" if "median" in on else "not measured"])  # fmt: skip
    return out


def _rss_row(rss: dict) -> list[str]:
    growth = rss["rss_end_mb"] - rss["rss_start_mb"]
    flat = growth <= max(20.0, 0.1 * rss["rss_start_mb"])
    v = "meets" if flat else "misses (grows)"
    if rss["tasks"] < 1_000_000:
        v += f", only {rss['tasks']:,} tasks (QUICK)"
    return [f"server RSS draining {rss['tasks']:,} tasks (SQLite), MiB",
            f"peak {rss['peak_mb']:.0f}, {rss['rss_start_mb']:.0f} -> {rss['rss_end_mb']:.0f}",
            "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "flat", v]  # fmt: skip


def _workflow_rows(res: dict) -> list[list[str]]:
    """Issue 30: 3-step instances per second, and an instance's CPU against a batch-100
    task's of the same run (SQLite: the server's; PostgreSQL: server + database, or the
    server's alone, said so, when a run did not measure the database for workflows)."""
    out = []
    for key, backend, b100 in (("wf_sqlite", "SQLite", "sqlite"), ("wf_pg", "PostgreSQL", "pg")):
        r = res.get(key)
        if not r:
            continue
        cpu = r.get("cpu_us_per_task")
        target = TARGETS[key]
        out.append([f"{backend}, 3-step workflow instances/s", fmt(med(r)) + loaded(r),
                    fmt(3 * cpu) + " per instance" if cpu else "n/a", "n/a", "n/a", "n/a",
                    "n/a", "n/a", f">= {target:,.0f}", verdict(med(r), target)])  # fmt: skip
        task = row_for(res.get(b100), 100) or {}
        inst, per_task, what = r.get("cpu_us_per_task"), task.get("cpu_us_per_task"), "server"
        if backend == "PostgreSQL":
            both = (all_cpu(r), all_cpu(task))
            if None not in both:
                (inst, per_task), what = both, "server + PostgreSQL"
        frac = 3 * inst / per_task if inst and per_task else None
        most = TARGETS["wf_of_b100_cpu"]
        out.append([f"{backend}, 3-step instance CPU / batch-100 task CPU ({what})",
                    fmt(3 * inst) + " / " + fmt(per_task) if frac else "n/a",
                    fmt(3 * cpu) + " per instance" if cpu else "n/a", "n/a",
                    f"{frac:.1f}x" if frac else "n/a", "n/a", "n/a", "n/a", f"<= {most:g}x",
                    verdict(frac, most, higher_is_better=False)])  # fmt: skip
    return out


def headline(res: dict[str, Any]) -> list[list[str]]:
    """Rows of the first table, in the order of HEAD."""
    out = _throughput_rows(res) + _peer_rows(res) + _latency_rows(res) + _sdk_rows(res)
    out += _telemetry_rows(res)
    out += _workflow_rows(res)
    if res.get("rss"):
        out.append(_rss_row(res["rss"]))
    return out
