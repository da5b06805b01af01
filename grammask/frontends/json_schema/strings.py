"""JSON string literals whose decoded value lies in a regular language over code points.

A schema constrains the *decoded* string; the model writes the *encoded* literal. `encode` maps a
regex over decoded characters to the regex of the JSON spellings grammask allows for them — those
`json.dumps` (either `ensure_ascii`) produces or JSON requires, not every escape JSON permits:

- printable ASCII (and DEL) other than `"` and `\\`: only the character itself;
- `"` and `\\`: only `\\"` and `\\\\`; `/`: itself or `\\/`;
- control characters U+0000..U+001F: their short escape where one exists (`\\b \\f \\n \\r \\t`) and
  `\\u00XX` (hex digits in either case);
- other characters: raw UTF-8 or `\\uXXXX` (either case; astral characters as surrogate pairs).

Allowing `\\u0061` for `a` would multiply the automaton of every key, enum value and pattern by the
escape spellings of each character. Lone surrogates are never produced.
"""

from __future__ import annotations

from functools import lru_cache

from grammask.errors import GrammarError
from grammask.ir import regex as rx

# The memos below hold regex trees, which Python's cyclic collector scans on every full collection:
# small bounds keep the hot entries (keys, enum values, the common string classes) and keep those
# pauses short in a long-running process.

__all__ = [
    "encode",
    "length_bounds",
    "matches",
    "restrict_length",
    "string_literal",
    "subtract_words",
]

_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
_RAW = rx.char_class([(0x22, 0x22), (0x5C, 0x5C), (0, 0x1F), (0xD800, 0xDFFF)], negate=True)
_HEX_DIGITS = "0123456789abcdef"


def _intersect(a: rx.CharClass, b: rx.CharClass) -> rx.CharClass:
    # A ∩ B = ¬(¬A ∪ ¬B)
    not_a, not_b = rx.char_class(a.ranges, negate=True), rx.char_class(b.ranges, negate=True)
    return rx.char_class(not_a.ranges + not_b.ranges, negate=True)


def _hex_digit(lo: int, hi: int) -> rx.RegexNode:
    spans = [(ord(_HEX_DIGITS[lo]), ord(_HEX_DIGITS[min(hi, 9)]))] if lo <= 9 else []
    if hi >= 10:
        a, b = max(lo, 10), hi
        spans += [
            (ord(_HEX_DIGITS[a]), ord(_HEX_DIGITS[b])),
            (ord(_HEX_DIGITS[a].upper()), ord(_HEX_DIGITS[b].upper())),
        ]
    return rx.char_class(spans)


def _hex_range(lo: int, hi: int, width: int) -> rx.RegexNode:
    """`width` hex digits (either case) spelling a value in [lo, hi]."""
    if width == 0:
        return rx.EMPTY
    unit = 16 ** (width - 1)
    a, b = divmod(lo, unit), divmod(hi, unit)
    if a[1] == 0 and b[1] == unit - 1:
        return rx.concat(_hex_digit(a[0], b[0]), _hex_range(0, unit - 1, width - 1))
    if a[0] == b[0]:
        return rx.concat(_hex_digit(a[0], a[0]), _hex_range(a[1], b[1], width - 1))
    parts = [rx.concat(_hex_digit(a[0], a[0]), _hex_range(a[1], unit - 1, width - 1))]
    if b[0] - a[0] > 1:
        parts.append(rx.concat(_hex_digit(a[0] + 1, b[0] - 1), _hex_range(0, unit - 1, width - 1)))
    parts.append(rx.concat(_hex_digit(b[0], b[0]), _hex_range(0, b[1], width - 1)))
    return rx.alt(*parts)


@lru_cache(maxsize=256)
def _u_escape(lo: int, hi: int) -> rx.RegexNode:
    return rx.concat(rx.literal("\\u"), _hex_range(lo, hi, 4))


@lru_cache(maxsize=64)
def _astral(lo: int, hi: int) -> rx.RegexNode:
    """Surrogate-pair escapes of the code points [lo, hi] (all >= U+10000)."""
    (h1, l1), (h2, l2) = (divmod(lo - 0x10000, 0x400), divmod(hi - 0x10000, 0x400))

    def pair(h_lo: int, h_hi: int, l_lo: int, l_hi: int) -> rx.RegexNode:
        return rx.concat(_u_escape(0xD800 + h_lo, 0xD800 + h_hi), _u_escape(0xDC00 + l_lo, 0xDC00 + l_hi))

    if h1 == h2:
        return pair(h1, h1, l1, l2)
    parts = [pair(h1, h1, l1, 0x3FF)]
    if h2 - h1 > 1:
        parts.append(pair(h1 + 1, h2 - 1, 0, 0x3FF))
    parts.append(pair(h2, h2, 0, l2))
    return rx.alt(*parts)


