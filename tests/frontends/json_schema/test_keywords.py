"""Keyword by keyword: the grammar accepts exactly what jsonschema (with format checks) accepts."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammask.engine.recognize import accepts, parser_for
from grammask.errors import GrammarError
from grammask.frontends.json_schema import Whitespace, grammar_from_json_schema

# (schema, instances): each instance is checked against jsonschema and against the grammar.
CASES = [
    ({"type": "integer"}, [0, -7, 12345, 1.5, "1", None]),
    ({"type": ["string", "null"]}, ["a", None, 0, False]),
    ({"type": "integer", "minimum": -15, "maximum": 120}, [-16, -15, -1, 0, 9, 10, 99, 100, 120, 121, 1000]),
    ({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}, [0, 1, 9, 10, -1]),
    (
        {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "integer",
            "minimum": 5,
            "exclusiveMinimum": True,
        },
        [5, 6],
    ),
    ({"type": "number", "minimum": 0}, [0, 0.0, 3.5, -0.5, 1e-07, -1e-07, 12]),
    ({"type": "number", "exclusiveMinimum": 0}, [0, 0.0, 0.001, -1.0, 2e30]),
    ({"type": "number", "minimum": 1, "maximum": 3}, [0.999, 1, 1.5, 2.99, 3, 3.0, 3.01, 4]),
    ({"type": "number", "exclusiveMaximum": 3, "minimum": -2}, [-2.0, -2.01, 2.999, 3, 3.0]),
    ({"type": "integer", "multipleOf": 5, "minimum": 0, "maximum": 30}, [0, 5, 7, 30, 35]),
    ({"type": "boolean"}, [True, False, 0, "true"]),
    ({"enum": ["red", "green", 3, None, [1, 2], {"a": "é"}]}, ["red", "blue", 3, 4, None, [1, 2], [2, 1], {"a": "é"}]),
    ({"const": 'x"y\\z'}, ['x"y\\z', "xyz"]),
    ({"type": "string", "enum": ["a", 1]}, ["a", 1]),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["a", "ab", "abc", "abcd", "é😀", "\n\t", "\u0000x"]),
    ({"type": "string", "maxLength": 300}, ["x" * 300, "x" * 301, "é" * 299, ""]),
    ({"type": "string", "minLength": 100, "maxLength": 130}, ["y" * 99, "y" * 100, "y" * 130, "y" * 131]),
    # The last block of a long string and what follows it are one repeat: under, at and over the bound
    ({"type": "string", "maxLength": 116}, ["", "x" * 63, "x" * 64, "é" * 116, "x" * 117, "\n" * 116, "\n" * 117]),
    ({"type": "string", "minLength": 70, "maxLength": 128}, ["y" * 69, "y" * 70, "y" * 128, "y" * 129]),
    ({"type": "string", "minLength": 3, "maxLength": 129}, ["ab", "abc", "y" * 129, "y" * 130]),
    # Above 4,096 characters, binary blocks: the last ones one lexeme
    ({"type": "string", "maxLength": 4200}, ["", "y" * 127, "y" * 128, "é" * 4200, "y" * 4201]),
    ({"type": "string", "minLength": 4100, "maxLength": 4227}, ["y" * 4099, "y" * 4100, "y" * 4227, "y" * 4228]),
    ({"type": "string", "pattern": "^[a-z]+[0-9]?$"}, ["abc", "abc1", "abc12", "", "ABC"]),
    ({"type": "string", "pattern": "b+"}, ["abbc", "ac", "b"]),
    ({"type": "string", "pattern": "^[A-Z][a-z]*$", "maxLength": 4}, ["Abcd", "Abcde", "A", "ab"]),
    # lengths counted through a pattern that is no single repeat: a difference of automata
    (
        {"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "minLength": 3, "maxLength": 6},
        ["ab", "abc", "a-b", "ab-cd", "abc-de", "abc-def", "abcdefg", "ab-", "é-éé"],
    ),
    ({"type": "string", "pattern": "x", "maxLength": 3}, ["x", "axb", "éé\nx", "abxc", "abc", "\n\n\n"]),
    ({"type": "string", "pattern": "^(ab|c)+$", "minLength": 4}, ["abab", "cab", "ccc", "cccc", "abc", "abcab"]),
    ({"type": "string", "format": "ipv4", "maxLength": 8}, ["1.2.3.4", "10.2.3.4", "10.20.3.4", "1.2.3"]),
    # patterns and formats together (intersections), patterns negated (differences)
    ({"type": "string", "format": "ipv4", "pattern": "^10\\."}, ["10.0.0.1", "11.0.0.1", "10.0.0", "110.0.0.1"]),
    ({"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": "z$"}]}, ["az", "abz", "a", "z", "ba", "aza"]),
    ({"type": "string", "not": {"pattern": "a"}}, ["bcd", "abc", "", "xa", "é"]),
    ({"not": {"pattern": "^[0-9]+$"}}, ["12", "1a", 12, None, ""]),
    (
        {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}]},
        ["ab", "a", "b", "c", "aab", "ba"],
    ),
    ({"not": {"allOf": [{"pattern": "^a"}, {"pattern": "z$"}]}}, ["az", "a", "z", 1]),
    ({"enum": ["a@b.co", "nope", 3, "c@d"], "format": "email"}, ["a@b.co", "nope", 3, "c@d"]),
    ({"not": {"format": "ipv4"}}, ["1.2.3.4", "1.2.3", 7, "x"]),
    ({"oneOf": [{"format": "ipv4"}, {"pattern": "^1"}]}, ["1.2.3.4", "2.2.3.4", "1x", "x", 3]),
    # the negation of a oneOf whose branches overlap: none of them, or two at once
    ({"not": {"oneOf": [{"type": "integer"}, {"minimum": 5}]}}, [3, 7, 5.5, 2.5, "x", None]),
    (
        {"oneOf": [{"type": "string"}, {"not": {"oneOf": [{"pattern": "^a"}, {"pattern": "b$"}, {"maxLength": 1}]}}]},
        ["ab", "a", "c", "cc", "acb", 1, "b", None],
    ),
    # allOf of objects whose patterns and additional schemas differ: each additional schema holds
    # where its own side's patterns do not match
    (
        {"allOf": [{"patternProperties": {"^a": {"type": "integer"}}}, {"additionalProperties": {"type": "string"}}]},
        [{"ab": 1}, {"ab": "x"}, {"c": "x"}, {"c": 1}, {}],
    ),
    (
        {
            "allOf": [
                {"patternProperties": {"^a": {"minimum": 3}}, "additionalProperties": False},
                {"patternProperties": {"b$": {"type": "integer"}}},
            ]
        },
        [{"ab": 5}, {"ab": 2}, {"ab": 4.5}, {"cb": 4}, {"a": 2.5}, {"a": 4.5}, {"a": "s"}],
    ),
    (
        {"allOf": [{"properties": {"x": {}}, "additionalProperties": False}, {"patternProperties": {"^y": {}}}]},
        [{"x": 1}, {"y1": "s"}, {"x": 1, "y": "s"}],
    ),
    # the negation of patternProperties: some key the pattern matches fails its schema
    ({"not": {"patternProperties": {"^a": {"type": "integer"}}}}, [{"ab": 1}, {"ab": "x"}, {"b": "x"}, {}, 3]),
    (
        {"properties": {"a1": {}}, "not": {"patternProperties": {"^a": {"type": "integer"}}}},
        [{"a1": "x"}, {"a1": 1}, {"a1": 1, "a2": "s"}, {"a1": 1, "a2": 2}, {"b": "x"}],
    ),
    (
        {"oneOf": [{"patternProperties": {"^x-": {"type": "string"}}}, {"required": ["id"]}]},
        [{"x-a": "s"}, {"x-a": 1}, {"id": 1}, {"id": 1, "x-a": "s"}, {"id": 1, "x-a": 2}],
    ),
    # the negation of contains: fewer hits than minContains, or more than maxContains
    ({"not": {"contains": {"type": "string"}}}, [[], [1], ["a"], [1, "a"], "a", 3]),
    ({"not": {"contains": True}}, [[], [1], 3]),
    (
        {"type": "array", "not": {"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}},
        [[], [1], [1, 2], [1, 2, 3], [1, 2, 3, 4], ["a", 1, "b"], [1, "a", 2, 3, 4]],
    ),
    # two negations at once: a witness of each, or one entry that is both
    (
        {
            "not": {
                "anyOf": [
                    {"patternProperties": {"^a": {"type": "integer"}}},
                    {"patternProperties": {"^b": {"type": "integer"}}},
                ]
            }
        },
        [{"a": "s", "b": "s"}, {"a": "s"}, {"ab": "s"}, {"ab": "s", "b1": 1}, {"b": "x", "c": 1, "a": "y"}, {}],
    ),
    (
        {
            "not": {
                "anyOf": [
                    {"patternProperties": {"a": {"type": "integer"}}},
                    {"patternProperties": {"b": {"type": "integer"}}},
                ]
            }
        },
        [{"ab": "s"}, {"ab": 1}, {"a": "s", "xb": "t"}, {"a": "s", "xb": 2}],
    ),
    # the negation of an additionalProperties schema: some key outside properties and patterns fails it
    (
        {"not": {"properties": {"a": {}}, "patternProperties": {"^x": {}}, "additionalProperties": {"type": "string"}}},
        [{"a": 1}, {"b": 1}, {"b": "s"}, {"xb": 1}, {"a": 1, "c": 2}, {}, "s"],
    ),
    (
        {
            "properties": {"a": {}, "b": {}},
            "not": {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
        },
        [{"a": "s"}, {"b": 1}, {"b": "s"}, {"a": 1, "b": "s"}, {"c": "s"}, {"c": 1}],
    ),
    (
        {"not": {"patternProperties": {"^x": {}}, "additionalProperties": False}},
        [{"xa": 1}, {"b": 1}, {}, {"xa": 1, "b": 2}, 1],
    ),
    # additional keys split by the set of patternProperties each matches
    (
        {"type": "object", "patternProperties": {"^a": {"type": "integer"}, "b$": {"minimum": 5}}},
        [{"ab": 7}, {"ab": 3}, {"a": 3}, {"b": 3}, {"b": "x"}, {"c": "x"}, {"a": "x"}, {"a": 1, "ab": 5, "cb": 6}],
    ),
    (
        {"patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
        [{"c": "x"}, {"c": 1}, {"a": 1}, {"a": "x"}, {}],
    ),
    (
        {
            "patternProperties": {"^BIOS$": {"pattern": "sys$"}, "^\\.": {"pattern": "^app"}},
            "additionalProperties": False,
        },
        [{"BIOS": "x-sys"}, {"BIOS": "app"}, {".x": "app1"}, {".x": "x-sys"}, {"other": "a"}],
    ),
    (
        {
            "propertyNames": {"enum": ["ax", "bx", "c"]},
            "patternProperties": {"^a": {"type": "integer"}, "^b": {"type": "string"}},
        },
        [{"ax": 1}, {"bx": 1}, {"bx": "1"}, {"c": None}, {"d": 1}],
    ),
    (
        {"propertyNames": {"maxLength": 2}, "patternProperties": {"^a": {"type": "integer"}}},
        [{"ab": 1}, {"abc": 1}, {"b": "s"}, {"a": "s"}],
    ),
    ({"type": "string", "format": "date"}, ["2024-02-29", "2023-02-29", "2023-04-31", "2023-12-31", "2023-1-01"]),
    ({"type": "string", "format": "ipv4"}, ["10.0.0.255", "10.0.0.256", "1.2.3", "01.2.3.4"]),
    ({"type": "string", "format": "uuid"}, ["123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3"]),
    ({"type": "string", "format": "email"}, ["a.b@example.com", "no-at-sign"]),
    (
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["b"]},
        [{"b": "x"}, {"a": 1, "b": "x"}, {"a": 1}, {"b": "x", "c": [1]}, {"a": "1", "b": "x"}, {}],
    ),
    (
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        [{}, {"a": 2}, {"a": 2, "b": 1}, {"ab": 1}],
    ),
    (
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
        [{"a": 1, "b": "x"}, {"a": 1, "b": 2}, {"z": "q"}, {"a": "str"}],
    ),
    (
        {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False},
        [{"x-a": 1}, {"x-a": "1"}, {"y": 1}, {}],
    ),
    (
        {"type": "object", "required": ["id"], "additionalProperties": {"type": "integer"}, "properties": {"n": {}}},
        [{"id": 1}, {"n": 1, "id": 2}, {"n": 1}, {"id": "x"}],
    ),
    (
        {"type": "object", "minProperties": 1, "maxProperties": 2},
        [{}, {"a": 1}, {"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3}],
    ),
    ({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}, [{"ab": 1}, {"Ab": 1}, {}]),
    ({"type": "array", "maxItems": 0}, [[], [None], [1, 2]]),
    ({"minItems": 1, "maxItems": 0}, [[], [1], 3]),
    (
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
        [[], [1], [1, 2, 3], [1, 2, 3, 4], ["a"]],
    ),
    (
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
        [["a", 1], ["a"], ["a", 1, 2], [1, "a"], []],
    ),
    (
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "array",
            "items": [{"type": "string"}],
            "additionalItems": {"type": "boolean"},
        },
        [["a", True], ["a", 1], [True]],
    ),
    ({"type": "array", "contains": {"const": 3}}, [[3], [1, 3, 2], [1, 2], []]),
    ({"type": "array", "contains": {"const": 3}, "minContains": 2}, [[3], [3, 1, 3], [3, 3, 3], [1, 2], []]),
    ({"type": "array", "contains": {"type": "string"}, "maxContains": 1}, [[], [1], ["a", 1], ["a", "b"], ["a"]]),
    (
        {"type": "array", "contains": {"type": "string"}, "minContains": 0, "maxContains": 2},
        [[], [1], ["a", "b"], ["a", 1, "b", "c"]],
    ),
    ({"type": "array", "contains": {"const": 1}, "minContains": 0}, [[], [2], [1, 1]]),
    ({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10}]}, ["ab", "abc", 10, 9]),
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, ["a", 1, None]),
    (
        {
            "oneOf": [
                {"properties": {"k": {"const": "a"}, "v": {"type": "integer"}}, "required": ["k"]},
                {"properties": {"k": {"const": "b"}, "v": {"type": "string"}}, "required": ["k"]},
            ],
            "type": "object",
        },
        [{"k": "a", "v": 1}, {"k": "b", "v": "x"}, {"k": "a", "v": "x"}, {"k": "c"}],
    ),
    (
        {
            "allOf": [
                {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
                {"properties": {"b": {"type": "integer"}}},
            ],
            "type": "object",
        },
        [{"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {}],
    ),
    ({"allOf": [{"type": "integer", "minimum": 2}, {"maximum": 5}]}, [1, 2, 5, 6]),
    ({"type": ["integer", "string"], "not": {"type": "string"}}, [1, "a"]),
    (
        {
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}},
                    "required": ["v"],
                    "additionalProperties": False,
                }
            },
            "$ref": "#/$defs/node",
        },
        [{"v": 1}, {"v": 1, "next": {"v": 2, "next": {"v": 3}}}, {"v": 1, "next": {}}],
    ),
    (
        {
            "definitions": {"a": {"$id": "#thing", "type": "integer"}},
            "properties": {"x": {"$ref": "#thing"}},
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
        [{"x": 1}, {"x": "1"}],
    ),
    (True, [1, "a", None, {"a": [1, {"b": None}]}]),
    ({"properties": {"a": False}}, [{"a": 1}, {"b": 1}]),
    # annotations and x-* keywords never block an allOf merge
    ({"allOf": [{"type": "integer", "x-note": 1, "title": "a"}, {"x-note": 2, "minimum": 0}]}, [0, -1, "a"]),
    # not
    ({"type": "object", "required": ["a"], "not": {"required": ["b"]}}, [{"a": 1}, {"a": 1, "b": 2}, {"b": 1}]),
    ({"type": "object", "not": {"required": ["a", "b"]}}, [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}]),
    ({"type": "object", "not": {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}}, [{}, {"a": 1}, {"c": 1}]),
    ({"type": "string", "not": {"enum": ["x", "yz"]}}, ["x", "y", "yz", "yzz", ""]),
    ({"type": "integer", "not": {"const": 7}, "minimum": 0, "maximum": 10}, [6, 7, 8, 70]),
    ({"type": "number", "not": {"const": 1}}, [1, 1.0, 0.5, 2, -1, 1.0001]),
    ({"type": "number", "minimum": 0, "maximum": 3, "not": {"enum": [1, 2.5, 7]}}, [0, 1, 1.0, 2.5, 2.4, 3, 7, 0.5]),
    ({"not": {"type": "null"}}, [None, 0, "a", []]),
    ({"not": {"type": "string", "minLength": 2}}, ["a", "ab", 3, None]),
    ({"not": {"not": {"type": "integer", "minimum": 3}}}, [2, 3, "a"]),
    ({"type": "object", "not": {"properties": {"k": {"enum": ["a"]}}}}, [{"k": "a"}, {"k": "b"}, {}]),
    ({"type": "boolean", "not": {"const": True}}, [True, False]),
    # oneOf: disjoint by range, and exact by negating overlapping branches
    ({"oneOf": [{"type": "integer", "maximum": 3}, {"type": "integer", "minimum": 4}]}, [3, 4, 1.5]),
    ({"oneOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "maximum": 5}]}, [-1, 0, 5, 6]),
    (
        {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        [{"a": 1}, {"b": 1}, {"a": 1, "b": 1}, {}],
    ),
    ({"oneOf": [{"enum": [1, 2, 3]}, {"enum": [3, 4]}]}, [1, 3, 4, 5]),
    # if / then / else
    (
        {
            "type": "object",
            "if": {"properties": {"k": {"const": "a"}}, "required": ["k"]},
            "then": {"required": ["x"]},
            "else": {"required": ["y"]},
        },
        [{"k": "a", "x": 1}, {"k": "a", "y": 1}, {"k": "b", "y": 1}, {"k": "b", "x": 1}, {"y": 1}],
    ),
    ({"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "integer"}}, ["a", "ab", 1, None]),
    # dependencies
    ({"type": "object", "dependentRequired": {"a": ["b"]}}, [{}, {"a": 1}, {"a": 1, "b": 2}, {"b": 2}]),
    (
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "dependencies": {"a": ["b"], "c": {"properties": {"d": {"type": "integer"}}, "required": ["d"]}},
        },
        [{"a": 1, "b": 1}, {"a": 1}, {"d": 2, "c": 1}, {"d": "x", "c": 1}, {"c": 1}, {"d": "x"}],
    ),
    ({"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}}, [{"a": 1}, {"a": 1, "b": 1}, {}]),
    # decimal bounds and multipleOf 10^-k
    ({"type": "number", "minimum": 0.5, "exclusiveMaximum": 2.25}, [0.5, 0.49, 2.25, 2.2499, 1, 0.5001, -0.5]),
    ({"type": "number", "exclusiveMinimum": -1.05, "maximum": 0.1}, [-1.05, -1.0499, 0.1, 0.1001, 0, -2]),
    ({"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 1.5}, [0.01, 0.015, 1.5, 1.51, 0, 0.1]),
    ({"type": "integer", "minimum": 0.5, "maximum": 3.5}, [0, 1, 3, 4]),
    # unevaluated*: what the schema (with its allOf, $ref and chosen branch) declares is evaluated
    ({"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False}, [{"a": 1}, {"b": 1}, {}]),
    (
        {"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": {"type": "integer"}},
        [{"a": "x"}, {"a": "x", "b": 2}, {"b": "y"}],
    ),
    (
        {
            "$defs": {"base": {"properties": {"a": {}}}},
            "$ref": "#/$defs/base",
            "properties": {"b": {}},
            "unevaluatedProperties": False,
        },
        [{"a": 1, "b": 2}, {"c": 1}],
    ),
    (
        {
            "oneOf": [
                {"properties": {"k": {"const": 1}, "x": {}}, "required": ["k"]},
                {"properties": {"k": {"const": 2}, "y": {}}, "required": ["k"]},
            ],
            "unevaluatedProperties": False,
            "type": "object",
        },
        [{"k": 1, "x": 0}, {"k": 2, "y": 0}, {"k": 1, "y": 0}],
    ),
    ({"prefixItems": [{"type": "integer"}], "unevaluatedItems": False}, [[1], [1, 2], [], ["a"]]),
    ({"prefixItems": [{}], "unevaluatedItems": {"type": "string"}}, [[1, "a"], [1, 2], [None]]),
    # uniqueItems over a finite set
    (
        {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True},
        [[], ["a"], ["a", "b"], ["a", "a"], ["c", "b", "a"], ["b", "a", "b"]],
    ),
    (
        {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True, "minItems": 2},
        [[True, False], [True, True], [True]],
    ),
]


def _validator(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@pytest.mark.parametrize(("schema", "instances"), CASES, ids=[json.dumps(c[0])[:60] for c in CASES])
def test_grammar_agrees_with_jsonschema(schema, instances):
    grammar = grammar_from_json_schema(schema)
    validator = _validator(schema)
    for instance in instances:
        for text in (json.dumps(instance), json.dumps(instance, ensure_ascii=False)):
            assert accepts(grammar, text.encode()) == validator.is_valid(instance), text


# Formats jsonschema checks only with optional packages: expected results written out.
FORMAT_CASES = [
    (
        "date-time",
        ["2024-01-05T10:20:30Z", "2024-01-05t10:20:30.5+02:00"],
        ["2024-01-05 10:20", "2024-01-05T25:00:00Z"],
    ),
    ("time", ["23:59:59Z", "00:00:00.123-05:30"], ["24:00:00Z", "12:00:00"]),
    ("duration", ["P1Y2M3DT4H5M6S", "PT5M", "P3W"], ["P", "PT", "P1H", "1Y"]),
    ("hostname", ["example.com", "a-b.c"], ["-a.com", "a..b", "a_b"]),
    ("ipv6", ["::1", "2001:db8::ff00:42:8329", "::ffff:10.0.0.1"], ["1:2:3:4:5:6:7:8:9", "12345::", ":::"]),
    ("uri", ["https://example.com/a?b=c#d", "urn:isbn:123", "mailto:a@b.c"], ["no scheme", "/relative", "http://a b"]),
    ("uri-reference", ["/relative/path?x=1", "https://x.org", "#frag"], ["a b", "%zz"]),
]


@pytest.mark.parametrize(("fmt", "good", "bad"), FORMAT_CASES, ids=[c[0] for c in FORMAT_CASES])
def test_formats(fmt, good, bad):
    grammar = grammar_from_json_schema({"type": "string", "format": fmt})
    assert all(accepts(grammar, json.dumps(v).encode()) for v in good)
    assert not any(accepts(grammar, json.dumps(v).encode()) for v in bad)


def test_formats_as_annotations_constrain_nothing():
    """formats="annotate": draft 2020-12's default reading, where `format` is an annotation only
    (a property named "format" is still a property)."""
    schema = {
        "type": "object",
        "properties": {"when": {"type": "string", "format": "date"}, "format": {"type": "integer"}},
        "required": ["when"],
    }
    annotated = grammar_from_json_schema(schema, formats="annotate")
    asserted = grammar_from_json_schema(schema)
    for instance in ({"when": "not a date"}, {"when": "2024-01-05", "format": 3}, {"when": "x", "format": "y"}):
        valid = jsonschema.Draft202012Validator(schema).is_valid(instance)
        assert accepts(annotated, json.dumps(instance).encode()) == valid
    assert not accepts(asserted, json.dumps({"when": "not a date"}).encode())
    with pytest.raises(ValueError, match="formats"):
        grammar_from_json_schema(schema, formats="ignore")


@pytest.mark.parametrize("layout", ["flexible", "compact", 2])
def test_layouts_accept_their_own_json_dumps(layout):
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {"type": "object"}},
    }
    grammar = grammar_from_json_schema(schema, whitespace=layout)
    value = {"a": [1, 2], "b": {"c": [None, {}], "d": []}}
    own = {"flexible": {}, "compact": {"separators": (",", ":")}, 2: {"indent": 2}}[layout]
    assert accepts(grammar, json.dumps(value, **own).encode())
    assert accepts(grammar, json.dumps(value, indent=3).encode()) == (layout == "flexible")


def test_flexible_whitespace_runs_are_capped():
    grammar = grammar_from_json_schema({"type": "array"}, whitespace=Whitespace.flexible(max_run=4))
    assert accepts(grammar, b"[    1]")
    assert not accepts(grammar, b"[     1]")


def test_escapes_decode_before_patterns_and_lengths():
    grammar = grammar_from_json_schema({"type": "string", "pattern": '^a"b/\u00e9\n$'})
    assert accepts(grammar, b'"a\\"b/\xc3\xa9\\n"') and accepts(grammar, b'"a\\"b\\/\\u00E9\\u000a"')
    # printable ASCII only as itself, `"` and `\` only as short escapes (docs/json_schema.md)
    assert not accepts(grammar, b'"a\\u0022b/\xc3\xa9\\n"') and not accepts(grammar, b'"\\u0061\\"b/\xc3\xa9\\n"')
    astral = grammar_from_json_schema({"type": "string", "maxLength": 1})
    assert accepts(astral, b'"\\ud83d\\ude00"') and not accepts(astral, b'"\\ud83d"')


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"type": "array", "uniqueItems": True}, "uniqueItems"),
        ({"$ref": "#/definitions/missing"}, r"dangling \$ref"),
        ({"type": "object", "required": ["id"], "additionalProperties": False}, "unsatisfiable"),
        ({"$ref": "http://example.com/s.json"}, "outside this schema"),
        ({"type": "integer", "minimum": 5, "maximum": 1}, "unsatisfiable"),
        ({"type": "strin"}, "unknown type"),
        ({"type": "string", "not": {"multipleOf": 0.5}}, "multipleOf"),
        ({"type": "string", "format": "email", "maxLength": 1024}, "counting 1025 lengths"),
        ({"oneOf": [{"type": "number"}, {"multipleOf": 0.5}]}, "oneOf"),
        ("{not json", "not valid JSON"),
        (
            {"allOf": [{"anyOf": [{"properties": {"a": {}}}, {}], "unevaluatedProperties": False}]},
            "inside an allOf part",
        ),
        (
            {"not": {"anyOf": [{"properties": {"a": {}}}, {}], "unevaluatedProperties": False}},
            "negation of unevaluated",
        ),
    ],
)
def test_clear_errors(schema, fragment):
    with pytest.raises(GrammarError, match=fragment):
        grammar_from_json_schema(schema)


def test_a_lexeme_over_a_limit_names_the_places_in_the_schema():
    # Rules are named by the JSON Pointer of the schema they come from (an object's rules by its
    # member states), so a compile error says where in the schema the lexeme is.
    code = {"type": "string", "pattern": "^[ab]*a[ab]{20}$"}  # 2**21 states as a DFA
    node = {"type": "object", "properties": {"code": code, "next": {"$ref": "#/$defs/node"}}}
    parser = parser_for(grammar_from_json_schema({"$defs": {"node": node}, "$ref": "#/$defs/node"}))
    with pytest.raises(GrammarError) as raised:
        parser.compile_lexemes()
    assert str(raised.value).startswith("in the lexeme of rules '# (object 0, 0)', '#/$defs/node (object 0, 0)': ")


def test_many_regular_items_are_counted_by_the_parser():
    # 1,000 items of a 24-character string as one lexeme would be an automaton of about 50,000
    # states (a MaskBench schema failed on max_dfa_states after 8 s and 700 MB): the items stay
    # one small lexeme each, repeated by helper rules.
    item = {"type": "string", "pattern": "^[a-f0-9]{24}$"}
    schema = {"type": "array", "items": item, "maxItems": 1000}
    parser = parser_for(grammar_from_json_schema(schema))
    parser.compile_lexemes()
    assert all(parser.dfa(k).n_states < 100 for k, lexeme in enumerate(parser.is_lexeme) if lexeme)
    grammar = grammar_from_json_schema(schema)
    for n in (0, 1, 999, 1000, 1001):
        text = json.dumps(["0123456789abcdef01234567"] * n)
        assert accepts(grammar, text.encode()) == (n <= 1000), n
    assert not accepts(grammar, json.dumps(["0123456789abcdef0123456"]).encode())


def test_a_long_minimum_length_is_counted_in_blocks():
    # One lexeme of 1,000 chained string characters failed on max_dfa_states after 1.4 s.
    schema = {"type": "string", "minLength": 1000}
    parser = parser_for(grammar_from_json_schema(schema))
    parser.compile_lexemes()  # the largest: 64 characters (about 2,700 byte states) and the rest
    assert all(parser.dfa(k).n_states < 5000 for k, lexeme in enumerate(parser.is_lexeme) if lexeme)
    grammar, validator = grammar_from_json_schema(schema), _validator(schema)
    for instance in ("x" * 999, "x" * 1000, "é" * 1000 + "y", "\n" * 1000, 'a"' * 499, 'a"' * 500):
        for text in (json.dumps(instance), json.dumps(instance, ensure_ascii=False)):
            assert accepts(grammar, text.encode()) == validator.is_valid(instance), text[:20]


def test_nullable_adds_null():
    grammar = grammar_from_json_schema({"type": "integer", "nullable": True})
    assert accepts(grammar, b"null") and accepts(grammar, b"3") and not accepts(grammar, b'"a"')


def test_lenient_drops_and_warns():
    grammar = grammar_from_json_schema({"type": "array", "uniqueItems": True}, lenient=True)
    assert any("uniqueItems" in w for w in grammar.warnings)
    assert accepts(grammar, b"[1, 1]")


@settings(max_examples=60, deadline=None)
@given(lo=st.integers(-(10**6), 10**6), span=st.integers(0, 10**4), x=st.integers(-2 * 10**6, 2 * 10**6))
def test_integer_ranges_are_exact(lo, span, x):
    grammar = grammar_from_json_schema({"type": "integer", "minimum": lo, "maximum": lo + span})
    for value in (x, lo, lo - 1, lo + span, lo + span + 1):
        assert accepts(grammar, str(value).encode()) == (lo <= value <= lo + span)


def test_any_json_and_pydantic():
    from grammask import Grammar

    pydantic = pytest.importorskip("pydantic")

    class Point(pydantic.BaseModel):
        x: int
        label: str | None = None

    grammar = Grammar.from_pydantic(Point)
    assert accepts(grammar, b'{"x": 1}') and accepts(grammar, b'{"x": 1, "label": null}')
    assert not accepts(grammar, b'{"label": "a"}')
    assert accepts(Grammar.json(), b'[1, {"a": "\\u00e9"}, true]') and not accepts(Grammar.json(), b"[1,]")
