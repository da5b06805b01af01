"""Character-level DFA → byte-level `ByteDFA`, by expanding transitions into UTF-8 byte tries.

Each character state reads a character through a small trie of byte ranges whose leaves are the
target character states. Trie nodes are hash-consed across the whole automaton (adjacent byte
ranges leading to the same node are merged first), so two nodes with the same future are one
state. Starting from a minimal character DFA over surrogate-free atoms this yields the minimal
byte DFA: UTF-8 is prefix-free and injective, so distinct character states stay distinct, and a
mid-character node can never equal a character state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from operator import itemgetter

import numpy as np

from grammask.automata.dfa import ByteDFA, state_type
from grammask.automata.utf8 import utf8_sequences

__all__ = ["expand_utf8"]

_Ranges = tuple[tuple[int, int], ...]
#: A byte state: its edges' byte ranges and, per range, the target state.
_State = tuple[_Ranges, tuple[int, ...]]


@dataclass(frozen=True)
class _Template:
    """The trie reading one character, over slots (one per target). A ref indexes an environment
    holding the slots' targets, then the states made for `nodes` in order (children first).

    Each node is (ranges, id of ranges, getter of its children from the environment): the id
    keeps hash-consing keys cheap, and the getter returns a bare target for one-range nodes."""

    nodes: tuple[tuple[_Ranges, int, itemgetter], ...]
    root: tuple[_Ranges, tuple[int, ...]]


#: Byte range tuples of template nodes → small ids, for cheap hash-consing keys.
_RANGE_IDS: dict[_Ranges, int] = {}


def expand_utf8(
    rows: Sequence[Sequence[tuple[int, int]]],
    accepting: Sequence[bool],
    atom_ranges: tuple[_Ranges, ...],
    max_states: int,
    on_overflow: Callable[[], Exception],
) -> ByteDFA:
    """Byte DFA of a character DFA (sparse rows over atom bitmasks, each sorted by lowest atom;
    dead = 0, start = 1); character state i keeps number i. Atoms must be numbered in order of
    their lowest code point. Raises `on_overflow()` past `max_states` byte states."""
    n_chars = len(rows)
    states: list[_State] = [((), ())] * n_chars
    made: dict[tuple[int, object], int] = {}
    # Row shape (the atom sets of its edges) → template; slots are the edges in row order.
    shapes: dict[tuple[int, ...], _Template] = {}
    ranger = _Ranger(atom_ranges)
    for state, row in enumerate(rows):
        if not row:
            continue
        shape = tuple([mask for _, mask in row])
        template = shapes.get(shape)
        if template is None:
            template = shapes[shape] = _template(tuple(map(ranger, shape)))
        env = [t for t, _ in row]
        for ranges, rid, get in template.nodes:
            children = get(env)
            key = (rid, children)
            node = made.get(key)
            if node is None:
                node = made[key] = len(states)
                states.append((ranges, children if type(children) is tuple else (children,)))
                if len(states) > max_states:
                    raise on_overflow()
            env.append(node)
        ranges, refs = template.root
        states[state] = (ranges, tuple([env[r] for r in refs]))
    flags = np.zeros(len(states), dtype=bool)
    flags[:n_chars] = accepting
    return ByteDFA(_fill(states), flags)


class _Ranger:
    """Code point ranges of an atom set (disjoint, sorted, adjacent ranges merged)."""

    def __init__(self, atom_ranges: tuple[_Ranges, ...]) -> None:
        self.atom_ranges = atom_ranges

    def __call__(self, mask: int) -> _Ranges:
        low = mask & -mask
        if low == mask:
            return self.atom_ranges[low.bit_length() - 1]
        spans: list[tuple[int, int]] = []
        while mask:
            low = mask & -mask
            mask ^= low
            spans.extend(self.atom_ranges[low.bit_length() - 1])
        spans.sort()
        merged = [spans[0]]
        for lo, hi in spans[1:]:
            if merged[-1][1] + 1 == lo:
                merged[-1] = (merged[-1][0], hi)
            else:
                merged.append((lo, hi))
        return tuple(merged)


def _fill(states: list[_State]) -> np.ndarray:
    """[n, 256] transition table (`state_type`): each range's target written as a step of a
    running sum, summed in place (one allocation: a fresh array costs more in page faults than the
    sum). With 16 bits the steps down wrap around, and the sums come back to the targets."""
    n = len(states)
    counts = [len(children) for _, children in states]
    bounds = np.fromiter(
        chain.from_iterable(chain.from_iterable(ranges for ranges, _ in states)), dtype=np.int64
    ).reshape(-1, 2)
    kind = state_type(n)
    targets = np.fromiter(chain.from_iterable(children for _, children in states), dtype=kind)
    starts = np.repeat(np.arange(0, n * 256, 256, dtype=np.int64), counts)
    table = np.zeros((n, 256), dtype=kind)
    flat = table.reshape(-1)
    flat[starts + bounds[:, 0]] = targets
    inside = bounds[:, 1] < 255  # ends are distinct, though one may meet a start
    flat[starts[inside] + bounds[inside, 1] + 1] -= targets[inside]
    np.cumsum(table, axis=1, dtype=kind, out=table)
    return table


def _trie_node(
    items: list[tuple[tuple[tuple[int, int], ...], int]],
    nodes: dict[tuple[_Ranges, tuple[int, ...]], int],
    n_slots: int,
) -> tuple[_Ranges, tuple[int, ...]]:
    """The node reading the byte sequences `items` (each with the slot it leaves at), its
    descendants hash-consed into `nodes` (a recursive function, not a closure: a closure that
    calls itself is a reference cycle, freed only by a full garbage collection)."""
    groups: dict[tuple[int, int], list] = {}
    for seq, leaf in items:
        groups.setdefault(seq[0], []).append((seq[1:], leaf))
    ranges: list[tuple[int, int]] = []
    refs: list[int] = []
    for (lo, hi), rest in groups.items():
        if rest[0][0]:
            ref = n_slots + nodes.setdefault(_trie_node(rest, nodes, n_slots), len(nodes))
        else:
            ref = rest[0][1]  # a whole character read: `rest` is this one slot
        if refs and refs[-1] == ref and ranges[-1][1] + 1 == lo:
            ranges[-1] = (ranges[-1][0], hi)
        else:
            ranges.append((lo, hi))
            refs.append(ref)
    return tuple(ranges), tuple(refs)


# 256, not more: the cache lives as long as the process, and every template is a few objects for
# each full garbage collection to scan; 1024 entries made no compile faster on MaskBench.
@lru_cache(maxsize=256)
def _template(slot_ranges: tuple[_Ranges, ...]) -> _Template:
    """The hash-consed byte trie reading one character of any slot, leaves naming the slot."""
    n_slots = len(slot_ranges)
    seqs = sorted((seq, k) for k, ranges in enumerate(slot_ranges) for seq in utf8_sequences(ranges))
    nodes: dict[tuple[_Ranges, tuple[int, ...]], int] = {}
    root = _trie_node(seqs, nodes, n_slots)
    return _Template(
        tuple((ranges, _RANGE_IDS.setdefault(ranges, len(_RANGE_IDS)), itemgetter(*refs)) for ranges, refs in nodes),
        root,
    )
