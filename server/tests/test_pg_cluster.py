"""The test PostgreSQL cluster starts even when another process took the port it picked:
postgres cannot bind port 0 and report it, so its port is chosen free beforehand and may
be taken by the time it binds (tests/pg_cluster.py)."""

from __future__ import annotations

import socket

from pg_cluster import PgCluster


def test_a_cluster_whose_port_is_taken_starts_on_another() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        cluster = PgCluster()
        cluster.port = taken.getsockname()[1]  # as if another process bound it meanwhile
        try:
            cluster.init()
            assert cluster.port != taken.getsockname()[1]
            assert cluster.psql("SELECT 41 + 1") == "42"
        finally:
            cluster.destroy()
