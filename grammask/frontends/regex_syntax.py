"""Regex syntax (Python `re` or ECMAScript flavour) → `grammask.ir.regex` syntax tree.

Two readings of a pattern:

- `parse_regex`: the strings the pattern matches as a whole (`re.fullmatch`).
- `parse_search_pattern`: the strings that contain a match (JSON Schema `pattern`, `re.search`).

Anchors (`^ $ \\A \\Z \\z`) are accepted where they can only assert the start or end of the text:
a start anchor may open the pattern, a top-level alternative, or a group in such a place; an end
anchor may close them. Elsewhere, and under a repeat, they raise. Text the anchors let a search
skip is kept per alternative, so `^a|b$` reads as "starts with a, or ends with b".

Inline flags (Python flavour, global `(?s)` at the start or scoped `(?s:...)`, `(?-s:...)`): `s`
(dot matches newline), `m` (changes nothing for full matches; search anchors match at line
boundaries), `x` (verbose), `a` (ASCII `\\d \\w \\s`) and `u` are supported; `i` (case folding)
raises as unsupported and `L` as invalid. The ECMA flavour accepts the scoped `s`/`m` modifiers.

Lookaheads (`(?=X)`, `(?!X)`) are accepted in the pattern's top-level sequence (of any top-level
alternative): the rest of the text from there, to its end, is intersected with `X` followed by
anything (or `X` itself where `X` ends with `$`), or has those strings taken out. A start anchor
inside one is accepted where the lookahead directly follows `^`.

Two kinds of `GrammarError`, both with the character position: "invalid regex syntax: ..." for
what the flavour's own engine rejects, "unsupported regex construct: ..." for valid patterns that
no finite automaton can match or grammask does not read (backreferences, lookbehind, lookaheads
inside groups, word boundaries, possessive and atomic forms, case-insensitivity, Unicode property
escapes).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Literal

import numpy as np

from grammask.errors import GrammarError
from grammask.ir import regex as rx
from grammask.limits import check_deadline

__all__ = ["Flavor", "parse_regex", "parse_search_pattern"]

Flavor = Literal["python", "ecma"]

_HEX = "0123456789abcdefABCDEF"
_OCT = "01234567"
_DIGITS = "0123456789"
_ANY_TEXT = rx.star(rx.ANY_CHAR)
_NEWLINE = rx.literal("\n")
#: Characters of `\s` under Python's ASCII flag; `\d` and `\w` follow.
_ASCII_SPACE = ((9, 13), (32, 32))
_ASCII_DIGIT = ((48, 57),)
_ASCII_WORD = ((48, 57), (65, 90), (95, 95), (97, 122))
#: ECMAScript LineTerminator; its WhiteSpace is these Zs-like characters plus category Zs.
_ECMA_LINE_TERMINATORS = ((10, 10), (13, 13), (0x2028, 0x2029))
_ECMA_EXTRA_SPACE = ((9, 9), (11, 12), (0xFEFF, 0xFEFF))
_SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "f": 12, "v": 11}
#: Groups nested deeper than this raise, in regexes, GBNF and Lark (their parsers recurse per level).
MAX_GROUP_DEPTH = 100
_VERBOSE_SKIP = " \t\n\r\v\f#"
#: Characters that stand for themselves anywhere in a sequence (with the verbose flag, not its skips).
_PLAIN_RUN = re.compile(r"[^\\()\[\]{}|.^$*+?]+")
_PLAIN_RUN_VERBOSE = re.compile(r"[^\\()\[\]{}|.^$*+?\s#]+")
_SUPPORTED_FLAGS = {"python": "aimsuxL", "ecma": "ims"}


#: Patterns parsed lately, with their trees (immutable, so shared): some schemas write the same
#: `pattern` or `patternProperties` on every object. Over every 5th MaskBench file, 827 of 1,055
#: parses were of a pattern parsed before (0.27 s), a third of the front-end's time on the worst
#: schema; 64 entries keep 807 of those hits and about 800 tracked objects (256 kept 2,300, which
#: every full collection of a long-running process scans). A failed parse is not kept.
_PARSED = 64


@lru_cache(maxsize=_PARSED)
def parse_regex(pattern: str, *, flavor: Flavor = "python") -> rx.RegexNode:
    """The strings `pattern` matches as a whole."""
    return rx.alt(*_Parser(pattern, flavor, search=False).parse().variants.values())


@lru_cache(maxsize=_PARSED)
def parse_search_pattern(pattern: str, *, flavor: Flavor = "ecma") -> rx.RegexNode:
    """The strings that contain a match of `pattern` (unanchored unless anchored with ^/$)."""
    piece = _Parser(pattern, flavor, search=True).parse()
    return rx.alt(
        *(
            rx.concat(_ANY_TEXT if lead is None else lead, node, _ANY_TEXT if trail is None else trail)
            for (lead, trail), node in piece.variants.items()
        )
    )


# A parsed piece of pattern, split by anchoring: `variants` maps (lead, trail) to the strings
# matched along paths through that piece's start / end anchors, where lead (trail) is the text a
# search may skip before (after) the match, or None when no anchor was passed.
_Key = tuple[rx.RegexNode | None, rx.RegexNode | None]


@dataclass(frozen=True)
class _Lookahead:
    """`(?=body)` (or `(?!body)` when `negated`) at pattern position `at`."""

    body: _Piece
    negated: bool
    at: int


@dataclass(frozen=True)
class _Piece:
    variants: dict[_Key, rx.RegexNode]
    start_anchor: int | None = None  # position of a start anchor inside, if any
    end_anchor: int | None = None
    is_anchor: bool = False  # a bare anchor or a lookahead (nothing to repeat)
    lookahead: _Lookahead | None = None

    @staticmethod
    def of(node: rx.RegexNode) -> _Piece:
        return _Piece({(None, None): node})


def _concat(pieces: list[_Piece]) -> _Piece:
    if all(len(p.variants) == 1 and (None, None) in p.variants for p in pieces):
        # No anchors inside: one concatenation (linear in the number of pieces).
        return _with_anchors({(None, None): rx.concat(*(p.variants[(None, None)] for p in pieces))}, pieces)
    variants: dict[_Key, rx.RegexNode] = {(None, None): rx.EMPTY}
    for piece in pieces:
        joined: dict[_Key, list[rx.RegexNode]] = {}
        for (lead_a, trail_a), a in variants.items():
            for (lead_b, trail_b), b in piece.variants.items():
                key = (lead_a if lead_b is None else lead_b, trail_a if trail_b is None else trail_b)
                joined.setdefault(key, []).append(rx.concat(a, b))
        variants = {key: rx.alt(*nodes) for key, nodes in joined.items()}
    return _with_anchors(variants, pieces)


def _union(pieces: list[_Piece]) -> _Piece:
    """The alternation of `pieces`, each variant's branches joined by one `rx.alt` (linear time)."""
    grouped: dict[_Key, list[rx.RegexNode]] = {}
    for piece in pieces:
        for key, node in piece.variants.items():
            grouped.setdefault(key, []).append(node)
    return _with_anchors({key: rx.alt(*nodes) for key, nodes in grouped.items()}, pieces)


