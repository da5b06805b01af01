"""llama.cpp GBNF → grammar IR.

The parser follows llama.cpp's own (`src/llama-grammar.cpp`) character for character: the same
whitespace and newline rules (a rule ends at a newline unless inside parentheses or right after `|`),
the same escapes, the same character-class ranges (`[a-]` is `a` or `-`), and repetition operators
that apply to the item just before them, including one already repeated (`x*?`). Where llama.cpp is
lax, grammask is strict or wider, and says so in docs/grammars.md: a rule defined twice, a
repetition `{m,n}` with `n < m` and code points beyond U+10FFFF are errors; left recursion and
repetition counts above 2000 are accepted; negated tokens (`!<...>`) are rejected because the IR
has no "any token but" terminal.
"""

from __future__ import annotations

from grammask.errors import GrammarError
from grammask.frontends.regex_syntax import MAX_GROUP_DEPTH
from grammask.ir import grammar as g
from grammask.ir import regex as rx
from grammask.limits import check_deadline

__all__ = ["grammar_from_ebnf"]

_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


def grammar_from_ebnf(text: str, *, start: str = "root") -> g.Grammar:
    """The grammar of a llama.cpp GBNF text, starting at rule `start`.

    Raises `GrammarError` (with the offending position) for a syntax error, a rule referenced but
    never defined, a rule defined twice, or a missing start rule.
    """
    return _Parser(text).parse(start)


def _is_word_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "-")


