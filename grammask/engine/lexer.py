"""Lexers: one deterministic byte automaton for a set of lexemes that may start at the same place.

Where the parser expects several terminals at once (a JSON value: `{`, `[`, a string, a number, ...),
running their DFAs in lockstep as one product DFA means the token trie is walked once per lexer
state rather than once per terminal. A lexer state knows which terminals it has matched in full.

State 0 is dead and state 1 is the start, as for `ByteDFA`. Acceptance of the start state is never
consulted: lexemes are non-empty in the parser (see `grammask.ir.normalise`).
"""

from __future__ import annotations

import numpy as np

from grammask.automata.dfa import ByteDFA
from grammask.errors import GrammarError
from grammask.limits import Limits

__all__ = ["Lexer"]


class Lexer:
    """The product DFA of `dfas`, whose terminal ids are `terminals` (same order)."""

    __slots__ = ("terminals", "transitions", "accepting", "accepts", "_rows", "_next_bytes")

    def __init__(self, terminals: tuple[int, ...], dfas: list[ByteDFA], limits: Limits) -> None:
        self.terminals = terminals
        if len(dfas) == 1:
            dfa = dfas[0]
            self.transitions = np.ascontiguousarray(dfa.transitions, dtype=np.int32)
            self.accepting = np.asarray(dfa.accepting, dtype=bool)
            self.accepts = [terminals if a else () for a in self.accepting.tolist()]
        else:
            self._build_product(dfas, limits)
        self._rows: list[list[int]] | None = None
        self._next_bytes: dict[int, np.ndarray] = {}

    def _build_product(self, dfas: list[ByteDFA], limits: Limits) -> None:
        # A product state is a tuple of (component index, component state) for the live components.
        ids: dict[tuple[tuple[int, int], ...], int] = {(): 0}
        start = tuple((i, 1) for i in range(len(dfas)))
        ids[start] = 1
        order = [(), start]
        rows: list[np.ndarray] = [np.zeros(256, dtype=np.int32)]
        index = 1
        while index < len(order):  # `order` grows as new product states are found
            state = order[index]
            index += 1
            if len(order) > limits.max_dfa_states:
                raise GrammarError(
                    f"lexer too large: more than {limits.max_dfa_states} states for {len(dfas)} "
                    "lexemes that may start at one place (Limits.max_dfa_states)"
                )
            comps = np.array([c for c, _ in state], dtype=np.int64)
            nxt = np.stack([dfas[c].transitions[s] for c, s in state])  # [k, 256]
            columns, inverse = np.unique(nxt.T, axis=0, return_inverse=True)
            targets = np.empty(len(columns), dtype=np.int32)
            for j, column in enumerate(columns):
                live = column != 0
                key = tuple(zip(comps[live].tolist(), column[live].tolist()))
                if key not in ids:
                    ids[key] = len(order)
                    order.append(key)
                targets[j] = ids[key]
            rows.append(targets[inverse.reshape(-1)])
        self.transitions = np.stack(rows).astype(np.int32)
        accepts = [
            tuple(self.terminals[c] for c, s in state if dfas[c].accepting[s]) for state in order
        ]
        self.accepts = accepts
        self.accepting = np.array([bool(a) for a in accepts], dtype=bool)

    @property
    def n_states(self) -> int:
        return len(self.transitions)

    def rows(self) -> list[list[int]]:
        """The transition table as Python lists, for byte-at-a-time stepping."""
        if self._rows is None:
            self._rows = self.transitions.tolist()
        return self._rows

    def next_bytes(self, state: int) -> np.ndarray:
        """The bytes that keep the lexer alive from `state`."""
        found = self._next_bytes.get(state)
        if found is None:
            found = np.flatnonzero(self.transitions[state])
            self._next_bytes[state] = found
        return found
