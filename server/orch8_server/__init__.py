"""Reference server for the Orch8 external-worker protocol."""

__version__ = "0.1.0"
