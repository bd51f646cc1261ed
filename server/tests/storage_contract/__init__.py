"""The storage contract suite: every method of `Storage`, `Tx` and `WorkflowStore`
(orch8_server/storage/base.py) tested once, and run against every backend, as River's
driver suite (riverdriver/riverdrivertest) runs against each driver. A backend that
drifts from the contract fails here; tests of one backend's own mechanics (SQLite's group
commit, PostgreSQL's autocommit claims, plans and replicas) stay in test_sqlite_storage.py,
test_pg_storage.py and test_postgres.py.

Each test gets `store` (support.Backend): a fresh, empty database on SQLite (a file) or
PostgreSQL (one database for the suite, emptied before each test).
"""
