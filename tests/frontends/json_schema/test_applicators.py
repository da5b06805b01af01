"""unevaluated*, `not`, `if`, `$dynamicRef`, `multipleOf` and `propertyNames` forms, checked against
jsonschema as the oracle: every instance the grammar accepts is valid, and the valid ones listed
are accepted (where grammask is stricter by design, the instance is marked)."""

from __future__ import annotations

import json
from decimal import Decimal

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammask.engine.recognize import accepts, parser_for
from grammask.errors import GrammarError
from grammask.frontends.json_schema import grammar_from_json_schema

#: An instance grammask rejects although it is valid (a documented departure, such as key order).
STRICTER = object()

# (schema, instances): each is checked against jsonschema and against the grammar.
CASES = [
    # unevaluatedProperties in an allOf part sees only its own annotations, not its cousins'.
    (
        {"allOf": [{"properties": {"foo": True}}, {"unevaluatedProperties": False}]},
        [{}, {"foo": 1}, 3, "x"],
    ),
    (
        {
            "allOf": [{"properties": {"foo": True}, "unevaluatedProperties": False}],
            "anyOf": [{"properties": {"bar": True}}],
        },
        [{"foo": 1}, {"bar": 1}, {"foo": 1, "bar": 1}, {}],
    ),
    # a nested unevaluatedProperties: true evaluates everything for the outer one
    (
        {
            "properties": {"foo": {"type": "string"}},
            "allOf": [{"unevaluatedProperties": True}],
            "unevaluatedProperties": False,
        },
        [{"foo": "a", "bar": 1}, {"foo": 1}, {"bar": None}],
    ),
    # next to `not`: the negation's keywords evaluate nothing
    (
        {"properties": {"foo": {"type": "string"}}, "not": {"required": ["bar"]}, "unevaluatedProperties": False},
        [{"foo": "a"}, {"foo": "a", "bar": 1}, {"baz": 1}, {}],
    ),
    (
        {
            "prefixItems": [{"const": "foo"}],
            "not": {"not": {"prefixItems": [True, {"const": "bar"}]}},
            "unevaluatedItems": False,
        },
        [["foo", "bar"], ["foo"], ["foo", "baz"], []],
    ),
    # if/then/else: the branch taken evaluates its properties (and the `if`'s when it passes)
    (
        {
            "if": {"properties": {"foo": {"const": "then"}}, "required": ["foo"]},
            "then": {"properties": {"bar": {"type": "string"}}, "required": ["bar"]},
            "else": {"properties": {"baz": {"type": "string"}}, "required": ["baz"]},
            "unevaluatedProperties": False,
        },
        [
            {"foo": "then", "bar": "b"},
            {"foo": "then", "bar": "b", "baz": "c"},
            {"baz": "c"},
            {"foo": "else", "baz": "c"},
        ],
    ),
    (
        {"if": {"patternProperties": {"foo": {"type": "string"}}}, "unevaluatedProperties": False},
        [{"foo": "a"}, {"foo": 1}, {}, {"bar": "a"}],
    ),
    # anyOf: every passing branch's annotations count (one option per set of passing branches)
    (
        {
            "properties": {"foo": {"type": "string"}},
            "anyOf": [
                {"properties": {"bar": {"const": "bar"}}, "required": ["bar"]},
                {"properties": {"baz": {"const": "baz"}}, "required": ["baz"]},
            ],
            "unevaluatedProperties": False,
        },
        [{"foo": "f", "bar": "bar"}, {"bar": "bar", "baz": "baz"}, {"bar": "bar", "quux": 1}, {"foo": "f"}],
    ),
    # oneOf whose branches may overlap: the other branch is negated, unevaluated settled first
    (
        {
            "oneOf": [{"properties": {"a": True}, "required": ["a"]}, {"properties": {"b": True}, "required": ["b"]}],
            "unevaluatedProperties": False,
        },
        [{"a": 1}, {"b": 1}, {"a": 1, "b": 1}, {"a": 1, "c": 1}, {}],
    ),
    # unevaluatedItems next to contains: the items contains matches are evaluated
    (
        {"contains": {"type": "string"}, "unevaluatedItems": {"type": "integer"}},
        [["a"], ["a", 1], [1, "b", 2], [1.5, "a"], [1, 2], []],
    ),
    # unevaluatedItems in a $ref target, next to sibling prefixItems
    (
        {
            "$defs": {"two": {"prefixItems": [True, {"type": "string"}], "unevaluatedItems": False}},
            "$ref": "#/$defs/two",
            "prefixItems": [{"type": "integer"}],
        },
        [[1, "a"], [1], [1, "a", 2], ["a", "a"]],
    ),
    # not: {type: integer} where numbers are allowed keeps the non-integers
    ({"not": {"type": "integer"}}, [1, 1.5, -0.25, 0, "a", None, [1], 10.01]),
    ({"type": "number", "minimum": 1, "maximum": 3, "not": {"type": "integer"}}, [1, 1.5, 2, 2.999, 3, 3.5, 0.5]),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, [1, 2, 2.5, 3, 1.5, "x"]),
    ({"not": {"not": {"type": "integer"}}}, [1, 1.5, "a"]),
    # not of prefixItems / items / additionalProperties: some member fails its schema
    ({"not": {"prefixItems": [{"type": "string"}, {"type": "integer"}]}}, [[], ["a"], [1], ["a", 1], ["a", "b"], 3]),
    ({"type": "array", "not": {"items": {"type": "string"}}}, [[], ["a"], ["a", 1], [1]]),
    ({"type": "array", "not": {"prefixItems": [True], "items": False}}, [[], [1], [1, 2]]),
    ({"type": "object", "not": {"additionalProperties": False}}, [{}, {"a": 1}]),
]


