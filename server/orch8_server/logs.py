"""Structured (JSON lines) logging on stderr."""

from __future__ import annotations

import logging
import re
import sys
import time
from urllib.parse import unquote_plus

import orjson

_RESERVED = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
# P-AUTH-4: a bearer token that slips into a message (a library echoing a header, an
# exception quoting a request) is blanked before the line is written. Code logs key ids.
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\",;]+")
# P-AUTH-8: the server reads keys from the Authorization header only, but a client may
# still put one in the URL (`?api_key=...`), and the access log prints the URL. The values
# of these query parameters (names compared case-insensitively, after percent-decoding)
# become `***` in every line. A query runs from `?` to whitespace or `#` (not to a quote: a
# value holding one is masked whole, and a quote after it may go too).
SECRET_PARAMS = frozenset({"api_key", "apikey", "key", "token", "access_token", "secret"})
_QUERY = re.compile(r"\?[^\s#]+")


def _scrub_query(match: re.Match[str]) -> str:
    pairs = match[0][1:].split("&")
    for i, pair in enumerate(pairs):
        name, eq, value = pair.partition("=")
        if eq and value and unquote_plus(name).strip().lower() in SECRET_PARAMS:
            pairs[i] = name + "=***"
    return "?" + "&".join(pairs)


def redact(text: str) -> str:
    """`text` with every `Bearer <token>` blanked and secret query parameters masked."""
    if "?" in text:
        text = _QUERY.sub(_scrub_query, text)
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
                entry[key] = redact(value) if isinstance(value, str) else value
        if record.exc_info:
            entry["exc"] = redact(self.formatException(record.exc_info))
        return orjson.dumps(entry, default=str).decode()


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
