"""The composition root: the one place that builds a server instance's parts and wires
them together. Leaf services first (dispatcher, pollers, metrics, history, telemetry,
backpressure, controls, effects), then the rules, each given only the collaborators it
uses, then the background services. No rule receives the engine, and no rule module
imports another rule module's class to build it (tests/test_architecture.py).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from orch8_server.config import Settings
from orch8_server.lifecycle import reaper
from orch8_server.lifecycle.backpressure import Backpressure
from orch8_server.lifecycle.clock import TestClock
from orch8_server.lifecycle.controls import Controls
from orch8_server.lifecycle.dispatcher import Dispatcher
from orch8_server.lifecycle.effects import Effects, InstanceWaiters, Work
from orch8_server.lifecycle.engine import Engine
from orch8_server.lifecycle.history import FLUSH_S, History
from orch8_server.lifecycle.leases import Leases
from orch8_server.lifecycle.observe import TaskObserver
from orch8_server.lifecycle.pollers import PollerRegistry
from orch8_server.lifecycle.rate_limits import RateLimits
from orch8_server.lifecycle.state import RunState
from orch8_server.lifecycle.tasks import Tasks
from orch8_server.lifecycle.workers import Workers
from orch8_server.lifecycle.workflows import EVENT_BATCH, IDLE_PUMP_S, Workflows
from orch8_server.metrics import Metrics
from orch8_server.services import Service
from orch8_server.storage.base import Storage
from orch8_server.timefmt import now_ms

if TYPE_CHECKING:
    from orch8_server.tracing import ServerSpans

POLLER_SHARING_S = 1.0  # P-OBS-1 across replicas


def build(settings: Settings, storage: Storage, spans: ServerSpans | None = None) -> Engine:
    state = RunState()
    rng = random.Random()
    metrics = Metrics()
    dispatcher = Dispatcher()
    pollers = PollerRegistry(settings.poller_window_ms)
    history = History(storage)  # P-OBS-5
    backpressure = Backpressure(settings, storage, metrics)  # P-BP-1..3
    controls = Controls(storage, dispatcher)  # P-CTRL-*, P-LABEL-1
    # The dispatcher asks the controls (a paused queue wakes nobody) and tells them when
    # wake-ups may have been missed (their copy may be stale too).
    dispatcher.is_paused = controls.paused
    dispatcher.on_controls_changed = controls.mark_stale
    # Wake-ups from other replicas sharing the database (P-POLL-3).
    storage.set_waker(dispatcher.wake, dispatcher.wake_all)
    waiters = InstanceWaiters()  # P-WF-9
    observe = TaskObserver(metrics, spans)  # P-TEL-6 histograms, P-TEL-2 spans
    effects = Effects(metrics, history, observe, dispatcher, controls, waiters)
    work = Work(storage, effects)

    tasks = Tasks(storage, work, backpressure, state)
    leases = Leases(
        settings, storage, work, controls, dispatcher, pollers, backpressure, metrics, state, rng
    )
    workers = Workers(settings, storage, work, controls)
    workflows = Workflows(storage, work, backpressure, waiters)  # hooks itself into `work`
    dispatcher.set_promoter(tasks.promote_due)

    reaper_s = settings.reaper_interval_ms / 1000
    services = [
        Service("lease-expiry", reaper_s, lambda: reaper.reclaim_expired_leases(work)),
        Service("good-until-expiry", reaper_s, lambda: reaper.expire_overdue(work)),
        Service("scheduled-promotion", reaper_s, lambda: reaper.promote_due(work)),
        Service("concurrency-keys", reaper.KEYS_S, lambda: reaper.admit_stranded(work)),
        Service("dead-workers", reaper_s, workers.sweep_dead),
        Service("poller-prune", reaper_s, _prune(pollers)),
        pump := Service("workflow-pump", IDLE_PUMP_S, _pump(workflows)),
        Service("history-flush", FLUSH_S, history.flush, final=history.final_flush),
    ]
    workflows.pump_service = pump
    if storage.multi_replica:
        services.append(
            Service("poller-sharing", POLLER_SHARING_S, _share_pollers(storage, pollers))
        )
    return Engine(
        settings=settings, storage=storage, spans=spans, state=state, rng=rng,
        metrics=metrics, dispatcher=dispatcher, pollers=pollers, history=history,
        backpressure=backpressure, controls=controls, tasks=tasks, leases=leases,
        workers=workers, workflows=workflows, services=services, work=work,
        clock=TestClock(storage, services), rate_limits=RateLimits(storage, work),
    )  # fmt: skip


def _prune(pollers: PollerRegistry) -> Callable[[], Awaitable[None]]:
    async def tick() -> None:
        pollers.prune(now_ms())

    return tick


def _pump(workflows: Workflows) -> Callable[[], Awaitable[bool]]:
    async def tick() -> bool:
        return await workflows.pump() >= EVENT_BATCH  # a full batch: more are due

    return tick


def _share_pollers(storage: Storage, pollers: PollerRegistry) -> Callable[[], Awaitable[None]]:
    async def tick() -> None:
        """P-OBS-1 across replicas: publish the pollers seen here (one row per poller at
        most) and merge those the other replicas saw."""
        now = now_ms()
        mine = pollers.take_local(now)
        try:
            others = await storage.share_pollers(mine, pollers.shared_horizon(now))
        except BaseException:  # storage outage: keep them for the next round
            pollers.put_back(mine)
            raise
        pollers.merge(others)

    return tick
