"""The root README's "Quickstart with curl" block, run verbatim with bash against a live
server (issue 14: "the root README quickstart also runs verbatim").

The block is read from README.md itself, so an edit there is what gets tested. The only
change made to it is the server address (`http://localhost:3001` -> the launched server's
URL). A `curl` shell function defined before the block records each call's HTTP status
and body without changing what the block sees, so every step's effect is asserted:
enqueued, claimed, heartbeat 200, complete 200, the alternative `fail` refused once the
task is completed, and the task stored as completed with one attempt.
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from pathlib import Path

from conftest import REPO
from orch8_server.testing import start_server

README = REPO / "README.md"
SECTION = "## Quickstart with curl"
README_URL = "http://localhost:3001"

# Runs before the block. The real curl writes the body to a file and the status to
# stdout; the function then prints the body, as plain curl would, and logs
# "<n> <status> <method> <url>" plus <n>.body for the test.
CURL_RECORDER = r"""
set -euo pipefail
: > "$CURL_DIR/calls.log"
curl() {
  local url="" method=GET prev="" arg status n
  for arg in "$@"; do
    case $arg in http://* | https://*) url=$arg ;; esac
    [ "$prev" = "-X" ] && method=$arg
    prev=$arg
  done
  # Counted from the log, not a variable: `TASK=$(curl ...)` runs in a subshell.
  n=$(( $(wc -l < "$CURL_DIR/calls.log") + 1 ))
  status=$(command curl -o "$CURL_DIR/$n.body" -w '%{http_code}' "$@")
  cat "$CURL_DIR/$n.body"
  echo "$n $status $method $url" >> "$CURL_DIR/calls.log"
}
"""


def quickstart_block(text: str) -> str:
    """The first ```sh block of the quickstart section (before the next ## heading)."""
    assert SECTION in text, f"README.md has no {SECTION!r} section"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert match, f"no ```sh block under {SECTION!r} in README.md"
    return match[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def _calls(log_dir: Path, base_url: str) -> list[dict]:
    """What the recorder logged: one dict per curl call, in order."""
    calls = []
    for line in (log_dir / "calls.log").read_text().splitlines():
        n, status, method, url = line.split(" ", 3)
        text = (log_dir / f"{n}.body").read_text()
        calls.append(
            {
                "step": (method, url.removeprefix(base_url)),
                "status": int(status),
                "text": text,
            }
        )
    return calls


def test_readme_quickstart_runs_verbatim(tmp_path: Path) -> None:
    block = quickstart_block(README.read_text())
    assert block.count(README_URL) >= 7, "the quickstart no longer uses localhost:3001"
    with start_server() as server:
        out = subprocess.run(
            ["bash", "-c", CURL_RECORDER + block.replace(README_URL, server.url)],
            cwd=tmp_path,  # outside the repo: the block must not rely on the checkout
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "CURL_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert out.returncode == 0, f"quickstart failed:\n{out.stdout}\n{out.stderr}"
        calls = _calls(tmp_path, server.url)
        task_id = json.loads(calls[0]["text"])["id"]
        assert [c["step"] for c in calls] == [
            ("POST", "/tasks"),
            ("POST", "/workers/tasks/poll"),
            ("POST", f"/workers/tasks/{task_id}/heartbeat"),
            ("POST", f"/workers/tasks/{task_id}/complete"),
            ("POST", f"/workers/tasks/{task_id}/fail"),
            ("GET", f"/tasks/{task_id}"),
            ("GET", f"/tasks/{task_id}/attempts"),
        ], f"the quickstart's calls changed: {calls}\n{out.stderr}"
        enqueue, poll, heartbeat, complete, fail, get, attempts = calls

        assert enqueue["status"] == 201, enqueue
        assert poll["status"] == 200, f"the poll claimed nothing: {poll}"
        claimed = json.loads(poll["text"])
        assert claimed["id"] == task_id and claimed["handler_name"] == "process_image"
        assert claimed["params"] == {"image_url": "https://example.com/cat.png"}
        assert heartbeat["status"] == 200, heartbeat
        assert complete["status"] == 200, complete
        # The "... or fail it" alternative, run after complete, is refused and changes nothing.
        assert 400 <= fail["status"] < 500 and "code" in json.loads(fail["text"]), fail
        assert get["status"] == 200 and attempts["status"] == 200

        # The block printed the task with jq; the server's state agrees.
        assert '"status": "completed"' in out.stdout
        task = _get(f"{server.url}/tasks/{task_id}")
        assert task["status"] == "completed"
        assert task["output"] == {"url": "https://cdn.example.com/processed.png"}
        history = _get(f"{server.url}/tasks/{task_id}/attempts")
        runs = history.get("attempts", history.get("items"))
        assert isinstance(runs, list) and len(runs) == 1, history
        assert runs[0].get("worker_id") == "img-worker-1", runs[0]


def test_block_extraction_reads_the_readme_section() -> None:
    text = "# x\n## Quickstart with curl\n\ntext\n```sh\necho one\n```\n```sh\necho two\n```\n"
    assert quickstart_block(text) == "echo one\n"
    no_block = "# x\n## Quickstart with curl\nno block\n## Next\n```sh\nno\n```\n"
    try:
        quickstart_block(no_block)
    except AssertionError as exc:
        assert "no ```sh block" in str(exc)
    else:
        raise AssertionError("a section without a block must fail")
