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

from grammask.automata.dfa import DEAD, START, ByteDFA

__all__ = ["concat_dfas"]


def concat_dfas(parts: Sequence[ByteDFA], max_states: int) -> ByteDFA | None:
    """The DFA of the strings made of one string of each part in order, or None when a boundary
    is ambiguous (some byte could both continue a left string and start the right one), a part
    accepts nothing, or the result would have more than `max_states` states. The parts must be
    trim, as `compile_regex` makes them."""
    if not parts or any(part.accepting_states.size == 0 for part in parts):
        return None
    # Room for every part's states; the joined automaton may use fewer (merged or dropped starts).
    table = np.zeros((sum(part.n_states for part in parts), 256), dtype=np.int32)
    accepting = np.zeros(len(table), dtype=bool)
    size = parts[0].n_states
    table[:size] = parts[0].transitions
    accepting[:size] = parts[0].accepting
    ends = parts[0].accepting_states  # where the parts joined so far may end
    for part in parts[1:]:
        first = part.first_bytes
        rows_at_ends = table[ends]
        if rows_at_ends[:, first].any():
            return None
        # The right part's states are renumbered by one shift: those from `kept` on follow the
        # states so far, and its start becomes the one end (when nothing goes on from it), a
        # state of its own (when the part comes back to its start), or is dropped.
        n = part.n_states
        shift = size - 2
        if len(ends) == 1 and not rows_at_ends.any():
            kept, start = 2, int(ends[0])
        elif part.start_reentered:
            kept, shift, start = 1, size - 1, size
        else:
            kept, start = 2, 0  # nothing leads to the start: its number is never read
        if size + n - kept > max_states:
            return None
        new_id = np.arange(shift, shift + n, dtype=np.int32)
        new_id[DEAD], new_id[START] = DEAD, start
        new_id.take(part.transitions[kept:], out=table[size : size + n - kept])
        accepting[size : size + n - kept] = part.accepting[kept:]
        targets = part.transitions[START, first]
        table[ends[:, None], first[None, :]] = new_id.take(targets)
        accepting[ends] = part.accepting[START]
        right_ends = part.accepting_states[part.accepting_states >= kept] + shift
        ends = np.concatenate((ends, right_ends)) if part.accepting[START] else right_ends
        size += n - kept
    # Views, not copies: the rows left unused (at most two per part) cost less than copying a
    # table too large for the allocator to reuse.
    return ByteDFA(table[:size], accepting[:size])
