"""Structured (JSON lines) logging on stderr."""

from __future__ import annotations

import logging
import re
import sys
import time

import orjson

_RESERVED = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
# P-AUTH-4: a bearer token that slips into a message (a library echoing a header, an
# exception quoting a request) is blanked before the line is written. Code logs key ids.
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\",;]+")


def redact(text: str) -> str:
    """`text` with every `Bearer <token>` blanked."""
    return _BEARER.sub(r"\1[redacted]", text)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": redact(record.getMessage()),
        }
        for key, value in record.__dict__.items():
            if key not in _RESERVED and key != "color_message" and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = redact(self.formatException(record.exc_info))
        return orjson.dumps(entry, default=str).decode()


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
