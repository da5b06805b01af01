"""`ByteDFA`: the dead/start conventions, matching, liveness."""

import numpy as np
import pytest

from grammask.automata import DEAD, START, ByteDFA, compile_regex
from grammask.automata.concat import concat_dfas
from grammask.frontends.regex_syntax import parse_regex
from grammask.limits import Limits


def chain(text: bytes, extra_dead_end: bool = False) -> ByteDFA:
    """A DFA for exactly `text` (states 1..len+1), optionally with a trap state off the start."""
    n = len(text) + 2 + extra_dead_end
    table = np.zeros((n, 256), dtype=np.int32)
    for i, byte in enumerate(text):
        table[START + i, byte] = START + i + 1
    if extra_dead_end:
        table[START, ord("!")] = n - 1
        table[n - 1, :] = n - 1  # a loop that never accepts
    accepting = np.zeros(n, dtype=bool)
    accepting[START + len(text)] = True
    return ByteDFA(table, accepting)


def test_matches_whole_input_only() -> None:
    dfa = chain(b"ok")
    assert dfa.matches(b"ok")
    assert not dfa.matches(b"o")
    assert not dfa.matches(b"oki")
    assert not dfa.matches(b"")
    assert dfa.n_states == 4


def test_live_excludes_dead_and_traps() -> None:
    dfa = chain(b"ab", extra_dead_end=True)
    assert dfa.live.tolist() == [False, True, True, True, False]
    assert not dfa.is_empty
    assert not dfa.live.flags.writeable


def test_empty_dfa() -> None:
    dfa = ByteDFA(np.zeros((2, 256), dtype=np.int32), np.zeros(2, dtype=bool))
    assert dfa.is_empty
    assert not dfa.matches(b"")


def test_tables_are_read_only() -> None:
    dfa = chain(b"a")
    with pytest.raises(ValueError):
        dfa.transitions[START, 0] = 2


@pytest.mark.parametrize(
    ("table", "accepting"),
    [
        (np.zeros((3, 255), dtype=np.int32), np.zeros(3, dtype=bool)),
        (np.zeros((1, 256), dtype=np.int32), np.zeros(1, dtype=bool)),
        (np.ones((2, 256), dtype=np.int32), np.zeros(2, dtype=bool)),
        (np.zeros((2, 256), dtype=np.int32), np.array([True, False])),
        (np.full((2, 256), 2, dtype=np.int32) * np.array([[0], [1]], dtype=np.int32), np.zeros(2, dtype=bool)),
        (np.full((2, 256), -1, dtype=np.int64) * np.array([[0], [1]]), np.zeros(2, dtype=bool)),
    ],
)
def test_bad_tables_are_rejected(table: np.ndarray, accepting: np.ndarray) -> None:
    with pytest.raises(ValueError):
        ByteDFA(table, accepting)


def test_dead_constant_is_zero() -> None:
    assert (DEAD, START) == (0, 1)


def test_tables_are_16_bit_where_the_states_fit() -> None:
    """Every table a kernel reads has one type for its size: a table of another type is converted."""
    assert chain(b"ok").transitions.dtype == np.uint16  # made as int32
    assert compile_regex(parse_regex("[a-z]{3}(-[0-9]+)?")).transitions.dtype == np.uint16


def test_a_dfa_of_more_states_than_16_bits_number() -> None:
    """Past 65,536 states tables are 32-bit, and joins that reach that size switch on the way."""
    limits = Limits(max_dfa_states=70_000)
    wide = compile_regex(parse_regex("[a-z]{66000}"), limits=limits)
    assert wide.transitions.dtype == np.int32 and wide.n_states > 1 << 16
    narrow = compile_regex(parse_regex("[0-9]{40000}"), limits=limits)
    joined = concat_dfas([narrow, narrow], 90_000)
    assert narrow.transitions.dtype == np.uint16
    assert joined is not None and joined.transitions.dtype == np.int32 and joined.n_states > 1 << 16
    assert joined.matches(b"1" * 80000) and not joined.matches(b"1" * 79999)
    assert wide.matches(b"q" * 66000) and not wide.matches(b"q" * 65999)
