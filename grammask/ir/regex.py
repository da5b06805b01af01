"""Regular expressions as immutable, hashable syntax trees over Unicode code points.

Every lexeme of a grammar is one of these trees. Front-ends build them (the regex parser, the
GBNF/Lark/JSON Schema front-ends) and `grammask.automata` turns them into byte-level DFAs.
Nodes are value objects: equal trees hash equal, which lets the compiler share automata.
The constructor functions (`literal`, `concat`, `alt`, `repeat`, ...) simplify as they build;
use them rather than the classes. Each node caches its hash, `size` and nullability when it is
made (from its children's), so no query walks a tree: trees may be as deep as their input.
`ident` numbers a tree, for caches that should not keep the tree itself alive.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import count
from operator import attrgetter

from grammask.ir.hashing import cached_hash

__all__ = [
    "ANY_CHAR",
    "EMPTY",
    "MAX_CODEPOINT",
    "NOTHING",
    "Alt",
    "CharClass",
    "Concat",
    "Difference",
    "RegexNode",
    "Repeat",
    "alt",
    "char_class",
    "concat",
    "difference",
    "intersect",
    "ident",
    "is_empty",
    "is_nothing",
    "is_nullable",
    "literal",
    "optional",
    "plus",
    "repeat",
    "size",
    "star",
    "strings",
    "words",
]

MAX_CODEPOINT = 0x10FFFF

# Getters in C: a node's size and nullability are derived from its items' when it is made, and the
# front-ends make hundreds of nodes per schema (a generator expression cost twice as much).
_size = attrgetter("size")
_nullable = attrgetter("nullable")


@dataclass(frozen=True, slots=True)
@cached_hash
class CharClass:
    """One character from a set of code points, as sorted, disjoint, non-adjacent inclusive ranges.

    The empty class matches nothing. Surrogates (U+D800..U+DFFF) are never matched: they have no
    UTF-8 encoding.
    """

    ranges: tuple[tuple[int, int], ...]
    _hash: int = field(init=False, repr=False, compare=False, default=0)
    _id: int = field(init=False, repr=False, compare=False)  # set by `ident`, when asked
    size: int = field(init=False, repr=False, compare=False, default=1)
    nullable: bool = field(init=False, repr=False, compare=False, default=False)


@dataclass(frozen=True, slots=True)
@cached_hash
class Concat:
    """The items one after another (at least two items)."""

    items: tuple[RegexNode, ...]
    _hash: int = field(init=False, repr=False, compare=False, default=0)
    _id: int = field(init=False, repr=False, compare=False)  # set by `ident`, when asked
    size: int = field(init=False, repr=False, compare=False)
    nullable: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", 1 + sum(map(_size, self.items)))
        object.__setattr__(self, "nullable", all(map(_nullable, self.items)))


@dataclass(frozen=True, slots=True)
@cached_hash
class Alt:
    """Any one of the items (at least two items)."""

    items: tuple[RegexNode, ...]
    _hash: int = field(init=False, repr=False, compare=False, default=0)
    _id: int = field(init=False, repr=False, compare=False)  # set by `ident`, when asked
    size: int = field(init=False, repr=False, compare=False)
    nullable: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", 1 + sum(map(_size, self.items)))
        object.__setattr__(self, "nullable", any(map(_nullable, self.items)))


@dataclass(frozen=True, slots=True)
@cached_hash
class Repeat:
    """`item` repeated between `min` and `max` times; `max` None means unbounded."""

    item: RegexNode
    min: int
    max: int | None
    _hash: int = field(init=False, repr=False, compare=False, default=0)
    _id: int = field(init=False, repr=False, compare=False)  # set by `ident`, when asked
    size: int = field(init=False, repr=False, compare=False)
    nullable: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        copies = max(self.min, 1) if self.max is None else max(self.max, 1)
        object.__setattr__(self, "size", 1 + copies * self.item.size)
        object.__setattr__(self, "nullable", self.min == 0 or self.item.nullable)


@dataclass(frozen=True, slots=True)
@cached_hash
class Difference:
    """The strings `left` matches and `right` does not: "any key but the declared ones", which as
    a plain regex would repeat the rest of `left` after every prefix of every word in `right`."""

    left: RegexNode
    right: RegexNode
    _hash: int = field(init=False, repr=False, compare=False, default=0)
    _id: int = field(init=False, repr=False, compare=False)  # set by `ident`, when asked
    size: int = field(init=False, repr=False, compare=False)
    nullable: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", 1 + self.left.size + self.right.size)
        object.__setattr__(self, "nullable", self.left.nullable and not self.right.nullable)


RegexNode = CharClass | Concat | Alt | Repeat | Difference

#: Alternations with at least this many literal strings (of two or more characters) are built as a
#: trie; shorter lists stay as written.
TRIE_MIN_WORDS = 16

#: Matches only the empty string.
EMPTY: RegexNode = Repeat(CharClass(()), 0, 0)
#: Matches nothing at all.
NOTHING: RegexNode = CharClass(())


def is_nothing(node: RegexNode) -> bool:
    """`node == NOTHING`, by type first: equality is a Python call, and the constructors ask this
    of every item (the front-ends make hundreds of nodes per schema)."""
    return isinstance(node, CharClass) and not node.ranges


def is_empty(node: RegexNode) -> bool:
    """`node == EMPTY`, by type first (see `is_nothing`)."""
    return isinstance(node, Repeat) and node.max == 0 and node == EMPTY


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


@lru_cache(maxsize=64)
def literal(text: str) -> RegexNode:
    """Exactly `text`. The last 64 are kept: a JSON Schema's grammar asks for the same few (`"`,
    `:`, `,`, brackets, `true`) hundreds of times, and 64 answer 91% of MaskBench's calls."""
    return concat(*map(_character, text))


