"""`strict=True`: a missing `additionalProperties` means false, after `$ref` and `allOf` merging."""

from __future__ import annotations

import json

import jsonschema
import pytest

from grammask import Grammar
from grammask.engine.recognize import accepts
from grammask.errors import GrammarError

CASES = [
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, [{}, {"a": 1}, {"a": 1, "b": 2}, {"b": 2}]),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "object", "properties": {"x": {"type": "null"}}}},
            "required": ["a"],
        },
        [{"a": {}}, {"a": {"x": None}}, {"a": {"x": None, "y": 1}}, {"a": {}, "z": 0}],
    ),
    ({"type": "object", "patternProperties": {"^x-": {"type": "integer"}}}, [{"x-a": 1}, {"y": 1}, {"x-a": "s"}]),
    # declared additionalProperties is kept as written
    (
        {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}},
        [{"a": 1, "b": "s"}, {"b": 1}],
    ),
    ({"type": "object", "properties": {"a": {}}, "additionalProperties": True}, [{"a": 1, "b": 2}]),
    # allOf parts each declare one property: the merged object allows both
    (
        {
            "allOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": {"type": "integer"}}}],
            "type": "object",
        },
        [{"a": 1, "b": 2}, {"a": 1, "c": 3}],
    ),
    (
        {
            "$defs": {"p": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            "type": "array",
            "items": {"$ref": "#/$defs/p"},
        },
        [[{"n": 1}], [{"n": 1, "m": 2}]],
    ),
    ({"enum": [{"a": 1}, {"a": 1, "b": 2}], "properties": {"a": {}}}, [{"a": 1}, {"a": 1, "b": 2}]),
]


@pytest.mark.parametrize(("schema", "instances"), CASES, ids=[json.dumps(c[0])[:50] for c in CASES])
def test_strict_closes_objects(schema, instances):
    strict = Grammar.from_json_schema(schema, strict=True)
    loose = Grammar.from_json_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for instance in instances:
        text = json.dumps(instance).encode()
        valid = validator.is_valid(instance)
        assert accepts(loose, text) == valid, text
        extra = _has_undeclared(schema, instance)
        assert accepts(strict, text) == (valid and not extra), text


def _has_undeclared(schema: dict, instance: object) -> bool:
    """Whether some object of `instance` has a property its (strict) schema does not allow."""
    if "$ref" in schema.get("items", {}):
        return any(_has_undeclared(schema["$defs"]["p"], x) for x in instance)
    if not isinstance(instance, dict):
        return False
    if schema.get("additionalProperties", False) is not False:
        return False
    declared = {n for part in [schema, *schema.get("allOf", [])] for n in part.get("properties", {})}
    patterns = schema.get("patternProperties", {})
    for name, value in instance.items():
        if name not in declared and not any(name.startswith(p.lstrip("^")) for p in patterns):
            return True
        sub = schema.get("properties", {}).get(name)
        if isinstance(sub, dict) and _has_undeclared(sub, value):
            return True
    return False


def test_strict_required_but_undeclared_is_unsatisfiable():
    with pytest.raises(GrammarError, match="unsatisfiable"):
        Grammar.from_json_schema({"type": "object", "required": ["id"]}, strict=True)
    assert accepts(Grammar.from_json_schema({"type": "object", "required": ["id"]}), b'{"id": 1}')


def test_strict_whitespace_and_pydantic():
    grammar = Grammar.from_json_schema(
        {"type": "object", "properties": {"a": {"type": "integer"}}}, strict=True, whitespace="compact"
    )
    assert accepts(grammar, b'{"a":1}') and not accepts(grammar, b'{"a": 1}') and not accepts(grammar, b'{"b":1}')
    pydantic = pytest.importorskip("pydantic")

    class Point(pydantic.BaseModel):
        x: int

    assert not accepts(Grammar.from_pydantic(Point, strict=True), b'{"x": 1, "y": 2}')
    assert accepts(Grammar.from_pydantic(Point), b'{"x": 1, "y": 2}')
