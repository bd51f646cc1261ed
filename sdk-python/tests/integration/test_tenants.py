"""P-SDK-24 through the real server: the tenant option isolates work (P-TEN-3), and a worker
refused by a scoped key (P-AUTH-3) keeps running until the key is fixed (SIGHUP)."""

from __future__ import annotations

import hashlib
import logging
import signal
from pathlib import Path

import pytest

from orch8 import ForbiddenError, NotFoundError, Orch8Client, TaskContext, Worker

from .conftest import Server, wait_until
from .test_queues import _readme_block


def new_worker(server: Server, **kw: object) -> Worker:
    kw.setdefault("wait_ms", 1000)
    kw.setdefault("grace_period_ms", 5000)
    kw.setdefault("outage_backoff_ms", (50, 500))
    return Worker(base_url=server.url, handle_signals=False, **kw)  # type: ignore[arg-type]


def test_p_sdk_24_a_tenants_task_is_done_by_its_own_workers_only(server, run_worker) -> None:
    """P-TEN-3: t2's worker, already waiting, never sees t1's task; t1's worker does it."""
    other = new_worker(server, tenant="t2", worker_id="w-t2", wait_ms=500)
    stolen: list[str] = []
    other.register("process_image", lambda ctx: stolen.append(ctx.id))
    run_worker(other)
    # A first long-poll answered empty and the next one sent: t2 is waiting on the server
    # before t1's task exists, and would claim it first if tenants were not isolated.
    wait_until(lambda: other.stats().polls >= 2, what="t2's second long-poll")

    with Orch8Client(server.url, tenant="t1") as t1, Orch8Client(server.url, tenant="t2") as t2:
        task = t1.enqueue("process_image", params={"n": 1})
        assert task.tenant == "t1"
        own = new_worker(server, tenant="t1", worker_id="w-t1")

        @own.handler("process_image")
        def done_by_t1(ctx: TaskContext) -> str:
            return f"t1 did {ctx.params['n']}"

        run_worker(own)
        done = wait_until(lambda: (t := t1.get_task(task.id)).status == "completed" and t, 10)
        assert done.output == "t1 did 1"
        assert stolen == [] and other.stats().tasks_claimed == 0
        with pytest.raises(NotFoundError):  # P-TEN-3: a foreign id is 404, as if it never was
            t2.get_task(task.id)
        assert [t.id for t in t1.list_tasks().tasks] == [task.id]
        assert t2.list_tasks().tasks == []


KEYS = """
[[key]]
id = "p-t1"
sha256 = "{producer}"
role = "producer"
tenant = "t1"

[[key]]
id = "w-t1"
sha256 = "{worker}"
role = "worker"
tenant = "t1"
queues = ["{queue}"]
"""


def write_keys(path: Path, queue: str) -> None:
    sha = {k: hashlib.sha256(k.encode()).hexdigest() for k in ("producer-secret", "worker-secret")}
    path.write_text(
        KEYS.format(producer=sha["producer-secret"], worker=sha["worker-secret"], queue=queue)
    )


def test_p_sdk_24_a_refused_worker_keeps_running_until_its_key_is_fixed(
    server_factory, run_worker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker key scoped to another queue: registration 403, logged and retried; after the
    keys file is fixed and the server is sent SIGHUP, the same worker registers and works."""
    keys = tmp_path / "keys.toml"
    write_keys(keys, queue="elsewhere")
    server = server_factory(keys_file=str(keys))
    producer = Orch8Client(server.url, api_key="producer-secret")
    with pytest.raises(ForbiddenError) as info:  # P-AUTH-3: a producer may not list workers
        producer.list_workers()
    assert (info.value.status, info.value.code) == (403, "forbidden")

    worker = new_worker(server, api_key="worker-secret", worker_id="w-scoped")
    worker.register("process_image", lambda ctx: "fixed")
    with caplog.at_level(logging.WARNING, logger="orch8"):
        rw = run_worker(worker)
        refused = lambda: [  # noqa: E731
            r.getMessage()
            for r in caplog.records
            if "registration refused" in r.getMessage() and "HTTP 403 forbidden" in r.getMessage()
        ]
        wait_until(lambda: len(refused()) >= 2, what="two refused registrations")
        assert rw.thread.is_alive() and worker.stats().polls == 0

        task = producer.enqueue("process_image")
        write_keys(keys, queue="default")
        assert server.process is not None
        server.process.send_signal(signal.SIGHUP)  # P-AUTH-4: the server re-reads the file
        done = wait_until(lambda: (t := producer.get_task(task.id)).status == "completed" and t, 15)
    assert done.output == "fixed" and done.tenant == "t1"
    producer.close()


def test_p_sdk_24_readme_tenants_example_runs(
    server_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The README's "Tenants and API keys" example, as written, with a producer key of acme."""
    keys = tmp_path / "keys.toml"
    digest = hashlib.sha256(b"acme-producer").hexdigest()
    keys.write_text(
        f'[[key]]\nid = "p-acme"\nsha256 = "{digest}"\nrole = "producer"\ntenant = "acme"\n'
    )
    server = server_factory(keys_file=str(keys))
    monkeypatch.setenv("ORCH8_URL", server.url)
    monkeypatch.setenv("ORCH8_API_KEY", "acme-producer")
    names: dict[str, object] = {"__name__": "readme_tenants"}
    exec(_readme_block("tenants"), names)
    assert capsys.readouterr().out.splitlines() == ["p-acme producer acme", "403 forbidden"]
    assert names["task"].tenant == "acme"  # type: ignore[attr-defined]
    assert names["worker"].tenant == "acme"  # type: ignore[attr-defined]
