"""Who is polling for what: the `active_pollers` of the stuck-queue signal (P-OBS-1).

Kept in memory: a poller counts while it waits in a long-poll and for `window_ms` after
its last poll (a long-polling worker re-polls at least every `max_wait_ms`). With several
replicas, the engine shares what this replica saw (`take_local`) and merges what the
others saw (`merge`) once a second, so the count is cluster-wide.
"""

from __future__ import annotations

from collections import defaultdict

ANY_HANDLER = "*"


class PollerRegistry:
    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms
        # (queue, handler or "*") -> poller key -> last poll time (ms)
        self._seen: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
        # Seen here since the last take_local: (queue, handler, poller) -> time.
        self._local: dict[tuple[str, str, str], int] = {}

    def seen(self, worker_id: str | None, queue: str, handlers: list[str] | None, now: int) -> None:
        key = worker_id or "anonymous"
        for handler in handlers or (ANY_HANDLER,):
            self._seen[(queue, handler)][key] = now
            self._local[(queue, handler, key)] = now

    def take_local(self) -> list[tuple[str, str, str, int]]:
        """What this replica saw since the last call (at most one row per poller)."""
        local, self._local = self._local, {}
        return [(q, h, k, t) for (q, h, k), t in local.items()]

    def put_back(self, rows: list[tuple[str, str, str, int]]) -> None:
        """Sharing failed: share these again next time, unless seen again since."""
        for queue, handler, key, t in rows:
            self._local.setdefault((queue, handler, key), t)

    def merge(self, rows: list[tuple[str, str, str, int]]) -> None:
        """Pollers other replicas saw."""
        for queue, handler, key, t in rows:
            pollers = self._seen[(queue, handler)]
            if pollers.get(key, -1) < t:
                pollers[key] = t

    def count(self, queue: str, handler: str, now: int) -> int:
        horizon = now - self.window_ms
        keys: set[str] = set()
        for h in (handler, ANY_HANDLER):
            pollers = self._seen.get((queue, h))
            if pollers:
                keys.update(k for k, t in pollers.items() if t >= horizon)
        return len(keys)

    def pairs(self, now: int) -> list[tuple[str, str]]:
        """(queue, handler) pairs with an active poller, `*` pairs excluded."""
        horizon = now - self.window_ms
        return [
            pair
            for pair, pollers in self._seen.items()
            if pair[1] != ANY_HANDLER and any(t >= horizon for t in pollers.values())
        ]

    def prune(self, now: int) -> None:
        horizon = now - self.window_ms
        for pair in list(self._seen):
            pollers = self._seen[pair]
            for key in [k for k, t in pollers.items() if t < horizon]:
                del pollers[key]
            if not pollers:
                del self._seen[pair]