def _validator(schema: object) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def check(schema: object, instances: list) -> None:
    """The grammar of `schema` agrees with jsonschema on each instance (STRICTER marks the next one
    as valid but refused by design)."""
    grammar = grammar_from_json_schema(schema)
    validator = _validator(schema)
    stricter = False
    for instance in instances:
        if instance is STRICTER:
            stricter = True
            continue
        text = json.dumps(instance)
        valid = validator.is_valid(instance)
        got = accepts(grammar, text.encode())
        assert not (got and not valid), f"accepts invalid {text}"
        assert got == valid or (stricter and valid), f"rejects valid {text}"
        stricter = False


@pytest.mark.parametrize(("schema", "instances"), CASES, ids=[json.dumps(c[0])[:70] for c in CASES])
def test_grammar_agrees_with_jsonschema(schema, instances):
    check(schema, instances)


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"not": {"propertyNames": {"maxLength": 2}}}, "propertyNames"),
        ({"not": {"items": {"type": "string"}, "prefixItems": [True]}}, "items"),
    ],
)
def test_negations_without_exact_form_raise(schema, fragment):
    with pytest.raises(GrammarError, match=fragment):
        grammar_from_json_schema(schema)


_DECIMALS = st.decimals(min_value=-50, max_value=50, places=2, allow_nan=False, allow_infinity=False)


@settings(max_examples=40, deadline=None)
@given(
    lo=_DECIMALS, span=st.decimals(min_value=Decimal("0.1"), max_value=20, places=1), xs=st.lists(_DECIMALS, max_size=6)
)
def test_non_integers_in_bounds_are_exact(lo: Decimal, span: Decimal, xs: list[Decimal]):
    """`not: {type: integer}` within decimal bounds: the grammar accepts exactly the valid numbers
    (written as json.dumps of their float, without exponent)."""
    schema = {"type": "number", "minimum": float(lo), "exclusiveMaximum": float(lo + span), "not": {"type": "integer"}}
    grammar = grammar_from_json_schema(schema)
    validator = _validator(schema)
    for x in [*xs, lo, lo + span, lo + Decimal("0.5"), Decimal(int(lo))]:
        value = float(x)
        text = json.dumps(value)
        if "e" in text:
            continue
        assert accepts(grammar, text.encode()) == validator.is_valid(value), text


