"""Orch8 conformance suite: scenarios as data, run against every SDK's worker adapter."""

__version__ = "0.1.0"