@lru_cache(maxsize=128)
def _encode_class(cc: rx.CharClass) -> rx.RegexNode:
    parts: list[rx.RegexNode] = [_intersect(cc, _RAW)]
    for ch, esc in _SHORT_ESCAPES.items():
        if any(lo <= ord(ch) <= hi for lo, hi in cc.ranges):
            parts.append(rx.literal("\\" + esc))
    for lo, hi in cc.ranges:
        for a, b in ((lo, min(hi, 0x1F)), (max(lo, 0x80), min(hi, 0xD7FF)), (max(lo, 0xE000), min(hi, 0xFFFF))):
            if a <= b:
                parts.append(_u_escape(a, b))
        if hi >= 0x10000:
            parts.append(_astral(max(lo, 0x10000), hi))
    return rx.alt(*parts)


# 256, not more: the trees it keeps live as long as the process, objects for every full garbage
# collection to scan; 1024 entries made no compile faster on MaskBench (most hits are in one schema).
@lru_cache(maxsize=256)
def encode(node: rx.RegexNode) -> rx.RegexNode:
    """Every JSON-escaped spelling of every string of `node` (without the quotes)."""
    if isinstance(node, rx.CharClass):
        return _encode_class(node)
    if isinstance(node, rx.Concat):
        return rx.concat(*map(encode, node.items))
    if isinstance(node, rx.Alt):
        return rx.alt(*map(encode, node.items))
    if isinstance(node, rx.Difference):  # a string has one decoded value: spellings never overlap
        return rx.difference(encode(node.left), encode(node.right))
    return rx.repeat(encode(node.item), node.min, node.max)


def string_literal(content: rx.RegexNode) -> rx.RegexNode:
    """The quoted JSON literal of strings in `content` (a regex over decoded code points)."""
    return rx.concat(rx.literal('"'), encode(content), rx.literal('"'))


def length_bounds(node: rx.RegexNode) -> tuple[int, int | None]:
    """Shortest and longest string length of `node` in code points (None: unbounded)."""
    if isinstance(node, rx.CharClass):
        return (1, 1) if node.ranges else (0, 0)
    if isinstance(node, rx.Concat):
        lo = 0
        hi: int | None = 0
        for item in node.items:
            a, b = length_bounds(item)
            lo += a
            hi = None if hi is None or b is None else hi + b
        return lo, hi
    if isinstance(node, rx.Alt):
        bounds = [length_bounds(i) for i in node.items]
        finite = [b for _, b in bounds if b is not None]
        return min(a for a, _ in bounds), max(finite) if len(finite) == len(bounds) else None
    if isinstance(node, rx.Difference):  # bounds of a superset
        return length_bounds(node.left)
    a, b = length_bounds(node.item)
    return a * node.min, None if node.max is None or b is None else b * node.max


#: The largest pattern size (`rx.size`) times the number of lengths its automaton must count
#: (`maxLength + 1`, or `minLength` alone) that `restrict_length` takes on. The automaton has about
#: that many character states, and up to some twenty byte states for each where the pattern takes
#: any character (escapes, UTF-8). On MaskBench, 1,792 (`[a-zA-Z0-9_.-]+` within 3..255) took
#: 0.2 s to 13,211 states, 2,814 took a second to 16,154 states, and from about 5,000 on the
#: automaton is over `Limits.max_dfa_states` after seconds of work (an email format under
#: `maxLength: 1024` is 1.5 million).
COUNTED_PATTERN_MAX = 2048


