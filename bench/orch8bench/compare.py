"""Compare two bench runs row by row: `make -C bench compare A=old.json B=new.json`.

A change is called out only when it exceeds the larger of the two rows' spreads (the
repetitions' (max - min) / median); anything smaller is noise on this machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orch8bench.verdicts import LATENCY

KEYS = ("sqlite", "pg", "sdk", "peers", "keys")  # "keys": concurrency keys (keys.py)
LIMITS = ("limit_sqlite", "limit_pg")  # {"http": rows, "sql": rows}


def rows(res: dict) -> dict[str, dict]:
    found = [r for key in KEYS for r in res.get(key, [])]
    found += [
        r for key in LIMITS for part in ("http", "sql") for r in (res.get(key) or {}).get(part, [])
    ]
    return {r["label"]: r for r in found if "median" in r}


def compare(a: dict, b: dict) -> list[str]:
    lines = [
        f"A: {a.get('date')} load {a.get('load_start')}  B: {b.get('date')} load {b.get('load_start')}",
        f"{'row':48} {'A':>10} {'B':>10} {'change':>8}  verdict",
    ]
    ra, rb = rows(a), rows(b)
    for label in [k for k in ra if k in rb]:
        x, y = ra[label], rb[label]
        change = y["median"] / x["median"] - 1
        noise = max(x.get("spread_pct", 0), y.get("spread_pct", 0)) / 100
        verdict = "noise" if abs(change) <= noise else ("better" if change > 0 else "worse")
        lines.append(
            f"{label:48} {x['median']:>10,.0f} {y['median']:>10,.0f} {change:>+8.0%}  {verdict}"
        )
        if "cpu_us_per_task" in x and "cpu_us_per_task" in y:
            lines.append(f"{'  CPU us/task':48} {x['cpu_us_per_task']:>10,.0f} "
                         f"{y['cpu_us_per_task']:>10,.0f}")  # fmt: skip
    for key in LATENCY:
        if a.get(key) and b.get(key):
            for q in ("p50_ms", "p99_ms"):
                lines.append(f"{key + ' ' + q:48} {a[key][q]:>10.2f} {b[key][q]:>10.2f}")
    if a.get("rss") and b.get("rss"):
        lines.append(
            f"{'rss end MiB':48} {a['rss']['rss_end_mb']:>10} {b['rss']['rss_end_mb']:>10}"
        )
    return lines


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: python -m orch8bench.compare A.json B.json")
    a, b = (json.loads(Path(p).read_text()) for p in sys.argv[1:3])
    print("\n".join(compare(a, b)))


if __name__ == "__main__":
    main()
