"""Runs one scenario against one adapter: server, proxy, workers, timeline, end state."""

from __future__ import annotations

import datetime
import json
import time
import urllib.parse
from pathlib import Path

from . import checks, checks_clock, checks_queues, checks_rate, checks_workflows
from .adapter import AdapterProcess, adapter_env
from .api import Api, ApiError
from .proxy import FaultProxy, fault_from_step
from .scenario import task_refs
from .server import ReferenceServer

READY_TIMEOUT_S = 20.0
# Final until an operator retries the task (docs/protocol.md), which no scenario does: a wait
# that saw one need not read that task again. The end-state checks read every task afresh.
FINAL_STATUSES = ("completed", "failed", "cancelled", "expired")


class Failure(Exception):
    """The scenario cannot go on; the message is the reason shown in the matrix."""


def now_ms() -> float:
    return time.time() * 1000


class ScenarioRun:
    """State of one scenario x SDK run; `execute()` returns the failure reasons (empty: passed)."""

    def __init__(
        self,
        scenario: dict,
        sdk: str,
        command: list[str],
        workdir: Path,
        server_url: str | None = None,
        db: str | None = None,
    ) -> None:
        self.scenario = scenario
        self.sdk = sdk
        self.command = command
        self.workdir = workdir
        self.server_url = server_url
        self.db = db
        self.server: ReferenceServer | None = None
        self.proxy: FaultProxy | None = None
        self.api: Api | None = None
        self.workers: dict[str, AdapterProcess] = {}
        self.ids: dict[str, str] = {}  # task ref -> task id
        self.groups: dict[str, list[str]] = {}  # ref or group ref -> member refs
        self.visible_at: dict[str, float] = {}  # task ref -> when its enqueue was acknowledged
        self.sent: dict[str, dict] = {}  # task ref -> the task spec it was enqueued from
        self.instances: dict[str, str] = {}  # instance ref -> instance id (workflows, P-WF-4)
        self.final: dict[str, str] = {}  # task ref -> the final status a wait saw
        self.rate_changes: dict[str, tuple[float, float]] = {}  # rate limit key -> its change sent, answered
        self.notes: list[str] = []  # parts of a passed run that did not apply to this adapter
        self.t0 = 0.0
        self.step_began = 0.0  # when the current timeline step began waiting

    # --- lifecycle ---------------------------------------------------------------------

    def execute(self) -> list[str]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._setup()
            problems = checks_rate.define(self, self.scenario.get("rate_limits", {}))  # before the tasks
            self._enqueue(self.scenario["tasks"])
            problems += checks_workflows.define(self, self.scenario.get("sequences", []))
            problems += checks_workflows.start(self, self.scenario.get("instances", []))
            if problems:
                raise Failure("; ".join(problems))
            for fault in self.scenario.get("faults", []):  # in force from the first request on
                self.proxy.add_fault(fault_from_step(fault))
            self._start_worker("w1", {})
            self.t0 = now_ms()
            deadline = self.t0 + self.scenario.get("timeout_ms", 20000)
            reasons = []
            for index, step in enumerate(self.scenario.get("timeline", []), 1):
                reasons += self._step(index, step, deadline)
            checks.converge(self, deadline)
            reasons += checks_clock.within(self, now_ms())
            time.sleep(self.scenario.get("settle_ms", 500) / 1000)
            with self.api.read_once():  # the end state is read, not waited for: one read per task
                return reasons + checks.end_state(self)
        except Failure as err:
            return [str(err)]
        finally:
            self._teardown()

    def _setup(self) -> None:
        if self.server_url:
            self.api = Api(self.server_url)
            parsed = urllib.parse.urlsplit(self.server_url)
            upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        else:
            self.server = ReferenceServer(self.workdir, self.scenario.get("server", {}), self.db)
            try:
                self.server.first_start()
            except RuntimeError as err:
                raise Failure(f"reference server: {err}") from None
            self.api = self.server.api
            upstream = (self.server.running.host, self.server.port)
        self.proxy = FaultProxy(*upstream)
        self.proxy.start()

    def _teardown(self) -> None:
        for worker in self.workers.values():
            worker.kill()
        if self.proxy:
            self.proxy.close()
            with open(self.workdir / "proxy.jsonl", "w") as log:  # what the adapter sent, for debugging
                log.writelines(json.dumps(r) + "\n" for r in self.proxy.requests)
        if self.api:
            self.api.close()
        if self.server:
            self.server.stop()

    # --- actions -----------------------------------------------------------------------

    def _enqueue(self, specs: list[dict]) -> None:
        self.groups.update(task_refs(specs))
        for spec in specs:
            fields = ("handler_name", "params", "queue_name", "priority", "retry", "required_labels", "headers")
            fields += ("concurrency_key", "max_concurrency", "rate_limit_key")
            body = {k: spec[k] for k in fields if k in spec}
            if "good_until_ms" in spec:  # P-SDK-33: a deadline relative to this enqueue
                body["good_until"] = _in_ms(spec["good_until_ms"])
            members = task_refs([spec])[spec["ref"]]
            tenant = spec.get("tenant")  # sent as X-Tenant-Id (P-TEN-2); the default tenant when absent
            try:
                if spec.get("count"):
                    created = []
                    for start in range(0, len(members), 100):  # the contract's batch limit
                        created += self.api.enqueue_batch([dict(body) for _ in members[start : start + 100]], tenant)
                else:
                    created = [self.api.enqueue(body, tenant)]
            except ApiError as err:
                raise Failure(f"enqueue {spec['ref']}: {err}") from None
            acknowledged = now_ms()  # committed: from now on a poll may claim it (P-QUEUE-2 check)
            for ref, task in zip(members, created, strict=True):
                self.ids[ref] = task["id"]
                self.visible_at[ref] = acknowledged
                self.sent[ref] = spec
                self.groups.setdefault(ref, [ref])

    def _start_worker(self, name: str, overrides: dict) -> None:
        options = {**self.scenario.get("worker", {}), **overrides}
        if options.get("wait_instance"):  # an instance ref -> its id (P-SDK-25)
            options["wait_instance"] = self.instances.get(options["wait_instance"], options["wait_instance"])
        # `worker_id: "default"` leaves the id to the SDK (P-SDK-21); the `ready` event names it.
        worker_id = None if options.get("worker_id") == "default" else f"{self.sdk}-{self.scenario['id']}-{name}"
        env = adapter_env(self.proxy.url, worker_id, options, self._worker_key(options))
        try:
            worker = AdapterProcess(name, worker_id, self.command, env, self.workdir)
        except OSError as err:
            raise Failure(f"cannot start the adapter {self.command}: {err}") from None
        self.workers[name] = worker
        deadline = time.monotonic() + READY_TIMEOUT_S
        if options.get("expect_refusal"):  # P-SDK-23: it must exit before `ready`; checks.refused judges it
            while not worker.ready.wait(0.05) and worker.proc.poll() is None and time.monotonic() < deadline:
                pass
            return
        while not worker.ready.wait(0.05):
            if worker.proc.poll() is not None or time.monotonic() > deadline:
                raise Failure(
                    f"{name} never printed its ready event (exit code {worker.proc.poll()}); "
                    f"stderr: {worker.stderr_tail(4)!r}"
                )
        if options.get("tenant") and worker.worker_id:  # its record lives in that tenant (P-TEN-3)
            self.api.worker_tenant[worker.worker_id] = options["tenant"]

    def _worker_key(self, options: dict) -> str | None:
        """The adapter's ORCH8_API_KEY: the secret of `key` in server.keys, else the first api_keys."""
        if "key" in options:
            if self.server is None or self.server.keys is None:
                raise Failure("worker option `key` needs the reference server with server.keys")
            return self.server.keys.secret(options["key"])
        api_keys = self.scenario.get("server", {}).get("api_keys") or []
        return api_keys[0] if api_keys else None

    def _step(self, index: int, step: dict, deadline: float) -> list[str]:
        what = f"timeline step {index} ({step['action']})"
        if "at_ms" in step:
            self._sleep_until(self.t0 + step["at_ms"], deadline, what)
        if "after" in step:
            self.step_began = now_ms()  # `answered` counts answers from here on
            self.wait_for(step["after"], deadline, what)
        if step.get("delay_ms"):
            time.sleep(step["delay_ms"] / 1000)
        action = step["action"]
        if action == "enqueue":
            self._enqueue(step["tasks"])
        elif action == "start_worker":
            self._start_worker(step["worker"], step.get("options", {}))
        elif action == "signal":
            self.worker(step["worker"]).send(step["signal"])
        elif action == "operator":
            worker = self.worker(step["worker"])
            worker.last_command_at = now_ms()
            tenant = self.api.worker_tenant.get(worker.worker_id)
            self._call("POST", f"/workers/{worker.worker_id}/{step['op']}", None, what, tenant)
        elif action in ("pause_queue", "resume_queue"):  # P-CTRL-1, an operator's call
            self._call("POST", f"/queues/{step['queue']}/{action.split('_')[0]}", None, what)
        elif action == "cancel":
            task_id = self.task_id(step["task"])
            self._call("POST", f"/tasks/{task_id}/cancel", {}, what, self.api.task_tenant.get(task_id))
        elif action in ("set_rate_limit", "delete_rate_limit"):  # P-RATE-4, an operator's call
            return checks_rate.change(self, step, what)
        elif action == "cancel_instance":  # P-WF-7, an operator's call
            self._call("POST", f"/instances/{self.instances.get(step['instance'])}/cancel", {}, what)
        elif action == "late_result":  # a result the server must refuse (a race loser's)
            return checks_workflows.late_result(self, step, what)
        elif action == "restart_server":
            if self.server is None:
                raise Failure(f"{what}: needs the reference server (not --server-url)")
            try:
                self.server.restart(step.get("down_ms", 0) / 1000)
            except RuntimeError as err:
                raise Failure(f"{what}: reference server: {err}") from None
        elif action == "keys_file":  # P-AUTH-4: rewrite the keys file, then SIGHUP
            if self.server is None:
                raise Failure(f"{what}: needs the reference server (not --server-url)")
            try:
                self.server.reload_keys(step["keys"])
            except RuntimeError as err:
                raise Failure(f"{what}: {err}") from None
        elif action == "fault":
            if step["mode"] == "none":
                self.proxy.clear_faults()
            else:
                fault = fault_from_step(step)
                self.proxy.add_fault(fault)
                if step.get("duration_ms"):
                    time.sleep(step["duration_ms"] / 1000)
                    self.proxy.remove_fault(fault)
        elif action == "advance_clock":  # P-CLOCK-2, P-CLOCK-3: once the worker is idle
            try:
                return checks_clock.advance(self, step, deadline, what)
            except checks_clock.StepError as err:
                raise Failure(str(err)) from None
        elif action == "expect":
            reasons = checks.tasks(self, step.get("tasks", {}))
            for ref, exp in step.get("instances", {}).items():  # e.g. one waiting for its key (P-KEY-7)
                reasons += checks_workflows.check_instance(self, ref, exp)
            reasons += [r for row in step.get("queue_stats", []) for r in checks_queues.queue_stats(self, row)]
            return [f"at {what}: {reason}" for reason in reasons]
        return []

    def _call(self, method: str, path: str, body, what: str, tenant: str | None = None) -> None:
        try:
            self.api.call(method, path, body, tenant)
        except ApiError as err:
            raise Failure(f"{what}: {err}") from None

    def _sleep_until(self, when_ms: float, deadline: float, what: str) -> None:
        if when_ms > deadline:
            raise Failure(f"{what}: at_ms is past the scenario's timeout_ms")
        time.sleep(max(0.0, when_ms - now_ms()) / 1000)

    # --- conditions --------------------------------------------------------------------

    def wait_for(self, condition: dict, deadline: float, what: str) -> None:
        while not self.met(condition):
            if now_ms() > deadline:
                raise Failure(f"{what}: waited for {condition} but it did not happen within timeout_ms")
            time.sleep(0.05)

    def met(self, condition: dict) -> bool:
        if "handler_started" in condition and not self.events("start", condition["handler_started"]):
            return False
        if "handler_ended" in condition and not (
            self.events("end", condition["handler_ended"]) or self.events("cancelled", condition["handler_ended"])
        ):
            return False
        if "starts" in condition and len(self.events("start")) < condition["starts"]:
            return False
        if "worker_exited" in condition and self.worker(condition["worker_exited"]).exited_at is None:
            return False
        if "answered" in condition:  # requests the server answered with a status (e.g. 403, P-AUTH-3)
            want = condition["answered"]
            seen = [
                r
                for r in list(self.proxy.requests)
                if r["t"] >= self.step_began
                and r["path"].startswith(want.get("path", ""))
                and r.get("status") == want["status"]
            ]
            if len(seen) < want.get("count", 1):
                return False
        wanted_event = condition.get("event")
        if wanted_event and not self.events(wanted_event["event"], worker=wanted_event.get("worker")):
            return False
        if "step_started" in condition and not checks_workflows.step_started(self, condition["step_started"]):
            return False
        if "instance_status" in condition and not checks_workflows.status_is(self, condition["instance_status"]):
            return False
        for ref, wanted in condition.get("task_status", {}).items():
            status = self.status(ref)
            if status not in (wanted if isinstance(wanted, list) else [wanted]):
                return False
        return True

    # --- helpers for checks ------------------------------------------------------------

    def worker(self, name: str) -> AdapterProcess:
        if name not in self.workers:
            raise Failure(f"worker {name} was never started")
        return self.workers[name]

    def task_id(self, ref: str) -> str:
        if ref not in self.ids:
            raise Failure(f"task {ref} was never enqueued")
        return self.ids[ref]

    def status(self, ref: str) -> str | None:
        if ref in self.final:
            return self.final[ref]
        try:
            status = self.api.task(self.task_id(ref))["status"]
        except ApiError:
            return None
        if status in FINAL_STATUSES:
            self.final[ref] = status
        return status

    def events(self, kind: str, ref: str | None = None, worker: str | None = None) -> list[dict]:
        task_id = self.ids.get(ref) if ref else None
        if ref and task_id is None:
            return []
        found = []
        for name, proc in list(self.workers.items()):
            if worker and name != worker:
                continue
            if task_id is not None:
                found += list(proc.by_task.get((kind, task_id), ()))
            else:
                found += [e for e in list(proc.events) if e.get("event") == kind]
        return found


def _in_ms(ms: int) -> str:
    """The RFC 3339 instant `ms` milliseconds from now (UTC, millisecond precision)."""
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(milliseconds=ms)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
