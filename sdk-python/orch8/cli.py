"""`orch8` command line: `orch8 worker package.module:worker` runs a Worker until shutdown."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from . import SPEC_SHA256, SPEC_VERSION, __version__
from .worker import Worker

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class KeyValueFormatter(logging.Formatter):
    """Plain log lines with the structured `extra=` fields appended as key=value."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if fields:
            line += " " + " ".join(f"{k}={v}" for k, v in sorted(fields.items()))
        return line


def load_worker(target: str) -> Worker:
    """Resolve `package.module:attribute`; the attribute is a Worker or returns one."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"orch8: expected package.module:worker, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`, find modules in the current dir
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, Worker) and callable(obj):
        obj = obj()
    if not isinstance(obj, Worker):
        raise SystemExit(f"orch8: {target} is not an orch8.Worker")
    return obj


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="orch8", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "worker", help="run a Worker until SIGTERM/SIGINT or a terminate directive"
    )
    run.add_argument("target", help="package.module:worker (a Worker or a function returning one)")
    run.add_argument("--concurrency", type=int, help="override the worker's concurrency")
    run.add_argument("--log-level", default=os.environ.get("ORCH8_LOG_LEVEL", "INFO"))
    sub.add_parser("version", help="print the SDK version and the contract it was built from")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(f"orch8-python {__version__} (openapi {SPEC_VERSION}, sha256 {SPEC_SHA256})")
        return 0
    handler = logging.StreamHandler()
    handler.setFormatter(KeyValueFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=args.log_level.upper(), handlers=[handler])
    worker = load_worker(args.target)
    if args.concurrency:
        worker.concurrency = args.concurrency
    worker.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
