"""The Python SDK's Worker with a no-op handler, as a user would run it.
Usage: python py_worker.py URL CONCURRENCY  (stops on SIGTERM)"""

import sys

from orch8 import Worker

worker = Worker(base_url=sys.argv[1], concurrency=int(sys.argv[2]), worker_id="bench-py")


@worker.handler("noop")
async def noop(ctx):
    return None


if __name__ == "__main__":
    worker.run()
