"""A validator compiles only the definitions its schema reaches: a query parameter's first
use cost ~0.2 s when every definition of the spec was compiled with it (seen as a slow
first `GET /tasks?status=...` on a fresh server)."""

from __future__ import annotations

from orch8_server.http.validation import _document, body_validator, spec


def test_a_plain_parameter_schema_carries_no_definitions() -> None:
    assert _document({"type": "integer", "minimum": 1})["definitions"] == {}


def test_a_body_schema_carries_exactly_what_it_refers_to() -> None:
    doc = _document({"$ref": "#/components/schemas/NewTaskBatch"})
    names = set(doc["definitions"])
    assert {"NewTaskBatch", "NewTask"} <= names
    assert "Worker" not in names and len(names) < len(spec()["components"]["schemas"]) // 2
    # and it still validates through every reference it kept
    body = body_validator("NewTaskBatch")({"tasks": [{"handler_name": "h"}]})
    assert body["tasks"][0]["priority"] == 0
