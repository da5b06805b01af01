"""`subtract_dfas`: the product of two byte DFAs agrees with `re` on `left − right`, and is trim."""

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammask.automata import compile_regex
from grammask.automata.subtract import subtract_dfas
from grammask.frontends.json_schema.strings import encode
from grammask.frontends.regex_syntax import parse_regex
from grammask.ir import regex as rx
from tests.automata.test_compile_regex import reachable_count
from tests.frontends.test_regex_syntax import PY_SHORTHANDS, TEXT, patterns


def _in(pattern: str, text: str) -> bool:
    return re.fullmatch(pattern, text) is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(PY_SHORTHANDS, dot=True), patterns(PY_SHORTHANDS, dot=True), st.lists(TEXT, max_size=8))
def test_product_matches_left_and_not_right(left, right, texts) -> None:
    (lp, le), (rp, re_) = left, right
    dfa = subtract_dfas(compile_regex(parse_regex(lp)), compile_regex(parse_regex(rp)), 10_000)
    assert dfa is not None
    for text in texts + [e for e in (le, re_) if e is not None]:
        assert dfa.matches(text.encode()) == (_in(lp, text) and not _in(rp, text)), (lp, rp, text)
    assert dfa.n_states == 2 or (dfa.live[1:].all() and reachable_count(dfa) == dfa.n_states)


def test_extra_keys_of_an_object() -> None:
    # The keys an object may add: any JSON string body but the declared names, in every spelling.
    body = encode(rx.star(rx.ANY_CHAR))
    declared = encode(rx.words(["name", "née", "a"]))
    dfa = subtract_dfas(compile_regex(body), compile_regex(declared), 10_000)
    assert dfa is not None
    for text in [r"nam", r"names", r"n\u00e9e!", r"b", r"\"", ""]:
        assert dfa.matches(text.encode()), text
    for text in [r"name", r"n\u00e9e", r"n\u00E9e", "née", r"\u0061", r"\u006eame"]:
        assert not dfa.matches(text.encode()), text


def test_nothing_left() -> None:
    dfa = subtract_dfas(compile_regex(parse_regex("a|b")), compile_regex(parse_regex("[ab]")), 100)
    assert dfa is not None and dfa.is_empty and dfa.n_states == 2


def test_state_limit() -> None:
    left, right = compile_regex(parse_regex("[a-z]{30}")), compile_regex(parse_regex("a{30}"))
    assert subtract_dfas(left, right, 40) is None
    assert subtract_dfas(left, right, 100) is not None
