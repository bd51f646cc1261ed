"""The scenario x SDK matrix and the failure reasons under it."""

from __future__ import annotations

MARK = {"passed": "pass", "failed": "FAIL", "skipped": "skip"}


def summary(results: list[dict]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for r in results:
        counts[r["status"]] += 1
    return counts


def print_matrix(scenarios: list[dict], adapters: list[str], results: list[dict]) -> None:
    by_key = {(r["scenario"], r["sdk"]): r for r in results}
    width = max([len(s["id"]) for s in scenarios] + [8])
    cols = [max(len(a), 5) for a in adapters]
    print()
    print(f"{'scenario':<{width}}  " + "  ".join(f"{a:<{c}}" for a, c in zip(adapters, cols, strict=True)))
    print(f"{'-' * width}  " + "  ".join("-" * c for c in cols))
    for s in scenarios:
        cells = [cell(by_key[(s["id"], a)]) if (s["id"], a) in by_key else "?" for a in adapters]
        print(f"{s['id']:<{width}}  " + "  ".join(f"{m:<{c}}" for m, c in zip(cells, cols, strict=True)))
    noted = [r for r in results if r.get("notes")]
    if noted:
        print("\n*: passed; parts did not apply:")
        for r in sorted(noted, key=lambda r: (r["scenario"], r["sdk"])):
            print(f"  {r['scenario']} x {r['sdk']}: {'; '.join(r['notes'])}")
    failed = [r for r in results if r["status"] != "passed"]
    if not failed:
        return
    print("\nwhy:")
    for r in sorted(failed, key=lambda r: (r["scenario"], r["sdk"])):
        print(f"  {r['scenario']} x {r['sdk']}: {r['status']} (rules {', '.join(r['rules'])})")
        for reason in r["reasons"]:
            print(f"    - {reason}")
        if r.get("logs") and r["status"] == "failed":
            print(f"    logs: {r['logs']}")


def cell(result: dict) -> str:
    """The matrix mark; `pass*` when parts of the scenario did not apply to the adapter."""
    return MARK[result["status"]] + ("*" if result.get("notes") and result["status"] == "passed" else "")
