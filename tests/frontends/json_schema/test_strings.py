"""`strings.subtract_words`: "these strings but not those words", by derivatives for finite sets and
as an `rx.Difference` for infinite ones; `strings.restrict_length`: a pattern within length bounds.
Both checked by `re` and through the compiled JSON literal."""

import json
import os
import re
import subprocess
import sys

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from grammask.automata import compile_regex
from grammask.errors import GrammarError
from grammask.frontends.json_schema import strings
from grammask.frontends.regex_syntax import parse_regex
from grammask.ir import regex as rx
from tests.frontends.test_regex_syntax import PY_SHORTHANDS, TEXT, patterns


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(PY_SHORTHANDS, dot=True), st.sets(TEXT, max_size=4), st.lists(TEXT, max_size=6))
def test_subtracted_words_are_gone_and_nothing_else(case, words, texts) -> None:
    pattern, example = case
    node = strings.subtract_words(parse_regex(pattern), words)
    try:
        literal = compile_regex(strings.string_literal(node))
    except GrammarError:  # a limit: finite languages of Unicode classes go by derivatives, which may grow
        assume(False)
    for text in [*texts, *words, *([example] if example is not None else [])]:
        expected = re.fullmatch(pattern, text) is not None and text not in words
        assert strings.matches(node, text) == expected, (pattern, words, text)
        for ensure_ascii in (True, False):
            assert literal.matches(json.dumps(text, ensure_ascii=ensure_ascii).encode()) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    patterns(PY_SHORTHANDS, dot=True),
    st.integers(0, 4),
    st.none() | st.integers(0, 6),
    st.lists(TEXT, max_size=6),
)
def test_lengths_within_a_pattern_are_exact(case, lo, hi, texts) -> None:
    pattern, example = case
    assume(hi is None or lo <= hi)
    try:
        node = strings.restrict_length(parse_regex(pattern), lo, hi, "")
        literal = compile_regex(strings.string_literal(node))
    except GrammarError:  # a limit (the pattern is too large to count through)
        assume(False)
    for text in [*texts, *([example] if example is not None else [])]:
        expected = re.fullmatch(pattern, text) is not None and lo <= len(text) and (hi is None or len(text) <= hi)
        assert strings.matches(node, text) == expected, (pattern, lo, hi, text)
        for ensure_ascii in (True, False):
            assert literal.matches(json.dumps(text, ensure_ascii=ensure_ascii).encode()) == expected


def test_infinite_strings_less_words_are_a_difference() -> None:
    keys = strings.subtract_words(rx.star(rx.ANY_CHAR), {"name", "née"})
    assert isinstance(keys, rx.Difference)
    assert strings.length_bounds(keys) == (0, None)
    literal = compile_regex(strings.string_literal(keys))
    for spelling in ['"name"', '"née"', '"n\\u00e9e"', '"n\\u00E9e"']:
        assert not literal.matches(spelling.encode()), spelling
    for spelling in ['"nam"', '"names"', '"n\\u00e9"', '""']:
        assert literal.matches(spelling.encode()), spelling


def test_finite_strings_less_all_of_them_is_nothing() -> None:
    assert strings.subtract_words(rx.words(["a", "b"]), {"a", "b"}) == rx.NOTHING


def test_the_same_names_make_the_same_keys_in_every_process():
    # Declared names come as a set, whose order depends on the process's hash seed; the grammar
    # (and so `Grammar.canonical`, and the automaton's states) must not.
    code = (
        "from grammask.frontends.json_schema import strings; from grammask.ir import regex as rx; "
        "print(repr(strings.subtract_words(rx.star(rx.ANY_CHAR), "
        "{'alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'})))"
    )
    made = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(4)
    }
    assert len(made) == 1