DYNAMIC_CASES = [
    # the root resource defines the $dynamicAnchor: it is always the outermost in scope
    (
        {
            "$id": "https://example.com/root",
            "$ref": "list",
            "$defs": {
                "foo": {"$dynamicAnchor": "items", "type": "string"},
                "list": {
                    "$id": "list",
                    "type": "array",
                    "items": {"$dynamicRef": "#items"},
                    "$defs": {"items": {"$dynamicAnchor": "items"}},
                },
            },
        },
        [["a", "b"], ["a", 1], []],
    ),
    # the initial target has no matching $dynamicAnchor: a plain $ref
    (
        {
            "$id": "https://example.com/root",
            "$ref": "list",
            "$defs": {
                "foo": {"$dynamicAnchor": "items", "type": "string"},
                "list": {
                    "$id": "list",
                    "type": "array",
                    "items": {"$dynamicRef": "#items"},
                    "$defs": {"items": {"$anchor": "items", "type": "integer"}},
                },
            },
        },
        [[1, 2], ["a"], []],
    ),
    # a JSON Pointer fragment, to a boolean schema
    ({"$defs": {"no": False}, "properties": {"a": {"$dynamicRef": "#/$defs/no"}}}, [{}, {"a": 1}]),
    # a URN base resolves a bare-fragment $ref against itself
    (
        {
            "$ref": "urn:uuid:deadbeef-4321-ffff-ffff-1234feebdaed",
            "$defs": {
                "foo": {
                    "$id": "urn:uuid:deadbeef-4321-ffff-ffff-1234feebdaed",
                    "$defs": {"bar": {"type": "string"}},
                    "$ref": "#/$defs/bar",
                }
            },
        },
        ["a", 1],
    ),
]


@pytest.mark.parametrize(("schema", "instances"), DYNAMIC_CASES, ids=[str(i) for i in range(len(DYNAMIC_CASES))])
def test_dynamic_refs_with_a_static_target(schema, instances):
    check(schema, instances)


def test_dynamic_ref_that_depends_on_the_scope_raises():
    schema = {
        "$id": "https://example.com/main",
        "properties": {"x": {"$ref": "item"}},
        "$defs": {
            "bar": {
                "$id": "bar",
                "$defs": {
                    "item": {
                        "$id": "item",
                        "properties": {"content": {"$dynamicRef": "#content"}},
                        "$defs": {"default": {"$dynamicAnchor": "content", "type": "integer"}},
                    },
                    "content": {"$dynamicAnchor": "content", "type": "string"},
                },
            }
        },
    }
    with pytest.raises(GrammarError, match="depends on the dynamic scope"):
        grammar_from_json_schema(schema)


def test_merged_properties_come_in_written_order():
    """A `$ref` or `allOf` merges where it is written: its properties before or after `properties`."""
    defs = {"b": {"properties": {"b": {"type": "integer"}}, "required": ["b"]}}
    after = {"properties": {"a": {"type": "string"}}, "required": ["a"], "$ref": "#/$defs/b", "$defs": defs}
    before = {"$ref": "#/$defs/b", "properties": {"a": {"type": "string"}}, "required": ["a"], "$defs": defs}
    first, second = b'{"a": "x", "b": 1}', b'{"b": 1, "a": "x"}'
    assert accepts(grammar_from_json_schema(after), first) and not accepts(grammar_from_json_schema(after), second)
    assert accepts(grammar_from_json_schema(before), second) and not accepts(grammar_from_json_schema(before), first)
    parts = {"allOf": [defs["b"]], "properties": {"a": {"type": "string"}}, "required": ["a"]}
    assert accepts(grammar_from_json_schema(parts), second)


