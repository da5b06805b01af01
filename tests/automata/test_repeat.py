"""`chain_dfa`, `optional_dfa`, `plus_dfa`: repeats from the item's table agree with `re`."""

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammask.automata import compile_regex
from grammask.automata.repeat import chain_dfa, optional_dfa, plus_dfa
from grammask.frontends.regex_syntax import parse_regex
from tests.automata.test_compile_regex import minimal_state_count, reachable_count
from tests.frontends.test_regex_syntax import PY_SHORTHANDS, TEXT, patterns

ITEMS = st.sampled_from(["a", "ab", "(ab)*c", "a|bc", "x[0-9]*", "é+", "(a|ab)", "[a-c]{1,2}", "\\s*,"]) | patterns(
    PY_SHORTHANDS, dot=True
).map(lambda case: case[0])


def assert_matches(dfa, pattern: str, texts: list[str]) -> None:
    for text in texts:
        assert dfa.matches(text.encode()) == (re.fullmatch(pattern, text) is not None), (pattern, text)
    if not dfa.accepting.any():  # the empty language (`[^\S\t-a]`, say): a start that leads nowhere
        assert dfa.n_states == 2 and not dfa.transitions.any()
        return
    assert dfa.live[1:].all() and reachable_count(dfa) == dfa.n_states


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ITEMS, st.lists(TEXT, max_size=6), st.data())
def test_optional_and_plus_match_re(pattern: str, texts: list[str], data) -> None:
    item = compile_regex(parse_regex(pattern))
    examples = texts + ["".join(data.draw(st.lists(st.sampled_from(texts or ["a"]), max_size=3))) for _ in range(3)]
    optional = optional_dfa(item, 10_000)
    assert optional is not None
    assert_matches(optional, f"(?:{pattern})?", examples)
    plus = plus_dfa(item, 10_000)
    if plus is not None:
        assert_matches(plus, f"(?:{pattern})+", examples)


def test_plus_is_refused_where_an_end_goes_on_with_a_first_byte() -> None:
    assert plus_dfa(compile_regex(parse_regex("a*")), 100) is None  # the start accepts
    assert plus_dfa(compile_regex(parse_regex("aa?")), 100) is None  # after "a": the same word, or the next?
    assert plus_dfa(compile_regex(parse_regex("ab?")), 100) is not None


def test_optional_of_an_item_that_comes_back_to_its_start() -> None:
    dfa = optional_dfa(compile_regex(parse_regex("(ab)*c")), 100)
    assert dfa is not None and dfa.n_states == minimal_state_count(dfa)
    assert_matches(dfa, "(?:(?:ab)*c)?", ["", "c", "abc", "ababc", "ab", "abcc"])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(['(?:[^"\\\\]|\\\\["\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})', "[0-9]", "x[0-9]{2}"]), st.integers(0, 4))
def test_an_unbounded_chain_is_minimal(pattern: str, lo: int) -> None:
    item = compile_regex(parse_regex(pattern))
    dfa = chain_dfa(item, lo, None, 10_000)
    assert dfa is not None and dfa.n_states == minimal_state_count(dfa)
    assert_matches(dfa, f"(?:{pattern}){{{lo},}}", ["", "1", "x12", "a" * lo, "a" * (lo + 3), "\\u00e9" * lo])


def test_repeats_of_the_empty_language() -> None:
    """A class that excludes every character (found by hypothesis): its plus is empty too, its
    optional matches the empty string alone."""
    item = compile_regex(parse_regex("[^\\S\\t-aa-日]"))
    plus, optional = plus_dfa(item, 100), optional_dfa(item, 100)
    assert plus is not None and optional is not None
    assert_matches(plus, "(?:[^\\S\\t-aa-日])+", ["", " ", "a", "\u3000"])
    assert_matches(optional, "(?:[^\\S\\t-aa-日])?", ["", " ", "a", "\u3000"])
