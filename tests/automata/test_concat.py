"""`concat_dfas`: joined tables agree with `re` on the concatenation, and stay trim."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from grammask.automata import compile_regex
from grammask.automata.concat import _join_numpy, concat_dfas
from grammask.automata.dfa import ByteDFA, Joined
from grammask.errors import GrammarError
from grammask.frontends.regex_syntax import parse_regex
from grammask.ir import regex as rx
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
    joined = concat_dfas(parts, 10_000, _names(parts))
    assert_same_join(joined, parts, 10_000)
    assume(joined is not None)
    pattern = "".join(f"(?:{p})" for p in pieces)
    examples = [e for _, e in cases if e is not None]
    texts += ["".join(data.draw(st.permutations(examples))) for _ in range(2)] if examples else []
    texts += ["".join(data.draw(st.lists(st.sampled_from(texts or [""]), max_size=3)))]
    for text in texts:
        assert joined.matches(text.encode()) == (re.fullmatch(pattern, text) is not None), (pattern, text)
    assert joined.live[1:].all() and reachable_count(joined) == joined.n_states


def _names(parts: list[ByteDFA]) -> list[object]:
    """Names for what follows each part, distinct (none after the last)."""
    return [("after", i) for i in range(len(parts) - 1)] + [None]


def assert_same_join(joined: ByteDFA | None, parts: list[ByteDFA], max_states: int) -> None:
    """The compiled join (with numba) and the numpy one give the same table, state for state, and
    lay the parts' states out alike."""
    layout = np.zeros((2, len(parts)), dtype=np.int64)
    by_numpy = _join_numpy(parts, max_states, layout)
    if joined is None or by_numpy is None:
        assert joined is None and by_numpy is None
    else:
        assert np.array_equal(joined.transitions, by_numpy[0])
        assert np.array_equal(joined.accepting, by_numpy[1])
        if isinstance(joined.origin, Joined):
            assert joined.origin.rows == tuple(layout[0].tolist())
            assert joined.origin.kept == tuple(layout[1].tolist())


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
    assert_same_join(concat_dfas(parts, 1000, _names(parts)), parts, 1000)


def _same_residual(a: ByteDFA, p: int, b: ByteDFA, q: int) -> bool:
    """Whether the strings that can follow state p of a and state q of b are the same (a search
    over pairs of states, for one where exactly one side accepts)."""
    seen, waiting = {(p, q)}, [(p, q)]
    while waiting:
        p, q = waiting.pop()
        if a.accepting[p] != b.accepting[q]:
            return False
        for pair in set(zip(a.transitions[p].tolist(), b.transitions[q].tolist(), strict=True)):
            if pair not in seen:
                seen.add(pair)
                waiting.append(pair)
    return True


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, min_size=1, max_size=3), PIECES, PIECES, st.sampled_from(["abc", "xbc", "bc", "c"]))
def test_states_named_alike_have_the_same_residual(tail, first, other, word) -> None:
    """`ByteDFA.residual` across two lexemes that share their ends: where two states have the
    same name, the same strings follow them (each DFA built by `compile_regex`, joined or not)."""
    lexemes = [rx.concat(parse_regex(first), rx.literal(word), *map(parse_regex, tail))]
    lexemes.append(rx.concat(parse_regex(other), rx.literal("x" + word[1:]), *map(parse_regex, tail)))
    lexemes.append(rx.concat(*map(parse_regex, tail)))
    assert_names_alike_follow_alike(lexemes)


def assert_names_alike_follow_alike(lexemes: list[rx.RegexNode]) -> None:
    """Compile each lexeme (those over a limit are skipped) and check that wherever two states
    have the same `ByteDFA.residual` name, the same strings follow them."""
    named: dict[object, tuple[ByteDFA, int]] = {}
    for node in lexemes:
        try:
            dfa = compile_regex(node)
        except GrammarError:
            continue
        for state in range(dfa.n_states):
            a, p = named.setdefault(dfa.residual(state), (dfa, state))
            assert _same_residual(a, p, dfa, state), (node, state)


def test_members_share_the_residuals_of_their_values_and_ends_of_names() -> None:
    ws = parse_regex("[ \t\n]{0,3}")
    value = parse_regex('"(?:\\\\.|[^\\\\"])*"')
    first, last = (
        compile_regex(rx.concat(rx.literal(f'"{n}"'), ws, rx.literal(":"), ws, value))
        for n in ("first_name", "last_name")
    )
    shared = {first.residual(s) for s in range(first.n_states)} & {last.residual(s) for s in range(last.n_states)}
    # "name\"", then what follows a name: 5 + 1 + 4 + 1 + 4 + the value's states
    assert len(shared) >= 15
    assert first.residual(2) not in shared  # (after `"f`: "irst_name" is left)