MULTIPLE_CASES = [
    # an integer step on an open range: a digit automaton (the last digits for 2 and 5, a
    # residue for 3)
    ({"multipleOf": 2}, [0, 2, -4, 3, 1.5, 10, STRICTER, 4.0]),  # integers without fraction (a departure)
    ({"type": "integer", "multipleOf": 30, "minimum": -65}, [-60, -30, -90, 0, 30, 45, 600]),
    ({"type": "integer", "multipleOf": 3, "exclusiveMaximum": 7}, [6, 3, 0, -3, 9, 7]),
    # steps merge as their least common multiple
    ({"allOf": [{"multipleOf": 2}], "anyOf": [{"multipleOf": 3}], "oneOf": [{"multipleOf": 5}]}, [30, 60, 15, 10, 7]),
    ({"type": "array", "items": {"multipleOf": 2}, "contains": {"multipleOf": 3}}, [[2, 6], [2, 4], [], [6, 3]]),
    ({"allOf": [{"multipleOf": 0.01}, {"multipleOf": 0.1}], "type": "number"}, [0.1, 0.2, 0.25, 1, 1.0]),
    # an integer with a fractional step: the multiples of its numerator
    ({"type": "integer", "multipleOf": 1.5}, [0, 3, -6, 1, 4, 9]),
    # propertyNames from a known finite list: those keys only, in any order
    ({"propertyNames": {"enum": ["foo", "bar"]}}, [{"foo": 1}, {"bar": 1, "foo": 2}, {"baz": 1}, {}]),
    ({"propertyNames": {"const": "foo"}, "properties": {"bar": True}}, [{"foo": 1}, {"bar": 1}, {}]),
    ({"propertyNames": False}, [{}, {"a": 1}, [1]]),
    ({"propertyNames": {"type": "integer"}}, [{}, {"1": 1}]),
    (
        {"propertyNames": {"enum": ["ab", "b", "c"]}, "patternProperties": {"^a": {}}, "additionalProperties": False},
        [{"ab": 1}, {"b": 1}, {}],
    ),
]


@pytest.mark.parametrize(("schema", "instances"), MULTIPLE_CASES, ids=[json.dumps(c[0])[:70] for c in MULTIPLE_CASES])
def test_multiples_and_finite_property_names(schema, instances):
    check(schema, instances)


@settings(max_examples=30, deadline=None)
@given(
    k=st.sampled_from([2, 3, 4, 5, 6, 8, 12, 15, 20, 24, 25, 30, 40, 75, 125, 1000]),
    lo=st.none() | st.integers(-500, 500),
    xs=st.lists(st.integers(-(10**12), 10**12) | st.integers(-600, 600), max_size=12),
)
def test_integer_multiples_on_open_ranges_are_exact(k: int, lo: int | None, xs: list[int]):
    schema: dict = {"type": "integer", "multipleOf": k} | ({} if lo is None else {"minimum": lo})
    grammar = grammar_from_json_schema(schema)
    for x in [*xs, k, -k, 0, 3 * k + 1, -(lo or 0)]:
        assert accepts(grammar, str(x).encode()) == (x % k == 0 and (lo is None or x >= lo)), x


def test_multiples_that_need_a_large_automaton_raise():
    with pytest.raises(GrammarError, match="multipleOf"):
        grammar_from_json_schema({"type": "integer", "multipleOf": 7})
    with pytest.raises(GrammarError, match="multipleOf"):
        grammar_from_json_schema({"type": "integer", "multipleOf": 0.123456789})
    assert grammar_from_json_schema({"type": "integer", "multipleOf": 7}, lenient=True).warnings


def test_a_keyword_repeated_in_merged_parts_is_kept():
    """allOf parts with the same `pattern` (or any keyword with equal values) keep it once."""
    check({"allOf": [{"pattern": "^a"}], "pattern": "^a", "type": "string"}, ["a", "ab", "b", ""])
    check({"allOf": [{"not": {"type": "integer"}}, {"not": {"type": "integer"}}]}, [1, 1.5, "a"])
    check({"allOf": [{"contains": {"const": 1}}, {"contains": {"const": 1}}]}, [[1], [2], []])
    check({"type": ["array", "null"], "contains": {}, "maxItems": 0}, [[], None, [1]])
    check({"oneOf": [{"items": {"type": "number"}}, {"minItems": 1}]}, [[], [1], ["a"], 1, [1, "a"]])


