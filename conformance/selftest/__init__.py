"""Self-test: the suite must catch deliberately broken adapters (see __main__.py)."""