class _Parser:
    """Recursive descent over `text`; `pos` is the index of the next unread character."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"a GBNF grammar must be a str, not {type(text).__name__}")
        self.text = text
        self.pos = 0
        self.rules: dict[str, g.Expr] = {}
        self.defined_at: dict[str, int] = {}
        self.referenced_at: dict[str, int] = {}
        self.depth = 0  # groups open around `pos`

    def error(self, reason: str, position: int | None = None) -> GrammarError:
        return GrammarError(reason, position=self.pos if position is None else position, source=self.text)

    def peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.text[i] if i < len(self.text) else ""

    def parse(self, start: str) -> g.Grammar:
        self.skip_space(newline_ok=True)
        while self.pos < len(self.text):
            self.parse_rule()
        for name, where in self.referenced_at.items():
            if name not in self.rules:
                raise self.error(f"undefined rule {name!r}", where)
        if start not in self.rules:
            raise GrammarError(f"the grammar has no start rule {start!r} (define `{start} ::= ...`)")
        return g.Grammar(self.rules, start=start)

    def skip_space(self, newline_ok: bool) -> None:
        """Skip blanks and `#` comments, and line breaks too where `newline_ok`."""
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c == "#":
                while self.pos < n and text[self.pos] not in "\r\n":
                    self.pos += 1
            elif c in " \t" or (newline_ok and c in "\r\n"):
                self.pos += 1
            else:
                return

    def parse_name(self) -> str:
        begin = self.pos
        while _is_word_char(self.peek()):
            self.pos += 1
        if self.pos == begin:
            raise self.error("expected a rule name (letters, digits and dashes)")
        return self.text[begin : self.pos]

    def parse_int(self) -> int:
        begin = self.pos
        while self.peek().isascii() and self.peek().isdigit():
            self.pos += 1
        if self.pos == begin:
            raise self.error("expected an integer")
        return int(self.text[begin : self.pos])

    def parse_rule(self) -> None:
        begin = self.pos
        check_deadline(f"parsing GBNF at position {begin}")
        name = self.parse_name()
        self.skip_space(newline_ok=False)
        if not self.text.startswith("::=", self.pos):
            raise self.error(f"expected '::=' after the rule name {name!r}")
        if name in self.defined_at:
            line = self.text.count("\n", 0, self.defined_at[name]) + 1
            raise self.error(f"rule {name!r} is defined twice (first on line {line})", begin)
        self.defined_at[name] = begin
        self.pos += 3
        self.skip_space(newline_ok=True)
        self.rules[name] = self.parse_alternates(nested=False)
        if self.peek() == "\r":
            self.pos += 2 if self.peek(1) == "\n" else 1
        elif self.peek() == "\n":
            self.pos += 1
        elif self.pos < len(self.text):
            raise self.error(f"unexpected {self.peek()!r}: expected a symbol, '|', or the end of the line")
        self.skip_space(newline_ok=True)

    def parse_alternates(self, nested: bool) -> g.Expr:
        options = [self.parse_sequence(nested)]
        while self.peek() == "|":
            self.pos += 1
            self.skip_space(newline_ok=True)
            options.append(self.parse_sequence(nested))
        return g.alt(*options)

    def parse_sequence(self, nested: bool) -> g.Expr:
        items: list[g.Expr] = []
        while self.pos < len(self.text):
            c = self.peek()
            begin = self.pos
            if c == '"':
                self.pos += 1
                items.append(g.literal(self.parse_literal_body()))
            elif c == "[":
                self.pos += 1
                items.append(g.lex(self.parse_char_class()))
            elif c in "<!":
                items.append(self.parse_token())
            elif _is_word_char(c):
                name = self.parse_name()
                self.referenced_at.setdefault(name, begin)
                items.append(g.ref(name))
            elif c == "(":
                if self.depth >= MAX_GROUP_DEPTH:
                    raise self.error(f"groups nested too deeply: over {MAX_GROUP_DEPTH} levels", begin)
                self.pos += 1
                self.depth += 1
                self.skip_space(newline_ok=True)
                items.append(self.parse_alternates(nested=True))
                if self.peek() != ")":
                    raise self.error("expected ')' to close the group opened", begin)
                self.pos += 1
                self.depth -= 1
            elif c == ".":
                self.pos += 1
                items.append(g.lex(rx.ANY_CHAR))
            elif c in "*+?{":
                if not items:
                    raise self.error(f"{c!r} has no preceding item to repeat")
                low, high = self.parse_repetition(nested)
                items[-1] = g.rep(items[-1], low, high)
            else:
                break
            self.skip_space(newline_ok=nested)
        return g.seq(*items)

    def parse_repetition(self, nested: bool) -> tuple[int, int | None]:
        """`*`, `+`, `?`, `{m}`, `{m,}` or `{m,n}` → (min, max); max None is unbounded."""
        c = self.peek()
        begin = self.pos
        self.pos += 1
        if c != "{":
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        self.skip_space(newline_ok=nested)
        low = self.parse_int()
        self.skip_space(newline_ok=nested)
        high: int | None = low
        if self.peek() == ",":
            self.pos += 1
            self.skip_space(newline_ok=nested)
            high = self.parse_int() if self.peek().isascii() and self.peek().isdigit() else None
            self.skip_space(newline_ok=nested)
        elif self.peek() != "}":
            raise self.error("expected ',' or '}' in the repetition")
        if self.peek() != "}":
            raise self.error("expected '}' to close the repetition")
        self.pos += 1
        if high is not None and high < low:
            raise self.error(f"repetition {{{low},{high}}}: the maximum is below the minimum", begin)
        return low, high

    def parse_char(self) -> int:
        """One character of a literal or class, with llama.cpp's escapes, as a code point."""
        begin = self.pos
        c = self.peek()
        if not c:
            raise self.error("unexpected end of the grammar inside a literal or character class")
        if c != "\\":
            self.pos += 1
            return ord(c)
        e = self.peek(1)
        if e in _ESCAPES:
            self.pos += 2
            return ord(_ESCAPES[e])
        if e not in _HEX_DIGITS:
            raise self.error(f"unknown escape '\\{e}'")
        width = _HEX_DIGITS[e]
        digits = self.text[self.pos + 2 : self.pos + 2 + width]
        if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise self.error(f"'\\{e}' needs exactly {width} hex digits")
        self.pos += 2 + width
        value = int(digits, 16)
        if value > rx.MAX_CODEPOINT:
            raise self.error(f"'\\{e}{digits}' is beyond U+10FFFF", begin)
        return value

    def parse_literal_body(self) -> str:
        chars: list[str] = []
        while self.peek() != '"':
            chars.append(chr(self.parse_char()))
        self.pos += 1
        return "".join(chars)

    def parse_char_class(self) -> rx.RegexNode:
        negate = self.peek() == "^"
        if negate:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while self.peek() != "]":
            low = high = self.parse_char()
            if self.peek() == "-" and self.peek(1) != "]":
                self.pos += 1
                high = self.parse_char()
            ranges.append((low, high))  # a reversed range such as z-a matches nothing, as in llama.cpp
        self.pos += 1
        return rx.char_class(ranges, negate=negate)

    def parse_token(self) -> g.Expr:
        """`<[id]>` (a token id) or `<text>` (the special token whose text, brackets included, is
        `<text>`); a leading `!` (any token but this one) is rejected."""
        begin = self.pos
        if self.peek() == "!":
            raise self.error(
                "negated tokens ('!<...>') are not supported: the grammar IR has no 'any token but' terminal"
            )
        self.pos += 1
        if self.peek() == "[":
            self.pos += 1
            token_id = self.parse_int()
            if not self.text.startswith("]>", self.pos):
                raise self.error("expected ']>' to close the token id")
            self.pos += 2
            return g.token(token_id)
        end = self.text.find(">", self.pos)
        if end < 0:
            raise self.error("expected '>' to close the token", begin)
        self.pos = end + 1
        return g.token(self.text[begin : self.pos])
