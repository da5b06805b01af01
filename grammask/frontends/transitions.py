"""An explicit automaton over token ids → grammar IR.

Each state reachable from the initial one becomes a rule `state_<s>`, with one alternative per
outgoing edge (`token(t) state_<next>`) and, for an accepting state, the empty alternative. The
automaton may be nondeterministic. Edges into states from which no accepting state can be reached
are dropped, so every prefix the grammar allows can still be completed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from grammask.errors import GrammarError
from grammask.ir import grammar as g

__all__ = ["grammar_from_transitions"]


def grammar_from_transitions(
    initial_state: int,
    transitions: Iterable[tuple[int, int, int]],
    accepting_states: Iterable[int],
) -> g.Grammar:
    """Token sequences that lead from `initial_state` to one of `accepting_states`.

    `transitions` are `(state, token_id, next_state)` triples. States are any integers; token ids
    are non-negative. Raises `GrammarError` for malformed input or when no accepting state can be
    reached from the initial state (the grammar would accept nothing).
    """
    _check_int(initial_state, "the initial state")
    accepting = set()
    for s in accepting_states:
        _check_int(s, "an accepting state")
        accepting.add(s)
    edges: dict[int, list[tuple[int, int]]] = defaultdict(list)
    into: dict[int, set[int]] = defaultdict(set)
    for i, edge in enumerate(transitions):
        if not isinstance(edge, (tuple, list)) or len(edge) != 3:
            raise GrammarError(f"transition #{i} is {edge!r}, not a (state, token_id, next_state) triple")
        src, tok, dst = edge
        for value, what in ((src, "state"), (tok, "token id"), (dst, "next state")):
            _check_int(value, f"the {what} of transition #{i}")
        if tok < 0:
            raise GrammarError(f"transition #{i} has a negative token id {tok}")
        edges[src].append((tok, dst))
        into[dst].add(src)

    reachable = _closure([initial_state], lambda s: (dst for _, dst in edges[s]))
    live = _closure([s for s in accepting if s in reachable], lambda s: into[s]) & reachable
    if initial_state not in live:
        raise GrammarError(f"no accepting state can be reached from the initial state {initial_state}")
    rules = {}
    for state in sorted(live):
        options = [g.seq(g.token(tok), g.ref(_name(dst))) for tok, dst in edges[state] if dst in live]
        if state in accepting:
            options.append(g.seq())
        rules[_name(state)] = g.alt(*options)
    return g.Grammar(rules, start=_name(initial_state))


def _name(state: int) -> str:
    return f"state_{state}"


def _check_int(value: object, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise GrammarError(f"{what} must be an int, not {value!r}")


def _closure(seeds: Iterable[int], successors: Callable[[int], Iterable[int]]) -> set[int]:
    seen = set(seeds)
    todo = list(seen)
    while todo:
        for nxt in successors(todo.pop()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
