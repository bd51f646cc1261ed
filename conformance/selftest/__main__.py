"""`python -m selftest`: the suite must fail for broken adapters, and pass for the unbroken one.

For each defect in broken.py the matching scenarios must FAIL; the same scenarios must PASS
for the unbroken raw-HTTP adapter (the control), so a failure is due to the defect and
nothing else. Exits non-zero when a broken adapter slips through or the control fails.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from orch8_conformance.parity import coverage
from orch8_conformance.run import ScenarioRun
from orch8_conformance.scenario import ScenarioError, load_all

HERE = Path(__file__).resolve().parent
PY = sys.executable
CONTROL = [PY, str(HERE.parent / "adapters" / "raw-http" / "adapter.py")]
# The controls run 3 at a time, as the matrix does. A broken adapter's run mostly waits for
# what never comes until its scenario's timeout_ms (ignores_sigterm: 1.8 s of CPU in a 20 s
# run), so those runs, longest timeout first, have 4 workers of their own beside the
# controls', and the controls' workers join them once no control is left.
CONTROL_JOBS = 3
BROKEN_JOBS = 4

# defect -> the scenarios that must catch it
CATCHES = {
    "never_heartbeats": ["heartbeat-keeps-lease", "worker-heartbeat-keeps-lease"],
    "completes_after_lease_loss": ["stall-late-result-rejected"],
    "ignores_sigterm": ["graceful-shutdown"],
    "exceeds_concurrency": ["concurrency-limit", "batch-claims-free-slots"],
    "uncapped_batch_size": ["poll-limits-concurrency-150"],
    "holds_slots_until_answered": ["poll-threshold"],
    "polls_any_free_slot": ["poll-threshold"],
    "unsplit_handler_names": ["poll-limits-many-handlers"],
    "drops_refused_batch": ["completion-batch-413-split"],
    "retryable_no_handler": ["no-handler"],
    "ignores_retry_after": ["outage-retry-after"],
    "ignores_second_signal": ["second-signal-ends-grace", "second-signal-sigint"],
    "miscounts_cancelled": ["stats-and-hooks"],
    "hook_exception_escapes": ["hooks-that-raise"],
    "ignores_queue_list": ["multi-queue-strict", "paused-queue"],
    "reverses_queue_order": ["multi-queue-strict"],
    "ignores_weights": ["multi-queue-weighted"],
    "accepts_bad_queue_config": ["worker-queue-config-refused"],
    "ignores_labels": ["label-routing"],
    "drops_trace_context": ["trace-context"],
    "unparented_process_span": ["trace-context"],
    "ignores_tenant": ["tenant-isolation"],
    "stops_when_forbidden": ["forbidden-poll"],
    "drops_context": ["workflow-chain"],
    "reports_cancelled_step": ["workflow-cancel-instance", "workflow-race"],
    "wait_returns_early": ["wait-instance"],
    "ignores_lost_lease": ["test-clock-skip-while-held"],
    "sleeps_between_polls": ["test-clock-skips-timers"],
}


def schema_rejects_broken_scenarios(workdir: Path) -> int:
    """The loader must refuse scenarios that the schema or the cross-reference check forbids."""
    good = load_all()[0]
    broken = {
        "unknown-handler": {**good, "tasks": [{"ref": "t1", "handler_name": "no_such_handler"}]},
        "wrong-file-name": {**good, "id": "some-other-id"},
        "unknown-task-ref": {**good, "expect": {"tasks": {"nope": {"status": "completed"}}}},
        "missing-rules": {k: v for k, v in good.items() if k != "rules"},
    }
    bad = 0
    for name, data in broken.items():
        folder = workdir / "schema" / name
        folder.mkdir(parents=True)
        (folder / f"{data.get('id', good['id']) if name != 'wrong-file-name' else good['id']}.json").write_text(
            json.dumps(data)
        )
        try:
            load_all(folder)
            print(f"  BAD  schema accepted a scenario with {name}")
            bad += 1
        except ScenarioError as err:
            print(f"  ok   schema rejects {name}: {str(err).splitlines()[-1].strip()}")
    return bad


def coverage_catches_uncited_rule() -> int:
    """The rule-coverage check must fail when the scenarios citing one P-SDK rule are gone."""
    scenarios = load_all()
    without = [s for s in scenarios if "P-SDK-17" not in s["rules"]]
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        full, partial = coverage(scenarios), coverage(without)
    if full == 0 and partial != 0 and "P-SDK-17   NOT CITED" in printed.getvalue():
        print("  ok   rule coverage fails when no scenario cites P-SDK-17")
        return 0
    print(f"  BAD  rule coverage: {full} with every scenario, {partial} without those citing P-SDK-17")
    return 1


def trace_tree_catches_broken_chains() -> int:
    """The end-to-end trace check (trace_tree.check) must fail for a trace that does not chain."""
    from orch8_conformance.otlp import Span
    from orch8_conformance.trace_tree import Expected, check

    t, q, task, worker = "ab" * 16, "e2e", "task_1", "w-1"
    root = Span(t, "01" * 8, "", "e2e", "INTERNAL", "producer", 0)
    send = Span(
        t,
        "02" * 8,
        root.span_id,
        f"send {q}",
        "PRODUCER",
        "producer",
        1,
        {"messaging.system": "orch8", "messaging.destination.name": q, "messaging.message.id": task},
    )
    server = [
        Span(
            t,
            f"1{i}" * 8,
            send.span_id,
            f"{op} {q}",
            "INTERNAL",
            "orch8-server",
            2 + i,
            {"messaging.message.id": task, "orch8.worker.id": worker},
        )
        for i, op in enumerate(("enqueue", "claim", "complete"))
    ]
    receive = Span("cd" * 16, "03" * 8, "", f"receive {q}", "CLIENT", "worker", 3)
    process = Span(
        t,
        "04" * 8,
        send.span_id,
        f"process {q}",
        "CONSUMER",
        "worker",
        4,
        {"messaging.message.id": task, "orch8.worker.id": worker, "orch8.outcome": "completed"},
        [(receive.trace_id, receive.span_id)],
    )
    want = Expected(root, q, task, worker, "worker")
    whole = [root, send, *server, receive, process]
    broken = {
        "a process span that is a new root": [*whole[:-1], Span(**{**process.__dict__, "parent_span_id": ""})],
        "no claim span from the server": [s for s in whole if s.name != f"claim {q}"],
        "a process span without its link": [*whole[:-1], Span(**{**process.__dict__, "links": []})],
        "a send span outside the caller's span": [root, Span(**{**send.__dict__, "parent_span_id": ""}), *whole[2:]],
    }
    bad = 0 if not check(whole, want) else 1
    print(f"  {'ok  ' if not bad else 'BAD '} trace assembly accepts a whole trace {check(whole, want)}")
    for name, spans in broken.items():
        reasons = check(spans, want)
        bad += not reasons
        print(f"  {'ok  ' if reasons else 'BAD '} trace assembly rejects {name}: {reasons[:1]}")
    return bad


def main() -> int:
    scenarios = {s["id"]: s for s in load_all()}
    workdir = Path(tempfile.mkdtemp(prefix="orch8-selftest-"))
    schema_bad = schema_rejects_broken_scenarios(workdir) + coverage_catches_uncited_rule()
    schema_bad += trace_tree_catches_broken_chains()
    controls = [("control", sid, CONTROL, "passed") for sid in sorted({s for ids in CATCHES.values() for s in ids})]
    broken = [
        (defect, sid, [PY, str(HERE / "broken.py"), defect], "failed") for defect, ids in CATCHES.items() for sid in ids
    ]
    broken.sort(key=lambda run: -scenarios[run[1]].get("timeout_ms", 20000))  # run.py's default
    runs = controls + broken
    print(f"selftest: {len(runs)} runs (control + {len(CATCHES)} broken adapters); logs in {workdir}", flush=True)
    started = time.monotonic()

    def one(item):
        name, sid, command, want = item
        reasons = ScenarioRun(scenarios[sid], name, command, workdir / sid / name).execute()
        got = "failed" if reasons else "passed"
        ok = got == want
        print(f"  {'ok  ' if ok else 'BAD '} {name:<27} {sid:<30} {got:<6} (expected {want})", flush=True)
        if reasons and name != "control":
            print(f"       caught by: {reasons[0]}", flush=True)
        elif reasons:
            for reason in reasons[:3]:
                print(f"       - {reason}", flush=True)
        return ok

    queues = (collections.deque(controls), collections.deque(broken))
    lock = threading.Lock()

    def worker(kinds) -> list[bool]:  # takes runs from each of `kinds` in turn until it is empty
        done = []
        for queue in kinds:
            while True:
                with lock:
                    run = queue.popleft() if queue else None
                if run is None:
                    break
                done.append(one(run))
        return done

    with ThreadPoolExecutor(CONTROL_JOBS + BROKEN_JOBS) as pool:
        futures = [pool.submit(worker, queues) for _ in range(CONTROL_JOBS)]
        futures += [pool.submit(worker, queues[1:]) for _ in range(BROKEN_JOBS)]
        results = [ok for future in futures for ok in future.result()]
    bad = results.count(False) + schema_bad
    print(f"selftest: {len(results) - bad} of {len(results)} as expected in {time.monotonic() - started:.0f} s")
    if bad:
        print("selftest FAILED: a broken adapter passed, or the unbroken control failed", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)  # logs are only worth keeping when something is wrong
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