@lru_cache(maxsize=1 << 16)
def _character(c: str) -> CharClass:
    """The class of one character (shared: literals are made of the same few characters)."""
    return CharClass(((ord(c), ord(c)),))


def concat(*items: RegexNode) -> RegexNode:
    flat: list[RegexNode] = []
    for item in items:  # `is_nothing` and `is_empty` inline: this is called tens of thousands of times
        if isinstance(item, Concat):
            flat.extend(item.items)
        elif isinstance(item, CharClass) and not item.ranges:
            return NOTHING
        elif not isinstance(item, Repeat) or item.max != 0 or item != EMPTY:
            flat.append(item)
    if not flat:
        return EMPTY
    return flat[0] if len(flat) == 1 else Concat(tuple(flat))


def alt(*items: RegexNode) -> RegexNode:
    """Union; single-character alternatives merge into one class, duplicates drop (in linear time),
    and `TRIE_MIN_WORDS` or more literal strings become one trie (`words`)."""
    unique: dict[RegexNode, None] = {}
    for item in items:
        for sub in item.items if isinstance(item, Alt) else (item,):
            unique[sub] = None
    if len(unique) >= TRIE_MIN_WORDS:
        texts = {node: text for node in unique if (text := _literal_text(node)) is not None and len(text) > 1}
        if len(texts) >= TRIE_MIN_WORDS:
            unique = {node: None for node in unique if node not in texts}
            unique[words(texts.values())] = None
    return _union(list(unique))


def _union(flat: list[RegexNode]) -> RegexNode:
    """The union of distinct, unnested alternatives, with their single characters merged."""
    chars = [r for node in flat if isinstance(node, CharClass) for r in node.ranges]
    flat = [node for node in flat if not isinstance(node, CharClass)]
    if chars:
        flat.insert(0, char_class(chars))
    if not flat:
        return NOTHING
    return flat[0] if len(flat) == 1 else Alt(tuple(flat))


def _literal_text(node: RegexNode) -> str | None:
    """The one string `node` matches, when it is written as a plain literal."""
    out = []
    for item in node.items if isinstance(node, Concat) else (node,):
        if not (isinstance(item, CharClass) and len(item.ranges) == 1 and item.ranges[0][0] == item.ranges[0][1]):
            return None
        out.append(chr(item.ranges[0][0]))
    return "".join(out)


def words(texts: Iterable[str]) -> RegexNode:
    """Exactly the strings `texts`, as a trie: each shared prefix once, so that the automaton of a
    large set of words is built in time linear in their total length. Built without recursion, in
    sorted order: the same words (from a set, in any order) make the same tree in every process."""
    trie: dict[str, dict] = {}
    for text in sorted(texts):
        node = trie
        for ch in text:
            node = node.setdefault(ch, {})
        node[""] = {}  # a word ends here

    def edge(ch: str, child: dict) -> tuple[str, dict]:
        """The label and end of the edge from `ch`, through nodes with one way on."""
        label = [ch]
        while len(child) == 1 and "" not in child:
            ((ch, child),) = child.items()
            label.append(ch)
        return "".join(label), child

    built: dict[int, RegexNode] = {}
    stack: list[tuple[dict, bool]] = [(trie, False)]
    while stack:
        node, children_done = stack.pop()
        edges = [edge(ch, child) for ch, child in node.items() if ch]
        if not children_done:
            stack.append((node, True))
            stack += [(child, False) for _, child in edges]
            continue
        parts = [EMPTY] if "" in node else []
        parts += [concat(literal(label), built.pop(id(child))) for label, child in edges]
        built[id(node)] = _union(parts)
    return built[id(trie)]


