"""Huge and malformed inputs: each compiles within its deadline or raises a clear `GrammarError`
(or `TypeError` for a non-text argument), never `RecursionError`, a hang or another exception."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest

from grammask import Grammar, GrammarError, Limits
from grammask.automata import compile_regex
from grammask.engine.recognize import accepts
from grammask.ir.grammar import Lex
from grammask.ir.normalise import normalise
from grammask.limits import deadline

#: Generous for a loaded CI machine; each case takes a few seconds at most on a quiet one.
LIMITS = Limits(compile_timeout_s=60)


def compiled(make) -> Grammar:
    """`make()`'s grammar, normalised with every lexeme's DFA built, all under `LIMITS`."""
    with deadline(LIMITS):
        grammar = make()
        for term in normalise(grammar, LIMITS).terminals:
            if isinstance(term, Lex):
                compile_regex(term.regex, limits=LIMITS)
    return grammar


def _nested(kind: str, depth: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(depth):
        schema = (
            {"type": "object", "properties": {"a": schema}, "required": ["a"]}
            if kind == "object"
            else {"type": "array", "items": schema}
        )
    return schema


def _nested_value(kind: str, depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": value} if kind == "object" else [value]
    return value


@pytest.mark.parametrize("kind", ["object", "array"])
def test_500_deep_schema(kind):
    grammar = compiled(lambda: Grammar.from_json_schema(_nested(kind, 500)))
    assert accepts(grammar, json.dumps(_nested_value(kind, 500)).encode())
    assert not accepts(grammar, json.dumps(_nested_value(kind, 499)).encode())


def test_nesting_over_the_limit_is_named():
    with pytest.raises(GrammarError, match="MAX_SCHEMA_DEPTH"):
        Grammar.from_json_schema(_nested("array", 1100))


@pytest.mark.parametrize("required", [False, True])
def test_300_properties(required):
    names = [f"p{i}" for i in range(300)]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}}
    if required:
        schema["required"] = names
    grammar = compiled(lambda: Grammar.from_json_schema(schema))
    full = {n: i for i, n in enumerate(names)}
    assert accepts(grammar, json.dumps(full).encode())
    assert accepts(grammar, json.dumps({"p7": 1}).encode()) != required


@pytest.mark.parametrize(
    ("bounds", "inside", "outside"),
    [
        # values clear of the bound: jsonschema compares with the float nearest 1e308, not 10**308
        ({"minimum": 1e308}, ["2" + "0" * 308, "1" + "0" * 309], ["9" * 307, "1e307"]),
        ({"minimum": 1e250, "maximum": 1e251}, ["1" + "0" * 250 + ".5"], ["1" + "0" * 249]),
        ({"exclusiveMinimum": 0, "maximum": 1e-300}, ["0." + "0" * 299 + "1"], ["0." + "0" * 299 + "2", "0"]),
    ],
)
def test_extreme_numeric_bounds(bounds, inside, outside):
    schema = {"type": "number", **bounds}
    grammar = compiled(lambda: Grammar.from_json_schema(schema))
    validator = jsonschema.Draft202012Validator(schema)
    for text in inside + outside:
        if "e" in text and not accepts(grammar, text.encode()):
            continue  # exponents are written out only for sign-only bounds (docs/json_schema.md)
        assert accepts(grammar, text.encode()) == validator.is_valid(json.loads(text)), text
    assert all(accepts(grammar, t.encode()) for t in inside if "e" not in t)


WORDS = [f"w{i}x" for i in range(10_000)]


@pytest.mark.parametrize(
    "make",
    [
        lambda: Grammar.from_regex("|".join(WORDS)),
        lambda: Grammar.from_ebnf("root ::= " + " | ".join(json.dumps(w) for w in WORDS) + "\n"),
        lambda: Grammar.from_lark("start: " + " | ".join(json.dumps(w) for w in WORDS) + "\n"),
        lambda: Grammar.choice(WORDS),
    ],
    ids=["regex", "gbnf", "lark", "choice"],
)
def test_10000_word_alternations(make):
    grammar = compiled(make)
    assert accepts(grammar, b"w9999x") and accepts(grammar, b"w0x")
    assert not accepts(grammar, b"w10000x") and not accepts(grammar, b"w1")


def test_100000_word_regex():
    grammar = compiled(lambda: Grammar.from_regex("|".join(f"w{i}" for i in range(100_000))))
    assert accepts(grammar, b"w99999") and not accepts(grammar, b"w100000") and not accepts(grammar, b"w")


def test_10000_number_alternation():
    grammar = compiled(lambda: Grammar.from_regex("|".join(str(7 * i) for i in range(10_000))))
    assert accepts(grammar, b"69993") and not accepts(grammar, b"69994")


@pytest.mark.parametrize("values", [list(range(50_000)), [f"s{i}" for i in range(50_000)]], ids=["int", "str"])
def test_50000_value_enums(values):
    grammar = compiled(lambda: Grammar.from_json_schema({"enum": values}))
    validator = jsonschema.Draft202012Validator({"enum": values})
    for value in (values[0], values[-1], values[12345], 50_000, "s50000", 1.0, "12"):
        assert accepts(grammar, json.dumps(value).encode()) == validator.is_valid(value), value


def test_gbnf_rule_chains():
    chain = "root ::= r0\n" + "".join(f'r{i} ::= "a" r{i + 1}\n' for i in range(10_000)) + 'r10000 ::= "b"\n'
    grammar = compiled(lambda: Grammar.from_ebnf(chain))
    assert accepts(grammar, b"a" * 10_000 + b"b") and not accepts(grammar, b"a" * 9_999 + b"b")


@pytest.mark.parametrize(
    "make",
    [
        lambda: Grammar.from_ebnf("root ::= " + "(" * 2000 + '"a"' + ")" * 2000 + "\n"),
        lambda: Grammar.from_lark("start: " + "(" * 2000 + '"a"' + ")" * 2000 + "\n"),
        lambda: Grammar.from_regex("(" * 2000 + "a" + ")" * 2000),
    ],
    ids=["gbnf", "lark", "regex"],
)
def test_deep_groups_are_refused_by_name(make):
    with pytest.raises(GrammarError, match="nested"):
        make()


def test_huge_repetition_counts_are_refused():
    with pytest.raises(GrammarError, match="max_grammar_rules"):
        compiled(lambda: Grammar.from_json_schema({"type": "array", "minItems": 10**9, "items": {"type": "array"}}))


def test_deadline_stops_a_slow_compile():
    tight = Limits(compile_timeout_s=1e-9)
    with pytest.raises(GrammarError, match="compile_timeout_s"):
        Grammar.from_json_schema({"type": "object", "properties": {f"p{i}": {} for i in range(50)}}, limits=tight)
    with pytest.raises(GrammarError, match="compile_timeout_s"), deadline(tight):
        normalise(
            Grammar.from_ebnf(
                "root ::= "
                + " ".join(f"r{i}" for i in range(300))
                + "\n"
                + "".join(f'r{i} ::= "a" | r{i + 1}\n' for i in range(300))
                + 'r300 ::= "b"\n'
            )
        )


# -- soundness -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "minProperties": 2},
        {"type": "object", "properties": {"a": {}}, "minProperties": 3},
    ],
)
def test_min_properties_over_repeatable_keys_is_refused(schema):
    with pytest.raises(GrammarError, match="minProperties"):
        Grammar.from_json_schema(schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"], "minProperties": 2},
        {"type": "object", "properties": {"a": {}, "b": {}}, "minProperties": 2, "additionalProperties": False},
        {"type": "object", "properties": {"a": {}}, "maxProperties": 1},
    ],
)
def test_declared_keys_never_repeat(schema):
    grammar = Grammar.from_json_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for text in ('{"a": 1, "a": 2}', '{"a": 1, "b": 2}', '{"b": 1, "b": 2}', '{"a": 1}', '{"c": 1, "c": 2}'):
        if accepts(grammar, text.encode()):
            pairs = json.loads(text, object_pairs_hook=lambda p: p)
            assert len({k for k, _ in pairs}) == len(pairs), text  # no duplicate key is ever accepted
            assert validator.is_valid(json.loads(text)), text


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_never_written(bad):
    grammar = Grammar.from_json_schema({"enum": [bad, 1, [bad], {"a": bad}]})
    for text in ("NaN", "Infinity", "-Infinity", "[NaN]", '{"a": NaN}'):
        assert not accepts(grammar, text.encode())
    assert accepts(grammar, b"1")
    with pytest.raises(GrammarError, match="unsatisfiable"):
        Grammar.from_json_schema({"const": bad})


# -- wrong types -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"enum": {1, 2}}, "enum must be an array"),
        ({"enum": b"ab"}, "enum must be an array"),
        ({"enum": {"a": 1}}, "enum must be an array"),
        ({"enum": [b"x"]}, "not JSON"),
        ({"const": {1, 2}}, "not JSON"),
        ({"enum": [{1: "a"}]}, "not JSON"),
        ({"properties": [1, 2]}, "properties must be an object"),
        ({"patternProperties": []}, "patternProperties must be an object"),
        ({"required": "a"}, "required must be an array of strings"),
        ({"required": [1]}, "required must be an array of strings"),
        ({"minProperties": "x"}, "non-negative integer"),
        ({"maxItems": -1}, "non-negative integer"),
        ({"minItems": 1.5}, "non-negative integer"),
        ({"pattern": 3}, "pattern must be a string"),
        ({"format": 3}, "format must be a string"),
        ({"allOf": {}}, "allOf must be an array"),
        ({"uniqueItems": "yes"}, "uniqueItems must be a boolean"),
        ({"minimum": math.inf}, "minimum must be a number"),
    ],
)
def test_wrong_keyword_types_are_grammar_errors(schema, fragment):
    with pytest.raises(GrammarError, match=fragment):
        Grammar.from_json_schema(schema)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Grammar.from_regex(3),
        lambda: Grammar.from_regex(None),
        lambda: Grammar.from_ebnf(b"root ::= 'a'"),
        lambda: Grammar.from_lark(b"start: 'a'"),
    ],
    ids=["regex-int", "regex-none", "gbnf-bytes", "lark-bytes"],
)
def test_non_text_grammars_are_type_errors(make):
    with pytest.raises(TypeError, match="must be a str"):
        make()