def _with_anchors(variants: dict[_Key, rx.RegexNode], parts: list[_Piece]) -> _Piece:
    """A piece made of `parts`, remembering the first start and end anchor among them."""
    starts = [p.start_anchor for p in parts if p.start_anchor is not None]
    ends = [p.end_anchor for p in parts if p.end_anchor is not None]
    return _Piece(variants, starts[0] if starts else None, ends[0] if ends else None)


class _Parser:
    def __init__(self, pattern: str, flavor: Flavor, *, search: bool) -> None:
        if flavor not in _SUPPORTED_FLAGS:
            raise ValueError(f"unknown regex flavor {flavor!r}: expected 'python' or 'ecma'")
        if not isinstance(pattern, str):
            raise TypeError(f"a regex pattern must be a str, not {type(pattern).__name__}")
        self.p = pattern
        self.i = 0
        self.python = flavor == "python"
        self.flags: frozenset[str] = frozenset()
        self.group_names: set[str] = set()
        self.at_pattern_start = True  # only global flag groups seen so far
        self.depth = 0
        #: Whether the text may go on after the match (a search): what a lookahead sees after an
        #: unanchored end.
        self.search = search

    # -- errors -------------------------------------------------------------------------------

    def invalid(self, what: str, at: int | None = None) -> GrammarError:
        position = self.i if at is None else at
        return GrammarError(f"invalid regex syntax: {what}", position=position, source=self.p)

    def unsupported(self, what: str, at: int) -> GrammarError:
        return GrammarError(f"unsupported regex construct: {what}", position=at, source=self.p)

    # -- structure ----------------------------------------------------------------------------

    def parse(self) -> _Piece:
        piece = self.alternation()
        if self.i < len(self.p):
            raise self.invalid("unbalanced parenthesis ')'")
        return piece

    def alternation(self) -> _Piece:
        branches = [self.sequence()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            if not len(branches) & 255:
                check_deadline(f"parsing a regex at position {self.i}")
            branches.append(self.sequence())
        return _union(branches)

    def sequence(self) -> _Piece:
        items: list[_Piece] = []
        repeated = False  # whether the last item carries a quantifier
        p = self.p
        while self.i < len(p) and p[self.i] not in "|)":
            c = p[self.i]
            if "x" in self.flags and c in _VERBOSE_SKIP:
                self.skip_verbose()
                continue
            run = (_PLAIN_RUN_VERBOSE if "x" in self.flags else _PLAIN_RUN).match(p, self.i)
            if run is not None:
                # A run of plain characters is one literal (a 100,000-word alternation parses in
                # one pass); its last character stays alone when a quantifier follows it.
                end = run.end() - (run.end() < len(p) and p[run.end()] in "*+?{")
                if end > self.i:
                    items.append(_Piece.of(rx.literal(p[self.i : end])))
                    self.i, self.at_pattern_start, repeated = end, False, False
                    continue
            start = self.i
            bounds = self.quantifier()
            if bounds is None:
                piece = self.atom()
                if piece is not None:
                    items.append(piece)
                    self.at_pattern_start = False
                repeated = False
                continue
            if not items or items[-1].is_anchor:
                raise self.invalid("nothing to repeat", start)
            if repeated:
                raise self.invalid("multiple repeat", start)
            if self.i < len(p) and p[self.i] == "?":
                self.i += 1  # lazy: same language
            elif self.i < len(p) and p[self.i] == "+":
                if not self.python:
                    raise self.invalid("nothing to repeat", self.i)
                raise self.unsupported("possessive quantifier", start)
            items[-1] = self.repeat(items[-1], bounds)
            repeated = True
        for piece in items[1:]:
            if piece.start_anchor is not None:
                raise self.unsupported("start anchor not at the start of the pattern", piece.start_anchor)
        for piece in items[:-1]:
            if piece.end_anchor is not None:
                raise self.unsupported("end anchor not at the end of the pattern", piece.end_anchor)
        looks = [k for k, piece in enumerate(items) if piece.lookahead is not None]
        if looks:
            return self.with_lookaheads(items, looks)
        return _concat(items)

    def with_lookaheads(self, items: list[_Piece], looks: list[int]) -> _Piece:
        """A top-level sequence with lookaheads at `looks`: right to left, the text from each
        lookahead to the end (the rest of the sequence and what a search may skip after it) is
        intersected with the lookahead's language, or has it taken out."""
        first = items[looks[0]].lookahead
        assert first is not None
        if self.depth:
            raise self.unsupported("lookahead inside a group", first.at)
        head = _concat(items[: looks[0]])
        at_start = all(key == (rx.EMPTY, None) and rx.is_empty(node) for key, node in head.variants.items())
        rest = self.to_end(_concat(items[looks[-1] + 1 :]), at_start=False)
        for k, before in zip(reversed(looks), reversed([None, *looks[:-1]]), strict=True):
            look = items[k].lookahead
            assert look is not None
            ahead = self.to_end(look.body, at_start=at_start and before is None, look=look)
            rest = rx.difference(rest, ahead) if look.negated else rx.intersect(rest, ahead)
            if before is not None:  # the items between the lookahead before and this one
                rest = rx.concat(_concat(items[before + 1 : k]).variants[(None, None)], rest)
        # The rest already runs to the end of the text: an empty trail, so a search adds none.
        return _Piece(
            {(lead, rx.EMPTY): rx.concat(node, rest) for (lead, _), node in head.variants.items()},
            start_anchor=head.start_anchor,
        )

    def to_end(self, piece: _Piece, *, at_start: bool, look: _Lookahead | None = None) -> rx.RegexNode:
        """The texts from `piece`'s start to the end of the whole text: what it matches, then its
        end anchor's trail or, without one, anything (a search, or a lookahead's body) or nothing
        (a full match). A start anchor inside is met only `at_start` (a lookahead right after `^`)."""
        parts = []
        for (lead, trail), node in piece.variants.items():
            if lead is not None and not (at_start and rx.is_empty(lead)):
                position = piece.start_anchor if piece.start_anchor is not None else 0
                raise self.unsupported("start anchor inside a lookahead not right after ^", position)
            if trail is None:
                trail = _ANY_TEXT if self.search or look is not None else rx.EMPTY
            parts.append(rx.concat(node, trail))
        return rx.alt(*parts)

    def repeat(self, piece: _Piece, bounds: tuple[int, int | None]) -> _Piece:
        anchor = piece.start_anchor if piece.start_anchor is not None else piece.end_anchor
        if anchor is not None:
            raise self.unsupported("anchor inside a repeated group", anchor)
        return _Piece.of(rx.repeat(piece.variants[(None, None)], *bounds))

    def quantifier(self) -> tuple[int, int | None] | None:
        """Consume a quantifier at the cursor and return its bounds, or return None."""
        p, i = self.p, self.i
        c = p[i]
        if c in "*+?":
            self.i += 1
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        if c != "{":
            return None
        j = i + 1
        while j < len(p) and p[j] in _DIGITS:
            j += 1
        lo = hi = p[i + 1 : j]
        comma = j < len(p) and p[j] == ","
        if comma:
            k = j + 1
            while k < len(p) and p[k] in _DIGITS:
                k += 1
            hi, j = p[j + 1 : k], k
        if j >= len(p) or p[j] != "}" or not lo and (not comma or not self.python):
            return None  # not a quantifier: `{` is a literal
        self.i = j + 1
        low = int(lo) if lo else 0
        high = int(hi) if hi else None
        if high is not None and high < low:
            raise self.invalid("min repeat greater than max repeat", i)
        return low, high

    def skip_verbose(self) -> None:
        p = self.p
        if p[self.i] == "#":
            end = p.find("\n", self.i)
            self.i = len(p) if end < 0 else end + 1
        else:
            self.i += 1

    # -- atoms --------------------------------------------------------------------------------

    def atom(self) -> _Piece | None:
        """One atom (None for something that matches nothing at all, like a comment)."""
        p, start = self.p, self.i
        c = p[start]
        self.i += 1
        if c == "(":
            return self.group(start)
        if c == "[":
            return _Piece.of(self.char_class(start))
        if c == ".":
            return _Piece.of(self.dot())
        if c == "^":
            return self.start_anchor(start, multiline_aware=True)
        if c == "$":
            return self.end_anchor(start, dollar=True)
        if c == "\\":
            return self.escape(start)
        return _Piece.of(_char(ord(c)))

    def dot(self) -> rx.RegexNode:
        if "s" in self.flags:
            return rx.ANY_CHAR
        if self.python:
            return rx.char_class([(10, 10)], negate=True)
        return rx.char_class(_ECMA_LINE_TERMINATORS, negate=True)

    def start_anchor(self, at: int, *, multiline_aware: bool) -> _Piece:
        lead = rx.EMPTY
        if multiline_aware and "m" in self.flags:
            lead = rx.optional(rx.concat(_ANY_TEXT, _NEWLINE))
        return _Piece({(lead, None): rx.EMPTY}, start_anchor=at, is_anchor=True)

    def end_anchor(self, at: int, *, dollar: bool) -> _Piece:
        trail = rx.EMPTY
        if dollar and "m" in self.flags:
            trail = rx.optional(rx.concat(_NEWLINE, _ANY_TEXT))
        elif dollar and self.python:
            trail = rx.optional(_NEWLINE)  # Python's `$` also matches before a final newline
        return _Piece({(None, trail): rx.EMPTY}, end_anchor=at, is_anchor=True)

    def group(self, start: int) -> _Piece | None:
        p = self.p
        if not p.startswith("?", self.i):
            return self.group_body(start, self.flags)
        self.i += 1
        rest = p[self.i :]
        if rest.startswith(":"):
            self.i += 1
            return self.group_body(start, self.flags)
        if rest.startswith(("=", "!")):
            self.i += 1
            body = self.group_body(start, self.flags)
            return _Piece({(None, None): rx.EMPTY}, is_anchor=True, lookahead=_Lookahead(body, rest[0] == "!", start))
        if rest.startswith(("<=", "<!")):
            raise self.unsupported("lookbehind", start)
        if rest.startswith(">"):
            raise self.unsupported("atomic group", start)
        if self.python and rest.startswith("P="):
            raise self.unsupported("backreference (?P=name)", start)
        if self.python and rest.startswith("P<") or not self.python and rest.startswith("<"):
            self.i += 2 if self.python else 1
            self.group_name()
            return self.group_body(start, self.flags)
        if self.python and rest.startswith("#"):
            end = p.find(")", self.i)
            if end < 0:
                raise self.invalid("missing ), unterminated comment", start)
            self.i = end + 1
            return None
        if self.python and rest.startswith("("):
            raise self.unsupported("conditional group", start)
        return self.flag_group(start)

    def group_name(self) -> None:
        end = self.p.find(">", self.i)
        name = self.p[self.i : end] if end >= 0 else ""
        if not name.isidentifier():
            raise self.invalid(f"bad group name {name!r}")
        if name in self.group_names:
            raise self.invalid(f"redefinition of group name {name!r}")
        self.group_names.add(name)
        self.i = end + 1

    def group_body(self, start: int, flags: frozenset[str]) -> _Piece:
        if self.depth >= MAX_GROUP_DEPTH:
            reason = f"regex too deeply nested: over {MAX_GROUP_DEPTH} groups"
            raise GrammarError(reason, position=start, source=self.p)
        outer = self.flags
        self.flags, self.depth = flags, self.depth + 1
        self.at_pattern_start = False
        piece = self.alternation()
        self.flags, self.depth = outer, self.depth - 1
        if self.i >= len(self.p):
            raise self.invalid("missing ), unterminated subpattern", start)
        self.i += 1
        return piece

    def flag_group(self, start: int) -> _Piece | None:
        p = self.p
        allowed = _SUPPORTED_FLAGS["python" if self.python else "ecma"]
        on = off = ""
        while self.i < len(p) and p[self.i] in allowed:
            on += p[self.i]
            self.i += 1
        if self.i < len(p) and p[self.i] == "-":
            self.i += 1
            while self.i < len(p) and p[self.i] in allowed:
                off += p[self.i]
                self.i += 1
            if not off:
                raise self.invalid("missing flag after '-'")
        if self.i >= len(p) or p[self.i] not in ":)" or not (on or off) or (off and p[self.i] == ")"):
            raise self.invalid("unknown extension or bad inline flags", start + 1)
        if "L" in on:
            raise self.invalid("bad inline flags: cannot use 'L' flag with a str pattern", start)
        if "a" in on and "u" in on or set("au") & set(off):
            raise self.invalid("bad inline flags: 'a' and 'u' are exclusive and cannot be turned off", start)
        if "i" in on + off:
            raise self.unsupported("case-insensitive flag (?i)", start)
        flags = (self.flags | set(on)) - set(off)
        if p[self.i] == ":":
            self.i += 1
            return self.group_body(start, frozenset(flags))
        if not self.python:
            raise self.invalid("inline flags must be scoped: (?flags:...)", start)
        if not self.at_pattern_start:
            raise self.invalid("global flags not at the start of the expression", start)
        self.i += 1
        self.flags = frozenset(flags)
        return None

    # -- escapes ------------------------------------------------------------------------------

    def escape(self, start: int) -> _Piece:
        """An escape outside a class: an anchor, a class shorthand or one character."""
        c = self.p[self.i : self.i + 1]
        if c in ("A", "Z", "z"):
            self.i += 1
            if c == "A":
                return self.start_anchor(start, multiline_aware=False)
            return self.end_anchor(start, dollar=False)
        if c in ("b", "B"):
            raise self.unsupported(f"word boundary \\{c}", start)
        if c == "k" and not self.python:
            raise self.unsupported("backreference \\k<name>", start)
        found = self.class_escape(start, in_class=False)
        return _Piece.of(_char(found) if isinstance(found, int) else found)

    def class_escape(self, start: int, *, in_class: bool) -> int | rx.CharClass:
        """The escape after the backslash at `start`: a code point or a shorthand class."""
        p = self.p
        if self.i >= len(p):
            raise self.invalid("bad escape (end of pattern)", start)
        c = p[self.i]
        self.i += 1
        if c in "dDwWsS":
            return self.shorthand(c)
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c]
        if c in _DIGITS:
            return self.numeric_escape(c, start, in_class=in_class)
        if c == "b" and in_class:
            return 8
        if c == "x":
            return self.hex_digits(2, start)
        if c == "u":
            if not self.python and p.startswith("{", self.i):
                return self.braced_hex(start)
            return self.utf16_escape(start)
        if self.python and c == "U":
            return self.hex_digits(8, start)
        if self.python and c == "N":
            return self.named_char(start)
        if self.python and c == "a":
            return 7
        if not self.python and c == "c" and p[self.i : self.i + 1].isalpha() and p[self.i].isascii():
            self.i += 1
            return ord(p[self.i - 1]) % 32
        if not self.python and c in "pP":
            raise self.unsupported(f"Unicode property escape \\{c}", start)
        if c.isascii() and c.isalnum():
            raise self.invalid(f"bad escape \\{c}", start)
        return ord(c)

    def numeric_escape(self, c: str, start: int, *, in_class: bool) -> int:
        """`\\0`, octal (Python) or a backreference, which raises."""
        p = self.p
        if self.python and c in _OCT:
            following = p[self.i : self.i + 2]
            three_octal = len(following) == 2 and all(ch in _OCT for ch in following)
            if c == "0" or in_class or three_octal:
                digits = c + self.take(_OCT, 2)
                if int(digits, 8) > 0o377:
                    raise self.invalid(f"octal escape value \\{digits} outside of range 0-0o377", start)
                return int(digits, 8)
        if not self.python and c == "0" and not p[self.i : self.i + 1].isdigit():
            return 0
        if in_class:
            raise self.invalid(f"bad escape \\{c}", start)
        raise self.unsupported("backreference", start)

    def take(self, chars: str, limit: int) -> str:
        j = self.i
        while j < len(self.p) and j - self.i < limit and self.p[j] in chars:
            j += 1
        taken, self.i = self.p[self.i : j], j
        return taken

    def hex_digits(self, count: int, start: int) -> int:
        digits = self.take(_HEX, count)
        if len(digits) < count:
            raise self.invalid(f"incomplete escape {self.p[start : self.i]}", start)
        value = int(digits, 16)
        if value > rx.MAX_CODEPOINT:
            raise self.invalid(f"bad escape {self.p[start : self.i]}: beyond U+10FFFF", start)
        return value

    def braced_hex(self, start: int) -> int:
        self.i += 1
        digits = self.take(_HEX, 8)
        if not digits or not self.p.startswith("}", self.i):
            raise self.invalid("bad escape \\u{...}", start)
        self.i += 1
        if int(digits, 16) > rx.MAX_CODEPOINT:
            raise self.invalid("bad escape \\u{...}: beyond U+10FFFF", start)
        return int(digits, 16)

    def utf16_escape(self, start: int) -> int:
        """`\\uXXXX`; in ECMA flavour a surrogate pair written as two escapes is one character."""
        value = self.hex_digits(4, start)
        if not self.python and 0xD800 <= value < 0xDC00 and self.p.startswith("\\u", self.i):
            saved = self.i
            self.i += 2
            low = self.take(_HEX, 4)
            if len(low) == 4 and 0xDC00 <= int(low, 16) <= 0xDFFF:
                return 0x10000 + ((value - 0xD800) << 10) + (int(low, 16) - 0xDC00)
            self.i = saved
        return value

    def named_char(self, start: int) -> int:
        end = self.p.find("}", self.i)
        if not self.p.startswith("{", self.i) or end < 0:
            raise self.invalid("missing {...} after \\N", start)
        name = self.p[self.i + 1 : end]
        self.i = end + 1
        try:
            return ord(unicodedata.lookup(name))
        except KeyError:
            raise self.invalid(f"undefined character name {name!r}", start) from None

    def shorthand(self, c: str) -> rx.CharClass:
        kind = c.lower()
        if not self.python or "a" in self.flags:
            table = {"d": _ASCII_DIGIT, "w": _ASCII_WORD, "s": _ASCII_SPACE}[kind]
            if not self.python and kind == "s":
                table = _ecma_space()
        else:
            table = _unicode_table(kind)
        return rx.char_class(table, negate=c.isupper())

    # -- classes ------------------------------------------------------------------------------

    def char_class(self, start: int) -> rx.RegexNode:
        p = self.p
        negate = p.startswith("^", self.i)
        self.i += negate
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            if self.i >= len(p):
                raise self.invalid("unterminated character set", start)
            if p[self.i] == "]" and not (first and self.python):
                self.i += 1
                break
            first = False
            item_at = self.i
            lo = self.class_item()
            if p.startswith("-", self.i) and self.i + 1 < len(p) and p[self.i + 1] != "]":
                self.i += 1
                hi = self.class_item()
                if isinstance(lo, int) and isinstance(hi, int):
                    if hi < lo:
                        raise self.invalid(f"bad character range {p[item_at : self.i]}", item_at)
                    ranges.append((lo, hi))
                    continue
                if self.python:
                    raise self.invalid(f"bad character range {p[item_at : self.i]}", item_at)
                ranges.append((45, 45))  # ECMA (Annex B): a class shorthand makes '-' literal
                for part in (lo, hi):
                    ranges.extend([(part, part)] if isinstance(part, int) else part.ranges)
                continue
            ranges.extend([(lo, lo)] if isinstance(lo, int) else lo.ranges)
        return rx.char_class(ranges, negate=negate)

    def class_item(self) -> int | rx.CharClass:
        """One character (its code point) or a shorthand class inside `[...]`."""
        start = self.i
        self.i += 1
        if self.p[start] != "\\":
            return ord(self.p[start])
        return self.class_escape(start, in_class=True)


def _char(cp: int) -> rx.CharClass:
    return rx.CharClass(((cp, cp),))


@cache
def _unicode_table(kind: str) -> tuple[tuple[int, int], ...]:
    """Code point ranges of Python's Unicode `\\d` (decimal digits), `\\w` (alphanumerics and `_`)
    and `\\s` (whitespace), from the running interpreter's `str` methods."""
    test = {"d": str.isdecimal, "w": str.isalnum, "s": str.isspace}[kind]
    n = rx.MAX_CODEPOINT + 1
    mask = np.fromiter(map(test, map(chr, range(n))), dtype=bool, count=n)
    if kind == "w":
        mask[ord("_")] = True
    return _ranges_of(mask)


@cache
def _ecma_space() -> tuple[tuple[int, int], ...]:
    """ECMAScript `\\s`: WhiteSpace (with category Zs) and LineTerminator."""
    zs = [(c, c) for c in range(0x10000) if unicodedata.category(chr(c)) == "Zs"]
    return rx.char_class(zs + list(_ECMA_EXTRA_SPACE) + list(_ECMA_LINE_TERMINATORS)).ranges


def _ranges_of(mask: np.ndarray) -> tuple[tuple[int, int], ...]:
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    return tuple((int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2], strict=True))
