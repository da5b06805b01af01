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
        # Bytes that every component treats alike form one class; the product works per class.
        # Columns are compared by a random 64-bit projection (a collision would merge two classes;
        # at 2**-64 per pair it is not a practical concern) instead of sorting whole columns.
        rng = np.random.default_rng(0)
        signature = np.zeros(256, dtype=np.uint64)
        for dfa in dfas:
            weights = rng.integers(1, 2**63, size=dfa.n_states, dtype=np.uint64)
            signature = signature * np.uint64(0x9E3779B97F4A7C15) + (weights[:, None] * dfa.transitions.astype(np.uint64)).sum(axis=0)
        _, byte_class = np.unique(signature, return_inverse=True)
        byte_class = byte_class.reshape(-1)
        representatives = np.unique(byte_class, return_index=True)[1]
        tables = [dfa.transitions[:, representatives] for dfa in dfas]  # [S_c, classes]
        n_classes = len(representatives)
        k = len(dfas)
        # A product state is the row of its component states (0 = that component is dead).
        rows = [np.zeros(k, dtype=np.int32), np.ones(k, dtype=np.int32)]
        ids = {rows[0].tobytes(): 0, rows[1].tobytes(): 1}
        targets: list[np.ndarray] = [np.zeros(n_classes, dtype=np.int32)]
        frontier = np.array([1])
        while frontier.size:
            states = np.stack([rows[i] for i in frontier.tolist()])  # [f, k]
            nxt = np.stack([tables[c][states[:, c]] for c in range(k)], axis=-1)  # [f, classes, k]
            flat = np.ascontiguousarray(nxt.reshape(-1, k))
            keys = flat.view(np.dtype((np.void, 4 * k))).reshape(-1)
            unique_keys, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
            unique_ids = np.empty(len(unique_keys), dtype=np.int32)
            new = []
            for j, key in enumerate(unique_keys.tolist()):
                found = ids.get(key)
                if found is None:
                    found = ids[key] = len(rows)
                    rows.append(flat[first[j]])
                    new.append(found)
                unique_ids[j] = found
            if len(rows) > limits.max_dfa_states:
                raise GrammarError(
                    f"lexer too large: more than {limits.max_dfa_states} states for {k} "
                    "lexemes that may start at one place (Limits.max_dfa_states)"
                )
            targets.extend(unique_ids[inverse.reshape(len(frontier), n_classes)])
            frontier = np.array(new, dtype=np.int64)
        self.transitions = np.ascontiguousarray(np.stack(targets)[:, byte_class], dtype=np.int32)
        product = np.stack(rows)
        accepting_parts = np.stack([dfas[c].accepting[product[:, c]] for c in range(k)], axis=-1)
        self.accepting = accepting_parts.any(axis=1)
        self.accepts = [tuple(self.terminals[c] for c in np.flatnonzero(row)) for row in accepting_parts]

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
