"""`concat_dfas`: joined tables agree with `re` on the concatenation, and stay trim."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from grammask.automata import compile_regex
from grammask.automata.concat import _join_numpy, concat_dfas
from grammask.automata.dfa import ByteDFA
from grammask.frontends.regex_syntax import parse_regex
from tests.automata.test_compile_regex import reachable_count
from tests.frontends.test_regex_syntax import PY_SHORTHANDS, TEXT, patterns

PIECES = st.sampled_from(
    ['"', ",", ":", "[ \t\n]{0,3}", "[a-z]+", "x*", "(ab)*", "[0-9]{1,2}", "é?", '(?:\\\\.|[^\\\\"])*']
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(PIECES.map(lambda p: (p, None)), patterns(PY_SHORTHANDS, dot=True)), min_size=2, max_size=4),
    st.lists(TEXT, max_size=8),
    st.data(),
)
def test_joined_dfa_matches_the_concatenation(cases: list[tuple[str, str | None]], texts: list[str], data) -> None:
    pieces = [p for p, _ in cases]
    parts = [compile_regex(parse_regex(p)) for p in pieces]
    joined = concat_dfas(parts, 10_000)
    assert_same_join(joined, _join_numpy(parts, 10_000))
    assume(joined is not None)
    pattern = "".join(f"(?:{p})" for p in pieces)
    examples = [e for _, e in cases if e is not None]
    texts += ["".join(data.draw(st.permutations(examples))) for _ in range(2)] if examples else []
    texts += ["".join(data.draw(st.lists(st.sampled_from(texts or [""]), max_size=3)))]
    for text in texts:
        assert joined.matches(text.encode()) == (re.fullmatch(pattern, text) is not None), (pattern, text)
    assert joined.live[1:].all() and reachable_count(joined) == joined.n_states


def assert_same_join(joined: ByteDFA | None, by_numpy: ByteDFA | None) -> None:
    """The compiled join (with numba) and the numpy one give the same table, state for state."""
    if joined is None or by_numpy is None:
        assert joined is by_numpy
    else:
        assert np.array_equal(joined.transitions, by_numpy.transitions)
        assert np.array_equal(joined.accepting, by_numpy.accepting)


def test_ambiguous_boundaries_are_refused() -> None:
    parts = [compile_regex(parse_regex(p)) for p in ("a+", "ab")]
    assert concat_dfas(parts, 100) is None
    parts = [compile_regex(parse_regex(p)) for p in ("a", "b*", "b")]
    assert concat_dfas(parts, 100) is None  # after "a", a "b" could go on with b* or be the last


def test_a_json_member_joins_without_determinising() -> None:
    parts = [compile_regex(parse_regex(p)) for p in ("[ \t\n\r]{0,20}", ",", "[ \t\n\r]{0,20}", '"name"', ":")]
    joined = concat_dfas(parts, 1000)
    assert joined is not None and joined.n_states == 1 + 21 + 21 + 6 + 1
    assert joined.matches(b'  ,\n"name":') and not joined.matches(b',"name" :')


def test_state_limit() -> None:
    parts = [compile_regex(parse_regex(p)) for p in ("a{50}", "b{50}")]
    assert concat_dfas(parts, 80) is None
    assert concat_dfas(parts, 102) is not None


@pytest.mark.parametrize(
    "pieces",
    [("(ab)*", "c"), ("a", "(ba)*", "[0-9]{2}"), ("x*", "y"), ('"', "[a-z]{0,3}", '"', "[ ]{0,2}", ":"), ("é?", "z")],
)
def test_compiled_join_equals_numpy_join(pieces: tuple[str, ...]) -> None:
    """Starts that are re-entered, merged into the one end, or dropped: both joins agree."""
    parts = [compile_regex(parse_regex(p)) for p in pieces]
    assert_same_join(concat_dfas(parts, 1000), _join_numpy(parts, 1000))
