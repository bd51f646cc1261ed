"""The run state of one server process, shared by the parts that must see it change."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class RunState:
    # Shutdown started: waiting polls return, new polls get 503, timers stop promoting
    # (P-OBS-2); results are still served so in-flight work lands.
    draining: bool = False
    # P-OBS-6: False until the storage is open (connected, migrated).
    connected: bool = False