#: Most characters `strings` lets one class stand for (a hex digit of an escape has 16 or 22).
_FEW_CHARS = 22


def strings(node: RegexNode, limit: int) -> frozenset[str] | None:
    """Every string `node` matches, when they are finite and at most `limit` (their count and
    their total length; each class at most `_FEW_CHARS` characters), else None. Bottom up,
    without recursion, each shared subtree once: first how many strings each node may have at
    most, so that a tree of too many fails before any string is made."""
    order = _post_order(node)
    counts: dict[int, int] = {}
    for item in order:
        counts[id(item)] = _count_of(item, [counts[id(child)] for child in _children(item)], limit)
    if counts[id(node)] > limit:
        return None
    found: dict[int, frozenset[str] | None] = {}
    for item in order:
        found[id(item)] = _strings_of(item, [found[id(child)] for child in _children(item)], limit)
    return found[id(node)]


def _post_order(node: RegexNode) -> list[RegexNode]:
    """The nodes of the tree, each once, every node after its children."""
    seen: set[int] = set()
    order: list[RegexNode] = []
    stack: list[tuple[RegexNode, bool]] = [(node, False)]
    while stack:
        item, ready = stack.pop()
        if ready:
            order.append(item)
        elif id(item) not in seen:
            seen.add(id(item))
            stack.append((item, True))
            stack += [(child, False) for child in _children(item)]
    return order


def _count_of(node: RegexNode, parts: list[int], limit: int) -> int:
    """At most how many strings `node` matches, given its children's (`limit + 1`: too many)."""
    over = limit + 1
    if isinstance(node, CharClass):
        return min(over, _chars_in(node))
    if isinstance(node, Alt):
        return min(over, sum(parts))
    if isinstance(node, Repeat) and node.max is not None:
        total, each = int(node.min == 0), 1
        for times in range(1, node.max + 1):
            each = min(over, each * parts[0])
            total = min(over, total + each) if times >= node.min else total
            if total >= over or each == 0:
                break
        return total
    if not isinstance(node, Concat):  # a difference, or a repeat without end
        return over
    total = 1
    for part in parts:
        total = min(over, total * part)
    return total


def _strings_of(node: RegexNode, parts: list[frozenset[str] | None], limit: int) -> frozenset[str] | None:
    """`strings` of `node`, given those of its children."""
    if isinstance(node, CharClass):
        if _chars_in(node) > _FEW_CHARS:
            return None
        return frozenset(chr(c) for lo, hi in node.ranges for c in range(lo, hi + 1) if not 0xD800 <= c <= 0xDFFF)
    if isinstance(node, Difference) or any(part is None for part in parts):
        return None
    if isinstance(node, Alt):
        out: frozenset[str] = frozenset().union(*parts)  # type: ignore[arg-type]
        return out if _within(out, limit) else None
    if isinstance(node, Repeat):
        if node.max is None:
            return None
        one, each = parts[0], frozenset([""])
        assert one is not None
        out = frozenset([""]) if node.min == 0 else frozenset()
        for times in range(1, node.max + 1):
            if len(each) * len(one) > limit:
                return None
            each = frozenset(a + b for a in each for b in one)
            if not _within(each, limit):
                return None
            if times >= node.min:
                out |= each
        return out if _within(out, limit) else None
    out = frozenset([""])
    for part in parts:  # a concatenation
        assert part is not None
        if len(part) == 1 and len(out) == 1:  # a literal's characters, as most are
            out = frozenset([next(iter(out)) + next(iter(part))])
            continue
        if len(out) * len(part) > limit:
            return None
        out = frozenset(a + b for a in out for b in part)
        if not _within(out, limit):
            return None
    return out