_KEYS = ("a", "b", "c")
_VALUE_SCHEMAS = st.sampled_from([True, False, {"type": "integer"}, {"type": "string"}, {"const": 1}])
_OBJECT_LEAF = st.fixed_dictionaries(
    {},
    optional={
        "properties": st.dictionaries(st.sampled_from(_KEYS), _VALUE_SCHEMAS, min_size=1, max_size=2),
        "required": st.lists(st.sampled_from(_KEYS), min_size=1, max_size=1),
        "additionalProperties": st.sampled_from([False, {"type": "integer"}]),
        "unevaluatedProperties": st.sampled_from([False, True, {"type": "string"}]),
    },
)


def _applicators(inner: st.SearchStrategy) -> st.SearchStrategy:
    pair = st.lists(inner, min_size=1, max_size=3)
    return st.one_of(
        st.builds(lambda s, p: {**s, "allOf": p}, _OBJECT_LEAF, pair),
        st.builds(lambda s, p: {**s, "anyOf": p}, _OBJECT_LEAF, pair),
        st.builds(lambda s, p: {**s, "oneOf": p}, _OBJECT_LEAF, pair),
        st.builds(lambda s, n: {**s, "not": n}, _OBJECT_LEAF, inner),
        st.builds(lambda s, i, t: {**s, "if": i, "then": t}, _OBJECT_LEAF, inner, inner),
    )


_OBJECT_INSTANCES = st.lists(
    st.dictionaries(st.sampled_from((*_KEYS, "d")), st.sampled_from([1, "x", None]), max_size=3),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(schema=st.recursive(_OBJECT_LEAF, _applicators, max_leaves=5), instances=_OBJECT_INSTANCES)
def test_unevaluated_properties_never_accept_an_invalid_object(schema: dict, instances: list[dict]):
    """Random applicator trees with unevaluatedProperties: whatever compiles accepts no instance
    jsonschema rejects (valid ones may be refused: property order, anyOf read strictly)."""
    try:
        # Building the parser is part of compiling: an unsatisfiable schema is refused there.
        parser = parser_for(grammar_from_json_schema(schema))
    except GrammarError:
        return
    validator = _validator(schema)
    for instance in instances:
        if accepts(parser, json.dumps(instance).encode()):
            assert validator.is_valid(instance), json.dumps(instance)


CLOSED_OBJECT_CASES = [
    # not of a closed object: some key outside its properties (declared here, or additional)
    (
        {"type": "object", "not": {"properties": {"a": True}, "additionalProperties": False}},
        [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}],
    ),
    (
        {
            "type": "object",
            "properties": {"a": {}, "b": {}},
            "not": {"properties": {"a": True}, "additionalProperties": False},
        },
        [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"c": 1}],
    ),
    # oneOf of closed variants without a required property to tell them apart
    (
        {
            "oneOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
                {"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": False},
            ]
        },
        [{"a": 1}, {"b": "x"}, {}, {"a": 1, "b": "x"}, {"c": 1}, {"a": "x"}],
    ),
]


@pytest.mark.parametrize(
    ("schema", "instances"), CLOSED_OBJECT_CASES, ids=[str(i) for i in range(len(CLOSED_OBJECT_CASES))]
)
def test_negated_closed_objects(schema, instances):
    check(schema, instances)


def test_unevaluated_inside_a_negation_or_contains_sees_only_its_own_schema():
    """A folded `not not S` or a `contains` hit merges S in: S's unevaluated* is settled on S first."""
    check(
        {"not": {"not": {"properties": {"a": False}, "unevaluatedProperties": {"type": "string"}}}},
        [{"d": "x", "b": None}, {"d": "x"}, {}],
    )
    check(
        {
            "type": "array",
            "contains": {"properties": {"a": True}, "unevaluatedProperties": False},
            "items": {"properties": {"b": True}},
        },
        [[{"a": 1, "b": 1}], [{"a": 1}], [{"b": 1}, {"a": 2}]],
    )
