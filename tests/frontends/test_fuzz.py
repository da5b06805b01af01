"""Hypothesis fuzzing of the front-ends: random JSON Schemas, regexes and GBNF grammars.

Every input must compile or raise `GrammarError` within its deadline (never another exception),
and what a compiled grammar accepts must be right by an independent oracle: `jsonschema` for
schemas, Python's `re.fullmatch` for regexes, and, for GBNF written from the same random regex,
`re.fullmatch` again. Accepted texts come both from random candidates and from random walks of
the grammar itself (bytes that keep the parser alive), so wrong acceptance is found where it lives.
The example counts are small by default; `GRAMMASK_FUZZ_EXAMPLES` raises them for a long run.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
from decimal import Decimal, InvalidOperation

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammask import Grammar, GrammarError, Limits
from grammask.engine.recognize import accepts, parser_for

EXAMPLES = int(os.environ.get("GRAMMASK_FUZZ_EXAMPLES", "40"))
TIMEOUT_S = 10.0
LIMITS = Limits(compile_timeout_s=TIMEOUT_S)
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
#: Bytes a random walk tries (what random schemas, regexes and grammars are written over).
WALK_BYTES = [ord(c) for c in ' "{}[],:-.0123456789eEabcnulltrfsx\\\n']


def random_walks(grammar: Grammar, seed: int, count: int = 3, steps: int = 60) -> list[bytes]:
    """Up to `count` complete texts of `grammar`, each built byte by byte among `WALK_BYTES`."""
    parser = parser_for(grammar)
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        config, text = parser.initial, b""
        for _ in range(steps):
            if config.accepting and rng.random() < 0.15:
                break
            options = [
                (b, nxt)
                for b in rng.sample(WALK_BYTES, len(WALK_BYTES))
                if (nxt := parser.step_bytes(config, bytes([b]))) is not None and not nxt.is_dead
            ]
            if not options:
                break
            byte, config = options[0]
            text += bytes([byte])
        if config.accepting:
            out.append(text)
    return out


def compile_within_deadline(make) -> Grammar | None:
    """The grammar `make()` builds, None for a `GrammarError` (from the front-end, or from
    normalisation, which refuses a grammar that accepts nothing); any other exception fails the test."""
    start = time.monotonic()
    try:
        grammar = make()
        parser_for(grammar)
    except GrammarError:
        grammar = None
    assert time.monotonic() - start < 3 * TIMEOUT_S
    return grammar


# -- JSON Schema -----------------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-20, 20),
    st.sampled_from(["", "a", "ab", "b1"]),
    st.sampled_from([0.5, -1.25, 2.0]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)),
    max_leaves=6,
)
_counts = st.integers(0, 3)


def _schemas() -> st.SearchStrategy[dict]:
    leaf = st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(
                [
                    "null",
                    "boolean",
                    "integer",
                    "number",
                    "string",
                    "array",
                    "object",
                    ["integer", "string"],
                    ["null", "object"],
                ]
            ),
            "enum": st.lists(_values, min_size=1, max_size=4),
            "const": _values,
            "minimum": st.integers(-5, 5),
            "maximum": st.integers(-5, 5),
            "exclusiveMinimum": st.sampled_from([-2, 0, 1.5]),
            "exclusiveMaximum": st.sampled_from([0, 3, 2.5]),
            "multipleOf": st.sampled_from([1, 2, 3, 0.5]),
            "minLength": _counts,
            "maxLength": _counts,
            "pattern": st.sampled_from(["^a", "b$", "^[ab]*$", "1"]),
            "format": st.sampled_from(["date", "ipv4", "uuid", "email"]),
            "required": st.lists(st.sampled_from("abc"), max_size=2, unique=True),
            "minProperties": _counts,
            "maxProperties": _counts,
            "minItems": _counts,
            "maxItems": _counts,
            "uniqueItems": st.booleans(),
            "unevaluatedProperties": st.booleans(),
            "unevaluatedItems": st.booleans(),
            "contains": st.sampled_from([{"type": "integer"}, {"const": "a"}]),
            "minContains": st.integers(0, 2),
            "maxContains": st.integers(0, 2),
        },
    )

    def extend(inner: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
        return st.one_of(
            st.builds(
                lambda base, props, extra: {**base, "properties": props, "additionalProperties": extra},
                leaf,
                st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
                st.one_of(st.booleans(), inner),
            ),
            st.builds(lambda base, items: {**base, "items": items}, leaf, inner),
            st.builds(lambda base, prefix: {**base, "prefixItems": prefix}, leaf, st.lists(inner, max_size=2)),
            st.builds(
                lambda kind, subs: {kind: subs},
                st.sampled_from(["anyOf", "oneOf", "allOf"]),
                st.lists(inner, min_size=1, max_size=3),
            ),
            st.builds(lambda base, sub: {**base, "not": sub}, leaf, inner),
        )

    return st.recursive(leaf, extend, max_leaves=5)


def _validator(schema: dict) -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@FUZZ
@given(schema=_schemas(), candidates=st.lists(_values, max_size=8), seed=st.integers(0, 2**16))
def test_json_schema_fuzz(schema, candidates, seed):
    grammar = compile_within_deadline(lambda: Grammar.from_json_schema(schema, limits=LIMITS))
    if grammar is None:
        return
    validator = _validator(schema)
    for value in candidates:
        if accepts(grammar, json.dumps(value).encode()):
            assert validator.is_valid(value), (schema, value)
    for text in random_walks(grammar, seed):
        value = json.loads(text)  # a grammar's text is always JSON
        if _judgeable(text):
            assert validator.is_valid(value), (schema, text)


def _judgeable(text: str) -> bool:
    """Whether every number of a JSON text reads as a Python float the oracle can judge: finite
    (1e999 reads as inf, and multipleOf overflows) and not a nonzero number that reads as 0.0
    (3E-1960834833001 is above an exclusiveMinimum of 0, but its float is not). An exponent past
    what a Decimal holds (3E624840893481075542843861825) is past any float too."""
    try:
        return _exact_enough(json.loads(text, parse_float=Decimal))
    except InvalidOperation:
        return False


def _exact_enough(value: object) -> bool:
    if isinstance(value, Decimal):
        as_float = float(value)
        return math.isfinite(as_float) and (as_float != 0 or value == 0)
    if isinstance(value, list):
        return all(_exact_enough(v) for v in value)
    if isinstance(value, dict):
        return all(_exact_enough(v) for v in value.values())
    return True


# -- regexes and GBNF from the same random tree ----------------------------------------------------


def _trees() -> st.SearchStrategy[tuple]:
    leaf = st.one_of(
        st.tuples(st.just("lit"), st.sampled_from("abc1")),
        st.tuples(st.just("class"), st.sampled_from(["ab", "a-c", "0-9", "^a"])),
        st.tuples(st.just("any")),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(st.just("seq"), st.lists(inner, min_size=2, max_size=3)),
            st.tuples(st.just("alt"), st.lists(inner, min_size=2, max_size=3)),
            st.tuples(st.just("rep"), inner, st.sampled_from([(0, None), (1, None), (0, 1), (2, 3), (1, 2)])),
        ),
        max_leaves=8,
    )


def _as_regex(tree: tuple) -> str:
    kind = tree[0]
    if kind == "lit":
        return re.escape(tree[1])
    if kind == "class":
        return f"[{tree[1]}]"
    if kind == "any":
        return "."
    if kind == "seq":
        return "".join(f"(?:{_as_regex(t)})" for t in tree[1])
    if kind == "alt":
        return "|".join(f"(?:{_as_regex(t)})" for t in tree[1])
    lo, hi = tree[2]
    quantifier = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((lo, hi), f"{{{lo},{hi}}}")
    return f"(?:{_as_regex(tree[1])}){quantifier}"


def _as_gbnf(tree: tuple) -> str:
    kind = tree[0]
    if kind == "lit":
        return json.dumps(tree[1])
    if kind == "class":
        return f"[{tree[1]}]"
    if kind == "any":
        return "[^\\n]"  # Python's `.` without DOTALL
    if kind == "seq":
        return " ".join(f"({_as_gbnf(t)})" for t in tree[1])
    if kind == "alt":
        return " | ".join(f"({_as_gbnf(t)})" for t in tree[1])
    lo, hi = tree[2]
    quantifier = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((lo, hi), f"{{{lo},{hi}}}")
    return f"({_as_gbnf(tree[1])}){quantifier}"


_texts = st.text(alphabet="abc1x\n", max_size=6)


@FUZZ
@given(tree=_trees(), texts=st.lists(_texts, max_size=10), seed=st.integers(0, 2**16))
def test_regex_fuzz(tree, texts, seed):
    pattern = _as_regex(tree)
    grammar = compile_within_deadline(lambda: Grammar.from_regex(pattern))
    assert grammar is not None, pattern
    for text in texts:
        assert accepts(grammar, text.encode()) == (re.fullmatch(pattern, text) is not None), (pattern, text)
    for sample in random_walks(grammar, seed):
        assert re.fullmatch(pattern, sample.decode()), (pattern, sample)


@FUZZ
@given(tree=_trees(), texts=st.lists(_texts, max_size=10), seed=st.integers(0, 2**16))
def test_gbnf_fuzz(tree, texts, seed):
    pattern, text_grammar = _as_regex(tree), f"root ::= {_as_gbnf(tree)}\n"
    grammar = compile_within_deadline(lambda: Grammar.from_ebnf(text_grammar))
    assert grammar is not None, text_grammar
    for text in texts:
        assert accepts(grammar, text.encode()) == (re.fullmatch(pattern, text) is not None), (text_grammar, text)
    for sample in random_walks(grammar, seed):
        assert re.fullmatch(pattern, sample.decode()), (text_grammar, sample)


@FUZZ
@given(text=st.text(alphabet='root::=|()[]^-*+?{}0123" \n abc.', max_size=40))
def test_gbnf_text_fuzz(text):
    """Arbitrary text in GBNF's alphabet: a grammar or a `GrammarError`, never another exception."""
    compile_within_deadline(lambda: Grammar.from_ebnf(text))


def test_the_oracle_judges_only_numbers_that_read_as_their_float():
    """Numbers whose float is not theirs in kind (inf, or 0.0 for a nonzero) are left out of the
    jsonschema checks above; every other number is judged."""
    assert not _judgeable("3E-1960834833001") and not _judgeable('{"a": [1e999]}')
    assert _judgeable('[0.1, 0, -0.0, 0E-5, 1e308, {"b": 2}]')
