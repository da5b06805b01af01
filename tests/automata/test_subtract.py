"""`subtract_dfas` and `subtract_words`: the products agree with `re` on `left − right`, and are trim."""

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammask.automata import compile_regex
from grammask.automata.subtract import subtract_dfas, subtract_words
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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(PY_SHORTHANDS, dot=True), st.lists(TEXT, max_size=6), st.lists(TEXT, max_size=8))
def test_words_product_matches_left_and_not_the_words(left, words, texts) -> None:
    pattern, example = left
    dfa = subtract_words(compile_regex(parse_regex(pattern)), [w.encode() for w in words], 10_000)
    assert dfa is not None
    probes = texts + words + [w[:i] for w in words for i in range(len(w))] + [w + "a" for w in words]
    for text in probes + ([example] if example is not None else []):
        assert dfa.matches(text.encode()) == (_in(pattern, text) and text not in words), (pattern, words, text)
    assert dfa.n_states == 2 or (dfa.live[1:].all() and reachable_count(dfa) == dfa.n_states)


def test_words_product_of_extra_keys() -> None:
    # The keys an object may add, when its names are subtracted as they are written.
    body = compile_regex(encode(rx.star(rx.ANY_CHAR)))
    dfa = subtract_words(body, [b"name", rb"n\u00e9e", "née".encode(), b"a", b""], 10_000)
    assert dfa is not None
    for text in [r"nam", r"names", r"n\u00e9", r"n\u00E9e", r"b", r"\"", r"aa", "né"]:
        assert dfa.matches(text.encode()), text
    for text in [r"name", r"n\u00e9e", "née", r"a", r""]:
        assert not dfa.matches(text.encode()), text
    assert subtract_words(body, [b"name"], 10) is None  # over the state limit


def test_words_product_of_nothing_left() -> None:
    dfa = subtract_words(compile_regex(parse_regex("a|b")), [b"a", b"b"], 100)
    assert dfa is not None and dfa.is_empty and dfa.n_states == 2
