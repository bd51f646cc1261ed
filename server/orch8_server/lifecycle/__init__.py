"""Task lifecycle rules: claim, lease, complete, fail + retry, reap, expire, cancel, schedule.

Nothing here knows HTTP or SQL: it decides, and the storage backend stores atomically.
"""
