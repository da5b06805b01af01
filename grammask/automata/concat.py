"""`concat_dfas`: the DFA of a concatenation, by joining the parts' tables where no byte is ambiguous.

Most lexemes of a JSON grammar are chains of pieces that cannot run into each other: whitespace
then `,`, a `"` then a key's characters, string content then its closing `"`. When at every end
of the left part the bytes that continue it and the bytes that start the right part are disjoint,
the concatenation needs no subset construction: each end takes the right part's first row as well,
and stays accepting only when the right part accepts the empty string. Joining compiled parts
(each cached by `compile_regex`, so shared pieces are compiled once per process) costs a few table
copies instead of determinising and minimising the whole lexeme again.

The result is deterministic, trim (every state but the dead one can still accept, and is reachable)
and exact. It is not always minimal (a part that loops back to its own start keeps that start as
a state of its own), which costs lexer states, never correctness.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grammask.automata.dfa import START, ByteDFA

__all__ = ["concat_dfas"]


def concat_dfas(parts: Sequence[ByteDFA], max_states: int) -> ByteDFA | None:
    """The DFA of the strings made of one string of each part in order, or None when a boundary
    is ambiguous (some byte could both continue a left string and start the right one), a part
    accepts nothing, or the result would have more than `max_states` states. The parts must be
    trim, as `compile_regex` makes them."""
    if not parts or not all(part.accepting.any() for part in parts):
        return None
    # Room for every part's states; the joined automaton may use fewer (merged or dropped starts).
    table = np.zeros((sum(part.n_states for part in parts), 256), dtype=np.int32)
    accepting = np.zeros(len(table), dtype=bool)
    size = parts[0].n_states
    table[:size] = parts[0].transitions
    accepting[:size] = parts[0].accepting
    ends = np.flatnonzero(accepting[:size])  # where the parts joined so far may end
    for part in parts[1:]:
        first_row = part.transitions[START]
        first = np.flatnonzero(first_row)
        rows_at_ends = table[ends]
        if rows_at_ends[:, first].any():
            return None
        n = part.n_states
        new_id = np.zeros(n, dtype=np.int32)
        if len(ends) == 1 and not rows_at_ends.any():
            # One end with nothing after it: it *is* the right part's start.
            new_id[START] = ends[0]
            kept = 2
        elif (part.transitions[1:] == START).any():
            # The right part comes back to its start: keep that start as a state of its own.
            kept = 1
        else:
            kept = 2
        new_id[kept:] = np.arange(size, size + n - kept, dtype=np.int32)
        if size + n - kept > max_states:
            return None
        table[size : size + n - kept] = new_id[part.transitions[kept:]]
        accepting[size : size + n - kept] = part.accepting[kept:]
        size += n - kept
        table[ends[:, None], first[None, :]] = new_id[first_row[first]]
        accepting[ends] = part.accepting[START]
        right_ends = new_id[kept:][part.accepting[kept:]]
        ends = np.union1d(ends, right_ends) if part.accepting[START] else right_ends
    return ByteDFA(table[:size].copy(), accepting[:size].copy())
