"""`python -m orch8_conformance run|list|validate`: the scenario x SDK matrix."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import itertools
import json
import shlex
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .parity import coverage, parity_page
from .report import print_matrix, summary
from .run import ScenarioRun
from .scenario import HERE, ScenarioError, load_all

ADAPTERS = HERE / "adapters.json"


def adapters_config() -> dict[str, list[str]]:
    """adapters.json: SDK name -> command; relative paths are relative to conformance/."""
    config = json.loads(ADAPTERS.read_text())
    resolved = {}
    for name, entry in config.items():
        if name.startswith("$"):
            continue
        resolved[name] = [str(HERE / part) if (HERE / part).exists() else part for part in entry["command"]]
    return resolved


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="orch8_conformance", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run scenarios against adapters and print the matrix")
    run.add_argument("--sdk", help="all (the default without --adapter), or comma-separated names from adapters.json")
    run.add_argument(
        "--adapter",
        action="append",
        default=[],
        metavar="COMMAND",
        help="a foreign adapter command (repeatable); replaces --sdk unless --sdk is given too",
    )
    run.add_argument(
        "--adapter-name",
        action="append",
        default=[],
        metavar="NAME",
        help="column name for each --adapter (default: foreign, foreign2, ...)",
    )
    run.add_argument("--scenario", action="append", default=[], metavar="ID", help="only these scenarios")
    run.add_argument(
        "--server-url",
        help="check this server instead of starting the reference one "
        "(one scenario at a time; the server must be empty and use each scenario's settings)",
    )
    run.add_argument(
        "--backend",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="reference server storage: a fresh SQLite file (default) or a fresh database "
        "per run in a throwaway PostgreSQL cluster (server/tests/pg_cluster.py)",
    )
    run.add_argument("--jobs", type=int, default=3, help="scenario runs in parallel (default 3)")
    run.add_argument("--json", metavar="FILE", help="write every result as JSON")
    run.add_argument("--parity", metavar="FILE", help="write the parity page (markdown: rules and scenarios x SDK)")
    run.add_argument("--workdir", help="where logs go (default: a new temp dir)")
    run.add_argument("--keep-logs", action="store_true", help="keep the logs of passed runs too")
    run.add_argument("--quiet", action="store_true", help="no per-run progress lines")
    sub.add_parser("list", help="list the scenarios")
    sub.add_parser("validate", help="validate every scenario against the schema")
    sub.add_parser("coverage", help="fail when a P-SDK rule of docs/protocol.md is cited by no scenario")
    trace = sub.add_parser("trace", help="one OpenTelemetry trace per SDK from real OTLP (issue 18, trace_e2e.py)")
    trace.add_argument("--sdk", default="all", help="all (default), or comma-separated names from adapters.json")
    return parser.parse_args(argv)


def pick_adapters(args: argparse.Namespace) -> dict[str, list[str]]:
    known = adapters_config()
    chosen: dict[str, list[str]] = {}
    sdk = args.sdk or ("" if args.adapter else "all")
    if sdk:
        names = list(known) if sdk == "all" else [s.strip() for s in sdk.split(",") if s.strip()]
        for name in names:
            if name not in known:
                raise SystemExit(f"unknown SDK {name!r}; adapters.json has {', '.join(known)}")
            chosen[name] = known[name]
    for i, command in enumerate(args.adapter):
        name = args.adapter_name[i] if i < len(args.adapter_name) else ("foreign" if i == 0 else f"foreign{i + 1}")
        chosen[name] = shlex.split(command)
    return chosen


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        scenarios = load_all()
    except ScenarioError as err:
        print(f"invalid scenario: {err}", file=sys.stderr)
        return 2
    if args.cmd == "validate":
        print(f"{len(scenarios)} scenarios match schema/scenario.schema.json")
        return 0
    if args.cmd == "coverage":
        return coverage(scenarios)
    if args.cmd == "trace":
        from .trace_e2e import main as trace_main  # needs opentelemetry; the other commands do not

        return trace_main(pick_adapters(argparse.Namespace(sdk=args.sdk, adapter=[], adapter_name=[])))
    if args.cmd == "list":
        for s in scenarios:
            print(f"{s['id']:34} {' '.join(s['rules'])}\n{'':34} {s['purpose']}")
        return 0
    if args.scenario:
        unknown = set(args.scenario) - {s["id"] for s in scenarios}
        if unknown:
            print(f"unknown scenario(s): {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        scenarios = [s for s in scenarios if s["id"] in args.scenario]
    adapters = pick_adapters(args)
    return run_matrix(args, scenarios, adapters)


def pg_cluster():
    """The server tests' throwaway cluster harness (initdb + pg_ctl in a temp dir)."""
    path = HERE.parent / "server" / "tests" / "pg_cluster.py"
    spec = importlib.util.spec_from_file_location("orch8_pg_cluster", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PgCluster().init()


def run_matrix(args, scenarios: list[dict], adapters: dict[str, list[str]]) -> int:
    cluster = pg_cluster() if args.backend == "postgresql" and not args.server_url else None
    try:
        return _run_matrix(args, scenarios, adapters, cluster)
    finally:
        if cluster is not None:
            cluster.destroy()


def _run_matrix(args, scenarios: list[dict], adapters: dict[str, list[str]], cluster) -> int:
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="orch8-conformance-"))
    databases = itertools.count(1)
    jobs = 1 if args.server_url else max(1, args.jobs)
    runs = [(s, name) for s in scenarios for name in adapters]
    total = len(runs)
    results: list[dict] = []
    lock = threading.Lock()
    started = time.monotonic()
    print(
        f"conformance: {len(scenarios)} scenarios x {len(adapters)} adapters ({', '.join(adapters)}), "
        f"{jobs} at a time; logs in {workdir}",
        flush=True,
    )

    def one(item) -> None:
        scenario, name = item
        begin = time.monotonic()
        result = {"scenario": scenario["id"], "sdk": name, "rules": scenario["rules"]}
        if args.server_url and "reference_server" in scenario.get("needs", []):
            result.update(status="skipped", reasons=["needs the reference server (restarts it); not with --server-url"])
        else:
            logs = workdir / scenario["id"] / name
            try:
                db = cluster.create_database(f"conformance_{next(databases)}") if cluster else None
                scenario_run = ScenarioRun(scenario, name, adapters[name], logs, args.server_url, db)
                reasons = scenario_run.execute()
                if scenario_run.notes:  # parts that did not apply to this adapter (e.g. no tracer)
                    result["notes"] = scenario_run.notes
            except Exception as err:  # a runner bug must still show up as one failed cell
                reasons = [f"runner error: {err!r}"]
            result.update(status="failed" if reasons else "passed", reasons=reasons)
            if reasons or args.keep_logs:
                result["logs"] = str(logs)
            else:
                shutil.rmtree(logs, ignore_errors=True)  # only failures keep their logs
                with contextlib.suppress(OSError):
                    logs.parent.rmdir()  # the scenario's folder, once no adapter's logs are left
        result["seconds"] = round(time.monotonic() - begin, 1)
        with lock:
            results.append(result)
            if not args.quiet:
                mark = {"passed": "ok  ", "failed": "FAIL", "skipped": "skip"}[result["status"]]
                print(
                    f"[{len(results):>3}/{total}] {mark} {name:<11} {scenario['id']:<34} {result['seconds']:>5.1f}s",
                    flush=True,
                )
                for reason in result["reasons"][:2] if result["status"] == "failed" else []:
                    print(f"           - {reason}", flush=True)
                for note in result.get("notes", []):
                    print(f"           note: {note}", flush=True)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, runs))
    elapsed = time.monotonic() - started
    with contextlib.suppress(OSError):
        workdir.rmdir()  # nothing failed, nothing kept
    print_matrix(scenarios, list(adapters), results)
    counts = summary(results)
    print(
        f"\n{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped "
        f"of {total} runs ({len(scenarios)} scenarios x {len(adapters)} adapters) in {elapsed:.0f} s"
    )
    if sum(counts.values()) != total:  # every run is accounted for, never silently dropped
        print(f"internal error: {sum(counts.values())} results for {total} runs", file=sys.stderr)
        return 3
    if args.parity:
        meta = {**counts, "elapsed_s": round(elapsed), "backend": "external" if args.server_url else args.backend}
        meta["command"] = "python -m orch8_conformance " + " ".join(sys.argv[1:])
        Path(args.parity).parent.mkdir(parents=True, exist_ok=True)
        Path(args.parity).write_text(parity_page(scenarios, list(adapters), results, meta))
        print(f"parity page: {args.parity}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {"elapsed_s": round(elapsed, 1), "counts": counts, "adapters": adapters, "results": results}, indent=2
            )
        )
    return 0 if counts["failed"] == 0 else 1