def restrict_length(node: rx.RegexNode, lo: int, hi: int | None, pointer: str) -> rx.RegexNode:
    """`node` limited to strings of lo..hi code points.

    When the limit is implied by `node`, that is `node`; when `node` is fixed-width pieces around
    a single repeat of one-character items (such as `[a-z][a-z0-9]*`), the repeat's bounds change.
    Otherwise it is `node` minus the strings of other lengths (`rx.Difference`), whose automaton
    counts characters through `node`'s: a `GrammarError` when that count times `node`'s size is
    over `COUNTED_PATTERN_MAX`.
    """
    n_lo, n_hi = length_bounds(node)
    if n_lo >= lo and (hi is None or (n_hi is not None and n_hi <= hi)):
        return node
    items = node.items if isinstance(node, rx.Concat) else (node,)
    variable = [i for i, item in enumerate(items) if length_bounds(item)[0] != length_bounds(item)[1]]
    if len(variable) == 1:
        k = variable[0]
        rep = items[k]
        if isinstance(rep, rx.Repeat) and length_bounds(rep.item) == (1, 1):
            fixed = n_lo - rep.min
            new_min = max(rep.min, lo - fixed)
            new_max = rep.max if hi is None else (hi - fixed if rep.max is None else min(rep.max, hi - fixed))
            return rx.concat(*items[:k], rx.repeat(rep.item, new_min, new_max), *items[k + 1 :])
    counted = rx.size(node) * (lo if hi is None else hi + 1)
    if counted > COUNTED_PATTERN_MAX:
        raise GrammarError(
            "minLength/maxLength combined with this pattern or format cannot be enforced exactly: "
            f"counting {lo if hi is None else hi + 1} lengths through a pattern of size {rx.size(node)} "
            f"is over {COUNTED_PATTERN_MAX}",
            pointer=pointer,
        )
    # Two differences rather than one of their union: each right side is one chain of characters,
    # which the automaton compiler lays out directly (the union needs a subset construction). The
    # long one first: its product counts through `node`'s states; the short one then pairs only
    # with the first few characters, where a product of the other order would count through its
    # (larger, not minimised) automaton.
    if hi is not None:
        node = rx.difference(node, rx.repeat(rx.ANY_CHAR, hi + 1, None))
    return rx.difference(node, rx.repeat(rx.ANY_CHAR, 0, lo - 1)) if lo else node


def _map_first(node: rx.RegexNode, first) -> rx.RegexNode:
    """`node` with its first character's class `c` replaced by `first(c)` (a regex)."""
    if isinstance(node, rx.CharClass):
        return first(node)
    if isinstance(node, rx.Alt):
        return rx.alt(*(_map_first(i, first) for i in node.items))
    if isinstance(node, rx.Concat):
        head, tail = node.items[0], rx.concat(*node.items[1:])
        out = rx.concat(_map_first(head, first), tail)
        return rx.alt(out, _map_first(tail, first)) if rx.is_nullable(head) else out
    if isinstance(node, rx.Difference):  # both uses (derivative, first class) distribute over it
        return rx.difference(_map_first(node.left, first), _map_first(node.right, first))
    rest = rx.repeat(node.item, max(node.min - 1, 0), None if node.max is None else node.max - 1)
    return rx.concat(_map_first(node.item, first), rest)


def _first_in(node: rx.RegexNode, cc: rx.CharClass) -> rx.RegexNode:
    """The strings of `node` whose first character is in `cc`."""
    return _map_first(node, lambda c: _intersect(c, cc))


# Kept: `matches` over many enum values steps the same few nodes by the same characters (a lazy
# DFA over derivatives); 2,000 enum values under an unanchored pattern took 2.3 s without it,
# 0.12 s with it. 1,024 entries: the trees it keeps are mostly shared with the pattern's own.
@lru_cache(maxsize=1024)
def _derivative(node: rx.RegexNode, ch: int) -> rx.RegexNode:
    """The strings s such that chr(ch) + s is in `node` (Brzozowski)."""
    return _map_first(node, lambda c: rx.EMPTY if any(lo <= ch <= hi for lo, hi in c.ranges) else rx.NOTHING)


def matches(node: rx.RegexNode, text: str) -> bool:
    """Whether `node` matches the whole of `text` (by derivatives: the grammar's own reading of a
    pattern, not Python's `re`)."""
    for ch in text:
        node = _derivative(node, ord(ch))
        if rx.is_nothing(node):
            return False
    return rx.is_nullable(node)


def subtract_words(node: rx.RegexNode, words: set[str] | frozenset[str]) -> rx.RegexNode:
    """The strings of `node` other than `words`.

    When `node` has strings of every length (the keys an object may add: any string), this is an
    `rx.Difference`, never empty, which the automaton compiler builds in one subset construction.
    Otherwise the words' trie is walked with derivatives, so that an empty result is `NOTHING`
    (callers drop what cannot match)."""
    if length_bounds(node)[1] is None:
        return rx.difference(node, rx.words(words))
    return _subtract(node, frozenset(words))


@lru_cache(maxsize=64)
def _subtract(node: rx.RegexNode, words: frozenset[str]) -> rx.RegexNode:
    if not words or rx.is_nothing(node):
        return node
    heads = sorted({w[0] for w in words if w})
    others = rx.char_class([(ord(c), ord(c)) for c in heads], negate=True)
    parts = [_first_in(node, others)]
    for c in heads:
        rest = _subtract(_derivative(node, ord(c)), frozenset(w[1:] for w in words if w and w[0] == c))
        parts.append(rx.concat(rx.literal(c), rest))
    if "" not in words and rx.is_nullable(node):
        parts.append(rx.EMPTY)
    return rx.alt(*parts)