def _chars_in(node: CharClass) -> int:
    """How many characters the class matches (surrogates, which it never matches, left out)."""
    if len(node.ranges) == 1 and node.ranges[0][0] == node.ranges[0][1]:
        return 1  # one character, as most are
    surrogates = sum(max(0, min(hi, 0xDFFF) - max(lo, 0xD800) + 1) for lo, hi in node.ranges)
    return sum(hi - lo + 1 for lo, hi in node.ranges) - surrogates


def _within(texts: frozenset[str], limit: int) -> bool:
    return len(texts) <= limit and sum(map(len, texts)) <= limit


def repeat(item: RegexNode, min: int, max: int | None) -> RegexNode:
    if max is not None and max < min:
        return NOTHING
    if max == 0 or is_empty(item):
        return EMPTY
    if min == max == 1:
        return item
    if is_nothing(item):
        return EMPTY if min == 0 else NOTHING
    return Repeat(item, min, max)


def difference(left: RegexNode, right: RegexNode) -> RegexNode:
    """The strings of `left` that `right` does not match."""
    if is_nothing(left) or is_nothing(right):
        return left
    return Difference(left, right)


def intersect(left: RegexNode, right: RegexNode) -> RegexNode:
    """The strings both match: `left − (left − right)`, two differences, which the automaton
    compiler builds as products of the sides' cached automata."""
    return difference(left, difference(left, right))


def optional(item: RegexNode) -> RegexNode:
    return repeat(item, 0, 1)


def star(item: RegexNode) -> RegexNode:
    return repeat(item, 0, None)


def plus(item: RegexNode) -> RegexNode:
    return repeat(item, 1, None)


def is_nullable(node: RegexNode) -> bool:
    """Whether the empty string matches."""
    return node.nullable


def size(node: RegexNode) -> int:
    """A rough measure of how large an automaton the node may need (bounded repeats expanded)."""
    return node.size


#: Structure → number, for `ident`: (tag, parameters, children's numbers) → the node's number.
#: Keys are tuples of integers, which the garbage collector stops tracking.
_IDS: dict[tuple, int] = {}
#: Numbers are never given twice, so that after `_IDS` is cleared a number still names one tree.
_NEXT_ID = count(1)
#: Structures `_IDS` holds before it starts again empty (about 120 bytes each).
_MAX_IDS = 1 << 17


def ident(node: RegexNode) -> int:
    """A number for the tree: two trees with the same number are equal.

    Equal trees get the same number as long as `_IDS` was not cleared between (it starts again
    empty past `_MAX_IDS` structures), so a cache keyed by it may miss but never answers wrongly.
    A key for process-wide caches (`grammask.automata.compile`): a number is nothing for the
    garbage collector to scan, where a tree kept as a key is one object per node, which every
    full collection of a long-running process scans. Each node's number is kept on it, so a
    tree is numbered once, bottom up, without recursion. Numbers belong to the process: a
    tree's number means nothing in another one.
    """
    known = getattr(node, "_id", 0)
    if known:
        return known
    if isinstance(node, CharClass):
        return _number(node, (0, node.ranges))
    stack: list[RegexNode] = [node]  # inner nodes, each numbered once its children are
    while stack:
        item = stack[-1]
        waiting = False
        for child in _children(item):
            if not getattr(child, "_id", 0):
                if isinstance(child, CharClass):  # a leaf: at once, not through the stack
                    _number(child, (0, child.ranges))
                else:
                    stack.append(child)
                    waiting = True
        if waiting:
            continue
        stack.pop()
        if getattr(item, "_id", 0):  # numbered meanwhile, as the child of another node
            continue
        if isinstance(item, Repeat):
            _number(item, (1, item.min, -1 if item.max is None else item.max, item.item._id))
        else:
            tag = 2 if isinstance(item, Concat) else 3 if isinstance(item, Alt) else 4
            _number(item, (tag, *(c._id for c in _children(item))))
    return node._id


def _number(node: RegexNode, key: tuple) -> int:
    """Give `node` the number of its structure `key`, a new one if the structure is new."""
    found = _IDS.get(key)
    if found is None:
        if len(_IDS) >= _MAX_IDS:
            _IDS.clear()
        found = _IDS.setdefault(key, next(_NEXT_ID))
    object.__setattr__(node, "_id", found)
    return found


def _children(node: RegexNode) -> tuple[RegexNode, ...]:
    if isinstance(node, Concat | Alt):
        return node.items
    if isinstance(node, Repeat):
        return (node.item,)
    if isinstance(node, Difference):
        return (node.left, node.right)
    return ()
