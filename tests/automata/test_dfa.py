"""`ByteDFA`: the dead/start conventions, matching, liveness."""

import numpy as np
import pytest

from grammask.automata import DEAD, START, ByteDFA


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
    ],
)
def test_bad_tables_are_rejected(table: np.ndarray, accepting: np.ndarray) -> None:
    with pytest.raises(ValueError):
        ByteDFA(table, accepting)


def test_dead_constant_is_zero() -> None:
    assert (DEAD, START) == (0, 1)
