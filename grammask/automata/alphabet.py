"""The character alphabet of a regex: code points grouped into atoms.

Two code points belong to the same atom when every character class of the regex contains both or
neither, so automata built over atoms have as few columns as the regex can tell apart (a handful,
even for Unicode `\\w`). Surrogates and code points in no class get no atom: no transition reads
them, and without surrogates every atom string has exactly one UTF-8 encoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grammask.ir import regex as rx

__all__ = ["Alphabet", "alphabet_of"]

_SURROGATES = (0xD800, 0xDFFF)


@dataclass(frozen=True)
class Alphabet:
    #: Code point ranges of each atom (sorted, disjoint, surrogate-free); atoms are numbered in
    #: order of their lowest code point.
    atom_ranges: tuple[tuple[tuple[int, int], ...], ...]
    #: The atoms making up each class `alphabet_of` was given, in order, as a bitmask (bit `a`
    #: for atom `a`).
    class_masks: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.atom_ranges)


def alphabet_of(classes: Sequence[rx.CharClass]) -> Alphabet:
    """The atoms of `classes` (distinct classes), and each class as a set of atoms."""
    cuts = {0, rx.MAX_CODEPOINT + 1, _SURROGATES[0], _SURROGATES[1] + 1}
    for cc in classes:
        for lo, hi in cc.ranges:
            cuts.add(lo)
            cuts.add(hi + 1)
    bounds = sorted(cuts)
    index = {b: i for i, b in enumerate(bounds)}
    # Segment s is [bounds[s], bounds[s + 1]); its signature is the set of classes holding it,
    # found as a running XOR of each range's start and end toggles (a class's ranges are disjoint).
    toggles = [0] * len(bounds)
    for c, cc in enumerate(classes):
        bit = 1 << c
        for lo, hi in cc.ranges:
            toggles[index[lo]] ^= bit
            toggles[index[hi + 1]] ^= bit
    surrogates = index[_SURROGATES[0]]
    atom_of: dict[int, int] = {}
    ranges: list[list[tuple[int, int]]] = []
    signature = 0
    for s in range(len(bounds) - 1):
        signature ^= toggles[s]
        if not signature or s == surrogates:
            continue
        atom = atom_of.get(signature)
        lo, hi = bounds[s], bounds[s + 1] - 1
        if atom is None:
            atom_of[signature] = len(ranges)
            ranges.append([(lo, hi)])
        else:
            spans = ranges[atom]
            if spans[-1][1] + 1 == lo:
                spans[-1] = (spans[-1][0], hi)
            else:
                spans.append((lo, hi))
    masks = [0] * len(classes)
    for signature, atom in atom_of.items():
        while signature:
            low = signature & -signature
            signature ^= low
            masks[low.bit_length() - 1] |= 1 << atom
    return Alphabet(tuple(map(tuple, ranges)), tuple(masks))
