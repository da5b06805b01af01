"""Character NFA → DFA over alphabet atoms, by subset construction over bitsets.

A DFA state is the set of "important" NFA states (those with a character edge, plus the final
state and the rejecting one, if any) reachable by epsilon moves, held as a Python int with one bit
per important state; the empty set is the dead state 0. It accepts when it holds the final state
and not the rejecting one (a difference: `left − right`). Sets of atoms are ints too (bit `a` for
atom `a`).

A state's successors are found per character class rather than per atom: members reading the
same class are merged first, and where the classes of a state's members do not overlap (the
common case: a literal, a string body, a digit run) each class gives one target directly.
Only overlapping classes are refined into their atom-level intersections.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from grammask.automata.alphabet import Alphabet
from grammask.automata.nfa import CharNFA
from grammask.limits import check_deadline

__all__ = ["SparseRow", "determinise"]

#: A state's transitions: (target state, atom set) pairs with disjoint, non-empty atom sets;
#: atoms in none of them lead to the dead state 0.
SparseRow = list[tuple[int, int]]


def determinise(
    nfa: CharNFA, alphabet: Alphabet, max_states: int, on_overflow: Callable[[], Exception]
) -> tuple[list[SparseRow], list[bool]]:
    """(rows, accepting) with dead = 0 and start = 1, other states in order of discovery
    (breadth first, targets of a state by lowest atom); raises `on_overflow()` as soon as
    more than `max_states` states exist."""
    labels, targets, eps, final, reject = nfa.labels, nfa.targets, nfa.eps, nfa.final, nfa.reject
    class_masks = alphabet.class_masks
    n = len(labels)
    # Important NFA states get bits in state order: the atom set each reads (0 for the final
    # state) and the closure of its edge's target (filled in below).
    own = [0] * n
    bit_mask: list[int] = []
    bit_target: list[int] = []
    for s in range(n):
        label = labels[s]
        if label >= 0 or s == final or s == reject:
            own[s] = 1 << len(bit_mask)
            bit_mask.append(class_masks[label] if label >= 0 else 0)
            bit_target.append(targets[s])
    # Epsilon closures as bitsets. The NFA is built backwards, so epsilon edges lead to lower
    # states except from a loop's hub into its body: ascending passes, repeated over the states
    # left waiting for a hub, do all but epsilon cycles (bodies that match the empty string),
    # which a search does when needed.
    closures: list[int | None] = [None] * n
    waiting: Sequence[int] = range(n)
    while waiting:
        left: list[int] = []
        for s in waiting:
            bits = own[s]
            for t in eps[s]:
                sub = closures[t]
                if sub is None:
                    left.append(s)
                    break
                bits |= sub
            else:
                closures[s] = bits
        if len(left) == len(waiting):
            break
        waiting = left

    def closure(state: int) -> int:
        found = closures[state]
        if found is None:
            found = closures[state] = _search(state, eps, closures, own)
        return found

    bit_next = [closure(t) if t >= 0 else 0 for t in bit_target]

    ids: dict[int, int] = {0: 0}
    sets: list[int] = [0]

    def intern(bits: int) -> int:
        found = ids.get(bits)
        if found is None:
            found = ids[bits] = len(sets)
            sets.append(bits)
            if len(sets) > max_states:
                raise on_overflow()
        return found

    if not intern(closure(nfa.start)):  # nothing to read and nothing to accept (an empty difference)
        return [[], []], [False, False]
    final_bit = own[final]
    reject_bit = own[reject] if reject >= 0 else 0
    rows: list[SparseRow] = [[]]
    accepting = [False]
    i = 1
    while i < len(sets):
        if not i & 255:
            check_deadline("determinising a lexeme's automaton")
        members = sets[i]
        i += 1
        accepting.append(bool(members & final_bit) and not members & reject_bit)
        # Members grouped by the atom set they read: atom set → union of target closures.
        groups: dict[int, int] = {}
        while members:
            low = members & -members
            members ^= low
            b = low.bit_length() - 1
            mask = bit_mask[b]
            if mask:
                groups[mask] = groups.get(mask, 0) | bit_next[b]
        if len(groups) > 1:
            groups = _disjoint(groups)
            # Targets by lowest atom, so that states are discovered breadth first by atom.
            rows.append([(ids.get(bits) or intern(bits), mask) for mask, bits in sorted(groups.items(), key=_lowest)])
        else:
            rows.append([(ids.get(bits) or intern(bits), mask) for mask, bits in groups.items()])
    return rows, accepting


def _lowest(edge: tuple[int, int]) -> int:
    return edge[0] & -edge[0]


def _disjoint(groups: dict[int, int]) -> dict[int, int]:
    """The same transitions as (atom set → target) with pairwise disjoint atom sets and distinct
    targets: atoms in several classes go to the union of their targets."""
    pieces = groups
    union = 0
    for mask in groups:
        if union & mask:
            pieces = {}
            break
        union |= mask
    if not pieces:
        # Refine into the atom sets that every class contains or avoids.
        pieces = {}
        for mask, bits in groups.items():
            new: dict[int, int] = {}
            rest = mask
            for piece, piece_bits in pieces.items():
                common = piece & mask
                if common:
                    new[common] = piece_bits | bits
                    rest &= ~piece
                    if common != piece:
                        new[piece & ~mask] = piece_bits
                else:
                    new[piece] = piece_bits
            if rest:
                new[rest] = bits
            pieces = new
    merged: dict[int, int] = {}
    for piece, bits in pieces.items():
        merged[bits] = merged.get(bits, 0) | piece
    return {mask: bits for bits, mask in merged.items()}


def _search(state: int, eps: list[list[int]], closures: list[int | None], own: list[int]) -> int:
    """Closure of `state` by a full search (for epsilon cycles: loops over nullable bodies)."""
    bits = 0
    seen, stack = {state}, [state]
    while stack:
        s = stack.pop()
        done = closures[s]
        if done is not None:
            bits |= done
            continue
        bits |= own[s]
        for t in eps[s]:
            if t not in seen:
                seen.add(t)
                stack.append(t)
    return bits
