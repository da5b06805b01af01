"""Regular expressions as immutable, hashable syntax trees over Unicode code points.

Every lexeme of a grammar is one of these trees. Front-ends build them (the regex parser, the
GBNF/Lark/JSON Schema front-ends) and `grammask.automata` turns them into byte-level DFAs.
Nodes are value objects: equal trees hash equal, which lets the compiler share automata.
The constructor functions (`literal`, `concat`, `alt`, `repeat`, ...) simplify as they build;
use them rather than the classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grammask.ir.hashing import cached_hash

__all__ = [
    "ANY_CHAR",
    "EMPTY",
    "MAX_CODEPOINT",
    "NOTHING",
    "Alt",
    "CharClass",
    "Concat",
    "RegexNode",
    "Repeat",
    "alt",
    "char_class",
    "concat",
    "is_nullable",
    "literal",
    "optional",
    "plus",
    "repeat",
    "size",
    "star",
]

MAX_CODEPOINT = 0x10FFFF


@dataclass(frozen=True, slots=True)
@cached_hash
class CharClass:
    """One character from a set of code points, as sorted, disjoint, non-adjacent inclusive ranges.

    The empty class matches nothing. Surrogates (U+D800..U+DFFF) are never matched: they have no
    UTF-8 encoding.
    """

    ranges: tuple[tuple[int, int], ...]
    _hash: int = field(init=False, repr=False, compare=False)



@dataclass(frozen=True, slots=True)
@cached_hash
class Concat:
    """The items one after another (at least two items)."""

    items: tuple[RegexNode, ...]
    _hash: int = field(init=False, repr=False, compare=False)



@dataclass(frozen=True, slots=True)
@cached_hash
class Alt:
    """Any one of the items (at least two items)."""

    items: tuple[RegexNode, ...]
    _hash: int = field(init=False, repr=False, compare=False)



@dataclass(frozen=True, slots=True)
@cached_hash
class Repeat:
    """`item` repeated between `min` and `max` times; `max` None means unbounded."""

    item: RegexNode
    min: int
    max: int | None
    _hash: int = field(init=False, repr=False, compare=False)



RegexNode = CharClass | Concat | Alt | Repeat

#: Matches only the empty string.
EMPTY: RegexNode = Repeat(CharClass(()), 0, 0)
#: Matches nothing at all.
NOTHING: RegexNode = CharClass(())


def _normalise_ranges(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def char_class(ranges, *, negate: bool = False) -> CharClass:
    """A class from inclusive (lo, hi) code point ranges, optionally complemented."""
    norm = _normalise_ranges([(max(0, lo), min(MAX_CODEPOINT, hi)) for lo, hi in ranges])
    if negate:
        gaps, nxt = [], 0
        for lo, hi in norm:
            if lo > nxt:
                gaps.append((nxt, lo - 1))
            nxt = hi + 1
        if nxt <= MAX_CODEPOINT:
            gaps.append((nxt, MAX_CODEPOINT))
        norm = tuple(gaps)
    return CharClass(norm)


#: Any Unicode scalar value (what `.` matches with DOTALL).
ANY_CHAR = char_class([(0, MAX_CODEPOINT)])


def literal(text: str) -> RegexNode:
    """Exactly `text`."""
    return concat(*(CharClass(((ord(c), ord(c)),)) for c in text))


def concat(*items: RegexNode) -> RegexNode:
    flat: list[RegexNode] = []
    for item in items:
        if item == NOTHING:
            return NOTHING
        if item == EMPTY:
            continue
        flat.extend(item.items if isinstance(item, Concat) else (item,))
    if not flat:
        return EMPTY
    return flat[0] if len(flat) == 1 else Concat(tuple(flat))


def alt(*items: RegexNode) -> RegexNode:
    """Union; single-character alternatives merge into one class, duplicates drop."""
    flat: list[RegexNode] = []
    chars: list[tuple[int, int]] = []
    for item in items:
        for sub in item.items if isinstance(item, Alt) else (item,):
            if isinstance(sub, CharClass):
                chars.extend(sub.ranges)
            elif sub not in flat:
                flat.append(sub)
    if chars:
        flat.insert(0, char_class(chars))
    if not flat:
        return NOTHING
    return flat[0] if len(flat) == 1 else Alt(tuple(flat))


def repeat(item: RegexNode, min: int, max: int | None) -> RegexNode:
    if max is not None and max < min:
        return NOTHING
    if max == 0 or item == EMPTY:
        return EMPTY
    if min == max == 1:
        return item
    if item == NOTHING:
        return EMPTY if min == 0 else NOTHING
    return Repeat(item, min, max)


def optional(item: RegexNode) -> RegexNode:
    return repeat(item, 0, 1)


def star(item: RegexNode) -> RegexNode:
    return repeat(item, 0, None)


def plus(item: RegexNode) -> RegexNode:
    return repeat(item, 1, None)


def is_nullable(node: RegexNode) -> bool:
    """Whether the empty string matches."""
    if isinstance(node, CharClass):
        return False
    if isinstance(node, Concat):
        return all(is_nullable(i) for i in node.items)
    if isinstance(node, Alt):
        return any(is_nullable(i) for i in node.items)
    return node.min == 0 or is_nullable(node.item)


def size(node: RegexNode) -> int:
    """A rough measure of how large an automaton the node may need (bounded repeats expanded)."""
    if isinstance(node, CharClass):
        return 1
    if isinstance(node, (Concat, Alt)):
        return 1 + sum(size(i) for i in node.items)
    copies = max(node.min, 1) if node.max is None else max(node.max, 1)
    return 1 + copies * size(node.item)
