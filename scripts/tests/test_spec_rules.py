"""The house-rule spec check passes on the contract and fails on a broken copy."""

from __future__ import annotations

import copy
import importlib.util

import yaml
from conftest import REPO

_spec = importlib.util.spec_from_file_location(
    "check_spec_rules", REPO / "scripts" / "check_spec_rules.py"
)
rules = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rules)


def _contract() -> dict:
    return yaml.load((REPO / "openapi.yaml").read_text(), Loader=yaml.CSafeLoader)


def test_contract_follows_house_rules() -> None:
    assert rules.violations(_contract()) == []


def test_new_operation_without_call_policy_fails() -> None:
    spec = _contract()
    spec["paths"]["/tasks/{task_id}/pause"] = {
        "post": {
            "operationId": "pauseTask",
            "responses": copy.deepcopy(spec["paths"]["/tasks/{task_id}/cancel"]["post"]["responses"]),
        }
    }
    found = rules.violations(spec)
    assert any("POST /tasks/{task_id}/pause: x-orch8-method missing" in v for v in found), found
    assert any("POST /tasks/{task_id}/pause: x-orch8-retry missing" in v for v in found), found


def test_each_rule_catches_its_fault() -> None:
    base = _contract()
    cases = []
    spec = copy.deepcopy(base)
    del spec["paths"]["/tasks/{task_id}/cancel"]["post"]["requestBody"]["content"][
        "application/json"
    ]["example"]
    cases.append((spec, "request body without an example"))
    spec = copy.deepcopy(base)
    spec["paths"]["/tasks"]["get"]["operationId"] = "enqueueTask"
    cases.append((spec, "duplicate operationId"))
    spec = copy.deepcopy(base)
    spec["paths"]["/queues"]["get"]["responses"] = {
        "200": base["paths"]["/queues"]["get"]["responses"]["200"]
    }
    cases.append((spec, "documents no 4xx"))
    spec = copy.deepcopy(base)
    spec["components"]["responses"]["NotFound"]["content"] = {
        "application/json": {"schema": {"type": "object"}}
    }
    cases.append((spec, "must be application/problem+json"))
    spec = copy.deepcopy(base)
    spec["components"]["schemas"]["TaskResponse"] = {"type": "object"}
    cases.append((spec, "collide in generators"))
    spec = copy.deepcopy(base)
    del spec["paths"]["/queues"]["get"]["x-orch8-method"]
    cases.append((spec, "x-orch8-method missing"))
    spec = copy.deepcopy(base)
    spec["paths"]["/tasks"]["get"]["x-orch8-method"] = "enqueue"
    cases.append((spec, "duplicate x-orch8-method"))
    spec = copy.deepcopy(base)
    spec["paths"]["/tasks"]["get"]["x-orch8-retry"] = "sometimes"
    cases.append((spec, "x-orch8-retry missing or not one of"))
    spec = copy.deepcopy(base)
    del spec["paths"]["/workers/tasks/poll/batch"]["post"]["x-orch8-long-poll"]
    cases.append((spec, "lacks x-orch8-long-poll"))
    spec = copy.deepcopy(base)
    del spec["components"]["schemas"]["Problem"]["properties"]["code"]["x-orch8-codes"]
    cases.append((spec, "code has no x-orch8-codes map"))
    spec = copy.deepcopy(base)
    spec["components"]["responses"]["Conflict"]["content"]["application/problem+json"][
        "example"
    ]["code"] = "lease_stolen"
    cases.append((spec, "example code 'lease_stolen' is not in x-orch8-codes"))
    spec = copy.deepcopy(base)
    spec["components"]["schemas"]["Problem"]["properties"]["code"]["x-orch8-codes"][
        "lease_lost"
    ] = "The lease is gone."
    cases.append((spec, "x-orch8-codes lease_lost: want"))
    for broken, expected in cases:
        found = rules.violations(broken)
        assert any(expected in v for v in found), (expected, found)
