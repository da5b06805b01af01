"""Repeats built from the item's DFA: `chain_dfa`, `optional_dfa` and `plus_dfa`.

JSON grammars repeat a few shapes over and over: a string character up to `maxLength` times (or
any number of times), an optional member, `, ws value` for each further item of an array. Each is
built here from the item's own table, without determinising the repeat again:

- a *closed* item (one accepting state with no way on, a start that accepts nothing and is never
  re-entered: one string character) repeated is a chain of copies of its table, the minimal DFA;
- `X?` is `X` with an accepting start (a copy of it, where something leads back to it);
- `X+` joins `X` to itself at its ends, where no byte both goes on from an end and starts `X`.

All three are exact, deterministic and trim; the last two are not always minimal (`X?` may keep
two equal starts), which costs lexer states, never correctness.
"""

from __future__ import annotations

import numpy as np

from grammask.automata.dfa import DEAD, START, ByteDFA, state_type

__all__ = ["chain_dfa", "optional_dfa", "plus_dfa"]


def chain_dfa(item: ByteDFA, lo: int, hi: int | None, max_states: int) -> ByteDFA | None:
    """`item` repeated `lo` to `hi` times (None: no end), where the item is *closed*: one
    accepting state with no way on, a start that accepts nothing and is never re-entered (one JSON
    string character, say). Then where one copy ends is exactly where the next begins, and `hi`
    copies of the item's table in a row are the minimal DFA, built with a few array operations
    where the character pipeline takes 40 to 200 ms for a string under a `maxLength` of 64. With
    no end: `lo` copies, the last copy's end reading another copy as that copy's start does (for
    `lo` 0, one copy that ends at its own start). None where the item is not closed or the chain
    would have more than `max_states` states."""
    ends = item.accepting_states
    if item.accepting[START] or len(ends) != 1 or item.transitions[ends[0]].any() or item.start_reentered:
        return None
    end = int(ends[0])
    others = [s for s in range(START + 1, item.n_states) if s != end]
    width = 1 + len(others)  # states per copy: its start (the previous copy's end) and the rest
    copies = max(lo, 1) if hi is None else hi
    n = 2 + copies * width  # the dead state, the copies, the last copy's end
    if n > max_states:
        return None
    # Where each of the item's states lands in copy 0; copy i adds i * width to every live target.
    kind = state_type(n)
    place = np.zeros(item.n_states, dtype=kind)
    place[START], place[end] = START, START + width
    place[others] = np.arange(START + 1, START + width, dtype=kind)
    rows = item.transitions[[START, *others]]
    table = np.zeros((n, 256), dtype=kind)
    laid = table[START : n - 1].reshape(copies, width, 256)  # written in place: no temporaries
    np.multiply(np.arange(0, copies * width, width, dtype=kind)[:, None, None], rows != 0, out=laid)
    laid += place[rows]
    accepting = np.zeros(n, dtype=bool)
    if hi is None and lo == 0:  # one copy whose end is its start: drop the end's row
        last = laid[-1]
        last[last == n - 1] = START
        accepting[START] = True
        return ByteDFA(table[: n - 1], accepting[: n - 1])
    if hi is None:  # the last copy's end reads another copy as the last copy's start does
        table[n - 1] = table[n - 1 - width]
        accepting[n - 1] = True
        return ByteDFA(table, accepting)
    accepting[START + width * np.arange(lo, hi + 1)] = True  # where copies lo..hi end
    return ByteDFA(table, accepting)


def optional_dfa(item: ByteDFA, max_states: int) -> ByteDFA | None:
    """The DFA of `item` or the empty string, or None where it would have more than `max_states`
    states. Where nothing leads back to the start, that start just accepts; otherwise the new
    start is a copy of it that accepts, and the old one stays for the ways back."""
    if item.accepting[START] or not item.start_reentered:
        accepting = item.accepting.copy()
        accepting[START] = True
        return ByteDFA(item.transitions, accepting)
    if item.n_states + 1 > max_states:
        return None
    kind = state_type(item.n_states + 1)
    moved = np.arange(1, item.n_states + 1, dtype=kind)  # state s becomes s + 1
    moved[DEAD] = DEAD
    table = np.zeros((item.n_states + 1, 256), dtype=kind)
    moved.take(item.transitions[START:], out=table[START + 1 :])
    table[START] = table[START + 1]
    accepting = np.concatenate(([False, True], item.accepting[START:]))
    return ByteDFA(table, accepting)


def plus_dfa(item: ByteDFA, max_states: int) -> ByteDFA | None:
    """The DFA of one or more strings of `item` in a row, or None where an accepting state goes on
    with a byte that also starts a string (the start accepts, say) or there would be more than
    `max_states` states. Each accepting state takes the start's row as well, as `concat_dfas`
    joins a part to the next."""
    ends, first = item.accepting_states, item.first_bytes
    if item.n_states > max_states or item.transitions[np.ix_(ends, first)].any():
        return None
    table = item.transitions.copy()
    table[np.ix_(ends, first)] = item.transitions[START, first]
    return ByteDFA(table, item.accepting.copy())
