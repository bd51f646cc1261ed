"""The SDK facts (openapi.sdk.json) and the check that no generator names an operation."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO, load_script

facts = load_script("gen_sdk_facts")
generators = load_script("check_generators")


def _contract() -> dict:
    return yaml.load((REPO / "openapi.yaml").read_text(), Loader=yaml.CSafeLoader)


def _tree(tmp_path: Path) -> Path:
    """A copy of the repo's generator files and spec, to break one of them."""
    for path in generators.generator_files(REPO):
        target = tmp_path / path.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    shutil.copy(REPO / "openapi.yaml", tmp_path / "openapi.yaml")
    return tmp_path


def test_no_generator_names_an_operation() -> None:
    assert generators.hits(REPO, _contract()) == []


@pytest.mark.parametrize(
    ("generator", "line"),
    [
        (
            "sdk-go/tools/cmd/gencalls/main.go",
            'var paramsAddedLater = map[string]bool{"getTask": true}',
        ),
        ("sdk-python/codegen/gen_client.py", 'UNWRAP = {"enqueue_batch": "tasks"}'),
        ("sdk-typescript/scripts/gen-client.mjs", 'if (d.name === "HeartbeatTask") {}'),
    ],
)
def test_a_generator_that_names_an_operation_fails(
    tmp_path: Path, generator: str, line: str
) -> None:
    root = _tree(tmp_path)
    with (root / generator).open("a") as f:
        f.write(line + "\n")
    found = generators.hits(root, _contract())
    assert len(found) == 1 and found[0].startswith(generator), found
    assert generators.main(root) == 1


def test_committed_facts_match_the_spec() -> None:
    import json

    assert json.loads((REPO / "openapi.sdk.json").read_text()) == facts.facts(_contract())


def test_facts_carry_the_spec_extensions() -> None:
    data = facts.facts(_contract())
    by_id = {op["operationId"]: op for op in data["operations"]}
    assert by_id["enqueueTasks"]["unwrap"] == {"field": "tasks", "sdks": ["python", "typescript"]}
    assert by_id["enqueueTask"]["produces"] == "task"
    assert by_id["getTask"]["signature"] == "frozen"
    constants = {c["name"]: c for c in data["constants"]}
    assert constants["maxPollBatchSize"]["value"] == 100
    assert constants["maxPollBatchSize"]["source"].endswith(
        "/PollBatchOptions/properties/batch_size/maximum"
    )
    assert constants["defaultGracePeriodMs"]["value"] == 25000


@pytest.mark.parametrize(
    ("where", "fact", "message"),
    [
        (("/tasks", "post"), {"produces": "task", "retry": 1}, "x-orch8-sdk takes only"),
        (("/tasks", "post"), {"produces": "tasks"}, "needs a `tasks` array"),
        (
            ("/tasks/batch", "post"),
            {"unwrap": {"field": "nope", "sdks": ["go"]}},
            "is not in the answer",
        ),
        (("/workers/tasks/poll", "post"), {"signature": "frozen"}, "query params came later"),
        (("/health/live", "get"), {"aliases": ["ready"]}, "used twice"),
    ],
)
def test_each_bad_fact_is_refused(where: tuple[str, str], fact: dict, message: str) -> None:
    spec = _contract()
    spec["paths"][where[0]][where[1]]["x-orch8-sdk"] = fact
    with pytest.raises(facts.FactError, match=message):
        facts.facts(spec)


def test_a_schema_constant_must_name_a_keyword_it_sits_beside() -> None:
    spec = copy.deepcopy(_contract())
    batch = spec["components"]["schemas"]["PollBatchOptions"]["properties"]["batch_size"]
    batch["x-orch8-sdk-constant"] = {"maxItems": "maxPollBatchSize"}
    with pytest.raises(facts.FactError, match="not set here"):
        facts.facts(spec)
