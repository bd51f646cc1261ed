"""Who is polling for what: the `active_pollers` of the stuck-queue signal (P-OBS-1).

Kept in memory: a poller counts while one of its polls waits, and for `window_ms` (the
heartbeat interval) after its last poll ended, the gap a live worker leaves between two
polls. A worker killed mid-poll drops its connection, which ends the poll (P-POLL-7), so
the count reaches 0 within one heartbeat interval of the last worker dying (seed 001).

With several replicas, the engine shares what this replica saw (`take_local`: the polls
that ended since the last call, and the polls waiting now, as seen now) and merges what
the others saw (`merge`) once a second; another replica's pollers count for SHARED_LAG_MS
longer, the time a sighting takes to travel through the database.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

ANY_HANDLER = "*"
SHARED_LAG_MS = 3_000  # one sharing round on each replica (1 s each), plus slack

Pair = tuple[str, str]  # (wake key of the queue, handler or "*")


@dataclass(frozen=True)
class Poll:
    """One waiting poll: its poller key and the (queue, handler) pairs it waits on."""

    poller: str
    pairs: tuple[Pair, ...]


class PollerRegistry:
    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms
        # pair -> poller key -> polls of it waiting now
        self._waiting: dict[Pair, Counter[str]] = defaultdict(Counter)
        # pair -> poller key -> when its last poll here ended (ms)
        self._seen: dict[Pair, dict[str, int]] = defaultdict(dict)
        # the same, as the other replicas saw it
        self._remote: dict[Pair, dict[str, int]] = defaultdict(dict)
        # Ended here since the last take_local: (queue, handler, poller) -> time.
        self._local: dict[tuple[str, str, str], int] = {}

    def arrived(self, worker_id: str | None, queues: list[str], handlers: list[str] | None) -> Poll:
        """A poll starts waiting on `queues` (wake keys) for `handlers` (None: any)."""
        poll = Poll(
            worker_id or "anonymous",
            tuple((q, h) for q in queues for h in handlers or (ANY_HANDLER,)),
        )
        for pair in poll.pairs:
            self._waiting[pair][poll.poller] += 1
        return poll

    def left(self, poll: Poll, now: int) -> None:
        """The poll returned (a task, its wait over, its caller gone)."""
        for pair in poll.pairs:
            waiting = self._waiting[pair]
            waiting[poll.poller] -= 1
            if waiting[poll.poller] <= 0:
                del waiting[poll.poller]
            if not waiting:
                del self._waiting[pair]
            self._seen[pair][poll.poller] = now
            self._local[(pair[0], pair[1], poll.poller)] = now

    def take_local(self, now: int) -> list[tuple[str, str, str, int]]:
        """What this replica saw since the last call (at most one row per poller)."""
        local, self._local = self._local, {}
        for (queue, handler), waiting in self._waiting.items():
            for key in waiting:
                local[(queue, handler, key)] = now
        return [(q, h, k, t) for (q, h, k), t in local.items()]

    def put_back(self, rows: list[tuple[str, str, str, int]]) -> None:
        """Sharing failed: share these again next time, unless seen again since."""
        for queue, handler, key, t in rows:
            self._local.setdefault((queue, handler, key), t)

    def shared_horizon(self, now: int) -> int:
        """The oldest sighting by another replica that still counts."""
        return now - self.window_ms - SHARED_LAG_MS

    def merge(self, rows: list[tuple[str, str, str, int]]) -> None:
        """Pollers the replicas saw (this one's come back too, so on several replicas a
        poller counts SHARED_LAG_MS longer everywhere)."""
        for queue, handler, key, t in rows:
            pollers = self._remote[(queue, handler)]
            if pollers.get(key, -1) < t:
                pollers[key] = t

    def _active(self, pair: Pair, now: int) -> set[str]:
        keys = set(self._waiting.get(pair, ()))
        for seen, horizon in (
            (self._seen, now - self.window_ms),
            (self._remote, self.shared_horizon(now)),
        ):
            pollers = seen.get(pair)
            if pollers:
                keys.update(k for k, t in pollers.items() if t >= horizon)
        return keys

    def count(self, queue: str, handler: str, now: int) -> int:
        return len(self._active((queue, handler), now) | self._active((queue, ANY_HANDLER), now))

    def pairs(self, now: int) -> list[Pair]:
        """(queue, handler) pairs with an active poller, `*` pairs excluded."""
        known = {*self._waiting, *self._seen, *self._remote}
        return [p for p in known if p[1] != ANY_HANDLER and self._active(p, now)]

    def prune(self, now: int) -> None:
        for seen, horizon in (
            (self._seen, now - self.window_ms),
            (self._remote, self.shared_horizon(now)),
        ):
            for pair in list(seen):
                pollers = seen[pair]
                for key in [k for k, t in pollers.items() if t < horizon]:
                    del pollers[key]
                if not pollers:
                    del seen[pair]
