"""Seed 000's curl calls, run verbatim with bash and curl (only the address differs).

The calls are a copy kept in the repository (data/seed000_worker_api.sh); when the shared
folder beside the repository holds the seed, the copy is checked against it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import warnings
from pathlib import Path

import httpx
from conftest import enqueue

SEED = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "000_73cd677872d35844.txt"
COPY = Path(__file__).resolve().parent / "data" / "seed000_worker_api.sh"
FIRST_LINE = "# Poll for a task"


def _seed_block() -> str:
    """The curl block as the repository's copy holds it (its header comment dropped)."""
    text = COPY.read_text()
    return text[text.index(FIRST_LINE) :].strip()


def test_the_copy_is_the_seeds_block() -> None:
    block = _seed_block()
    assert block.count("curl ") == 3 and "Worker API" not in block
    if not SEED.exists():  # a clone without ../shared: the copy alone is the test
        warnings.warn(f"{SEED} not found: the copy in {COPY.name} is not compared", stacklevel=1)
        return
    text = SEED.read_text()
    assert text[text.index(FIRST_LINE) : text.index("Worker API#")].strip() == block, (
        f"seed 000's curl block changed: copy it again into {COPY}"
    )


def test_seed_curl_calls_work_verbatim(api: httpx.Client, server) -> None:
    assert shutil.which("curl") and shutil.which("jq"), (
        "the seed's calls need curl and jq (make setup installs them)"
    )
    script = _seed_block().replace("http://localhost:3001", server.url)
    assert script.count("curl") == 3
    # The seed completes and then fails the same task; run them as two scenarios.
    poll_and_complete = script[: script.index("# Or fail the task")]
    poll_and_fail = re.sub(r"# Complete the task.*?(?=# Or fail the task)", "", script, flags=re.S)
    for part, expected in [(poll_and_complete, "completed"), (poll_and_fail, "scheduled")]:
        task = enqueue(api, "process_image", retry={"initial_backoff_ms": 60000})
        out = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", part + '\necho "TASK_ID=$TASK_ID"'],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        assert f"TASK_ID={task['id']}" in out
        assert api.get(f"/tasks/{task['id']}").json()["status"] == expected


def test_seed_heartbeat_curl_with_empty_body(api: httpx.Client, server) -> None:
    task = enqueue(api, "process_image_hb")
    api.post("/workers/tasks/poll", json={"handler_names": ["process_image_hb"], "wait_ms": 0})
    cmd = f"curl -s -X POST {server.url}/workers/tasks/{task['id']}/heartbeat"
    out = subprocess.run(
        ["bash", "-c", cmd], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    assert '"lease_expires_at"' in out
