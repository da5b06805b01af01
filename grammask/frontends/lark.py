"""A documented subset of Lark grammar syntax → grammar IR (see docs/grammars.md, "Lark").

The text is read in two passes: `_parse` turns it into small syntax nodes (rules, terminals,
directives), then `_Lowering` turns terminal definitions into regex trees and rule definitions into
IR expressions. The language is what Lark's Earley parser with the dynamic lexer accepts, without
its preferences among ambiguous lexings: a text is accepted when some split of it into terminals
derives it. `%ignore`d terminals may occur, any number of times, before every terminal of a rule
and at the end of the text (so between any two terminals, as in Lark's lexer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

from grammask.errors import GrammarError
from grammask.frontends.regex_syntax import MAX_GROUP_DEPTH, parse_regex
from grammask.ir import grammar as g
from grammask.ir import regex as rx
from grammask.limits import check_deadline

__all__ = ["COMMON_TERMINALS", "grammar_from_lark"]


def grammar_from_lark(text: str, *, start: str = "start") -> g.Grammar:
    """The grammar of a Lark grammar text, starting at rule `start`.

    Raises `GrammarError` with the offending position for syntax errors, undefined or twice-defined
    names, recursive terminals and every construct outside the supported subset.
    """
    return _Lowering(text, _Parser(text).parse()).grammar(start)


# --- the common library (`%import common.X`), as the languages its terminals mean ---------------


def _one_of(chars: str) -> rx.RegexNode:
    return rx.char_class([(ord(c), ord(c)) for c in chars])


def _common_terminals() -> dict[str, rx.RegexNode]:
    digit = rx.char_class([(0x30, 0x39)])
    lower, upper = rx.char_class([(0x61, 0x7A)]), rx.char_class([(0x41, 0x5A)])
    letter = rx.alt(lower, upper)
    sign = rx.optional(_one_of("+-"))
    integer = rx.plus(digit)
    signed_int = rx.concat(sign, integer)
    dot = rx.literal(".")
    decimal = rx.alt(rx.concat(integer, dot, rx.optional(integer)), rx.concat(dot, integer))
    exponent = rx.concat(_one_of("eE"), signed_int)
    floating = rx.alt(rx.concat(integer, exponent), rx.concat(decimal, rx.optional(exponent)))
    number = rx.alt(floating, integer)
    not_newline = rx.char_class([(0x0A, 0x0A)], negate=True)
    cr, lf = rx.literal("\r"), rx.literal("\n")
    quote, backslash = rx.literal('"'), rx.literal("\\")
    string_char = rx.alt(
        rx.char_class([(0x0A, 0x0A), (0x22, 0x22), (0x5C, 0x5C)], negate=True), rx.concat(backslash, not_newline)
    )
    stars = rx.plus(rx.literal("*"))
    comment_char = rx.alt(
        rx.char_class([(0x2A, 0x2A)], negate=True),
        rx.concat(stars, rx.char_class([(0x2A, 0x2A), (0x2F, 0x2F)], negate=True)),
    )
    underscore = rx.literal("_")
    return {
        "DIGIT": digit,
        "HEXDIGIT": rx.alt(digit, rx.char_class([(0x61, 0x66), (0x41, 0x46)])),
        "INT": integer,
        "SIGNED_INT": signed_int,
        "DECIMAL": decimal,
        "FLOAT": floating,
        "SIGNED_FLOAT": rx.concat(sign, floating),
        "NUMBER": number,
        "SIGNED_NUMBER": rx.concat(sign, number),
        # A JSON-like string: escapes may quote any character but a newline, nothing else is a quote.
        "ESCAPED_STRING": rx.concat(quote, rx.star(string_char), quote),
        "LCASE_LETTER": lower,
        "UCASE_LETTER": upper,
        "LETTER": letter,
        "WORD": rx.plus(letter),
        "CNAME": rx.concat(rx.alt(underscore, letter), rx.star(rx.alt(underscore, letter, digit))),
        "WS_INLINE": rx.plus(_one_of(" \t")),
        "WS": rx.plus(_one_of(" \t\f\r\n")),
        "CR": cr,
        "LF": lf,
        "NEWLINE": rx.plus(rx.concat(rx.optional(cr), lf)),
        "SH_COMMENT": rx.concat(rx.literal("#"), rx.star(not_newline)),
        "CPP_COMMENT": rx.concat(rx.literal("//"), rx.star(not_newline)),
        # The shortest-match `/* ... */` of Lark's `/(.|\n)*?/`: a comment holds no `*/`.
        "C_COMMENT": rx.concat(rx.literal("/*"), rx.star(comment_char), stars, rx.literal("/")),
        "SQL_COMMENT": rx.concat(rx.literal("--"), rx.star(not_newline)),
    }


#: The terminals `%import common.NAME` provides, as regex trees.
COMMON_TERMINALS: dict[str, rx.RegexNode] = _common_terminals()


# --- syntax nodes ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Literal:
    text: str
    ignore_case: bool
    pos: int


@dataclass(frozen=True, slots=True)
class _Range:
    low: str
    high: str
    pos: int


@dataclass(frozen=True, slots=True)
class _Regexp:
    pattern: str
    flags: str
    pos: int


@dataclass(frozen=True, slots=True)
class _Name:
    name: str
    pos: int


@dataclass(frozen=True, slots=True)
class _SpecialToken:
    token: str | int
    pos: int


@dataclass(frozen=True, slots=True)
class _Seq:
    items: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Choice:
    items: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Repeat:
    item: _Node
    min: int
    max: int | None


_Node = _Literal | _Range | _Regexp | _Name | _SpecialToken | _Seq | _Choice | _Repeat


@dataclass(slots=True)
class _Definitions:
    rules: dict[str, _Node]
    terminals: dict[str, _Node | rx.RegexNode]  # a regex for an imported common terminal
    positions: dict[str, int]
    ignored: list[_Node]


# --- tokens ---------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(
    r"""
    (?P<blank>[ \t\f\r]+ | //[^\n]*)
    | (?P<newline>\n)
    | (?P<string>"(?:\\.|[^"\\\n])*"i?)
    | (?P<regexp>/(?!/)(?:\\[\s\S]|[^/\\])+/[imslux]*)
    | (?P<special><[^<>\s]+>)
    | (?P<name>[_a-zA-Z][_a-zA-Z0-9]*)
    | (?P<number>-?[0-9]+)
    | (?P<directive>%[a-z]+)
    | (?P<op>->|\.\.|[:|()\[\]*+?~.,{}!])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "string", "regexp", "special", "name", "number", "directive", "op", "newline", "end"
    text: str
    pos: int


def _tokenize(text: str) -> list[_Token]:
    """Tokens with newlines kept only where they end a statement: not inside brackets, and not
    before a `|` that continues the previous line."""
    tokens: list[_Token] = []
    depth, pos = 0, 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise GrammarError(f"unexpected character {text[pos]!r}", position=pos, source=text)
        kind, value = m.lastgroup, m.group()
        assert kind is not None  # every alternative of _TOKEN_RE is a named group
        pos = m.end()
        if kind == "blank" or (kind == "newline" and (depth > 0 or not tokens or tokens[-1].kind == "newline")):
            continue
        if kind == "op" and value in "([":
            depth += 1
        elif kind == "op" and value in ")]":
            depth = max(depth - 1, 0)
        if kind == "op" and value == "|" and tokens and tokens[-1].kind == "newline":
            tokens.pop()
        tokens.append(_Token(kind, value, m.start()))
    tokens.append(_Token("end", "", len(text)))
    return tokens


# --- parsing --------------------------------------------------------------------------------------

_UNSUPPORTED_DIRECTIVES = {
    "%declare": "declared terminals (%declare) need a custom lexer",
    "%override": "%override needs imported grammars, which are not supported",
    "%extend": "%extend needs imported grammars, which are not supported",
}


def _is_terminal_name(name: str) -> bool:
    return name.lstrip("_")[:1].isupper()


class _Parser:
    """Recursive descent over the tokens of one Lark grammar."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"a Lark grammar must be a str, not {type(text).__name__}")
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.defs = _Definitions({}, {}, {}, [])
        self.depth = 0  # brackets open around the next token

    def error(self, reason: str, pos: int | None = None) -> GrammarError:
        return GrammarError(reason, position=self.peek().pos if pos is None else pos, source=self.text)

    def peek(self) -> _Token:
        return self.tokens[min(self.i, len(self.tokens) - 1)]

    def take(self) -> _Token:
        token = self.peek()
        self.i += 1
        return token

    def at(self, kind: str, text: str | None = None) -> bool:
        token = self.peek()
        return token.kind == kind and (text is None or token.text == text)

    def expect(self, kind: str, what: str, text: str | None = None) -> _Token:
        if not self.at(kind, text):
            found = self.peek().text or "the end of the grammar"
            raise self.error(f"expected {what}, found {found!r}")
        return self.take()

    def parse(self) -> _Definitions:
        while not self.at("end"):
            if self.at("newline"):
                self.take()
                continue
            if self.at("directive"):
                self.parse_directive()
            else:
                self.parse_definition()
            if not (self.at("newline") or self.at("end")):
                raise self.error(f"unexpected {self.peek().text!r}: expected the end of the line")
        return self.defs

    def define(self, name: str, body: _Node | rx.RegexNode, pos: int) -> None:
        if name in self.defs.positions:
            line = self.text.count("\n", 0, self.defs.positions[name]) + 1
            raise self.error(f"{name!r} is defined twice (first on line {line})", pos)
        self.defs.positions[name] = pos
        if _is_terminal_name(name) or not isinstance(body, _Node):  # imports are checked to be terminals
            self.defs.terminals[name] = body
        else:
            self.defs.rules[name] = body

    def parse_definition(self) -> None:
        begin = self.peek().pos
        check_deadline(f"parsing Lark at position {begin}")
        while self.at("op", "?") or self.at("op", "!"):  # ?inline and !keep-tokens change trees only
            self.take()
        if not self.at("name"):
            raise self.error(f"expected a rule or terminal definition, found {self.peek().text!r}")
        name = self.take().text
        if _is_terminal_name(name) != (name.upper() == name):
            raise self.error(f"{name!r} mixes cases: rules are lowercase, terminals uppercase", begin)
        if self.at("op", "{"):
            raise self.error(f"templates ({name}{{...}}) are not supported")
        if self.at("op", "."):  # priority: no effect on the language
            self.take()
            self.expect("number", "a priority number after '.'")
        self.expect("op", f"':' after {name!r}", ":")
        self.define(name, self.parse_expansions(), begin)

    def parse_directive(self) -> None:
        token = self.take()
        if token.text == "%ignore":
            self.defs.ignored.append(self.parse_expansions())
        elif token.text == "%import":
            self.parse_import(token.pos)
        elif token.text in _UNSUPPORTED_DIRECTIVES:
            raise self.error(f"{token.text} is not supported: {_UNSUPPORTED_DIRECTIVES[token.text]}", token.pos)
        else:
            raise self.error(f"unknown directive {token.text}", token.pos)

    def parse_import(self, begin: int) -> None:
        """`%import common.NAME [-> ALIAS]` or `%import common (NAME, ...)`."""
        path: list[str] = []
        while True:
            if not self.at("name"):
                raise self.error("%import needs a module path such as common.WS")
            path.append(self.take().text)
            if not self.at("op", "."):
                break
            self.take()
        if self.at("op", "("):
            self.take()
            names = [self.expect("name", "a name").text]
            while self.at("op", ","):
                self.take()
                names.append(self.expect("name", "a name").text)
            self.expect("op", "')' to close the import list", ")")
            module, imports = path, [(n, n) for n in names]
        else:
            if len(path) < 2:
                raise self.error("%import needs a module and a name, such as common.WS", begin)
            alias = path[-1]
            if self.at("op", "->"):
                self.take()
                alias = self.expect("name", "a name after '->'").text
            module, imports = path[:-1], [(path[-1], alias)]
        if module != ["common"]:
            raise self.error(f"only the 'common' library can be imported, not {'.'.join(module)!r}", begin)
        for name, alias in imports:
            if name not in COMMON_TERMINALS:
                known = ", ".join(sorted(COMMON_TERMINALS))
                raise self.error(f"common has no terminal {name!r} (it has {known})", begin)
            if not _is_terminal_name(alias):
                raise self.error(f"terminal {name!r} must be imported under a terminal (uppercase) name", begin)
            self.define(alias, COMMON_TERMINALS[name], begin)

    def parse_expansions(self) -> _Node:
        options = [self.parse_alias()]
        while self.at("op", "|"):
            self.take()
            options.append(self.parse_alias())
        return options[0] if len(options) == 1 else _Choice(tuple(options))

    def parse_alias(self) -> _Node:
        items: list[_Node] = []
        while (item := self.parse_expr()) is not None:
            items.append(item)
        if self.at("op", "->"):  # tree aliases do not change the language
            self.take()
            self.expect("name", "a name after '->'")
        return items[0] if len(items) == 1 else _Seq(tuple(items))

    def parse_expr(self) -> _Node | None:
        atom = self.parse_atom()
        if atom is None:
            return None
        while True:
            if self.at("op", "*") or self.at("op", "+") or self.at("op", "?"):
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[self.take().text]
            elif self.at("op", "~"):
                low, high = self.parse_count()
            else:
                return atom
            atom = _Repeat(atom, low, high)

    def parse_count(self) -> tuple[int, int]:
        """`~ n` or `~ n..m` after the `~`."""
        begin = self.take().pos
        low = self.parse_count_number()
        high = low
        if self.at("op", ".."):
            self.take()
            high = self.parse_count_number()
        if high < low:
            raise self.error(f"repetition ~{low}..{high}: the maximum is below the minimum", begin)
        return low, high

    def parse_count_number(self) -> int:
        if not self.at("number") or self.peek().text.startswith("-"):
            raise self.error("expected a non-negative count after '~'")
        return int(self.take().text)

    def parse_atom(self) -> _Node | None:
        token = self.peek()
        if token.kind == "op" and token.text in "([":
            if self.depth >= MAX_GROUP_DEPTH:
                raise self.error(f"groups nested too deeply: over {MAX_GROUP_DEPTH} levels", token.pos)
            self.take()
            self.depth += 1
            inner = self.parse_expansions()
            self.depth -= 1
            close = ")" if token.text == "(" else "]"
            self.expect("op", f"{close!r} to close the bracket opened at position {token.pos}", close)
            return inner if close == ")" else _Repeat(inner, 0, 1)
        if token.kind == "string":
            self.take()
            literal = self.parse_string(token)
            if not self.at("op", ".."):
                return literal
            self.take()
            high_token = self.expect("string", "a string after '..'")
            high = self.parse_string(high_token)
            if len(literal.text) != 1 or len(high.text) != 1:
                raise self.error('a range "a".."z" needs single characters at both ends', token.pos)
            return _Range(literal.text, high.text, token.pos)
        if token.kind == "regexp":
            self.take()
            body, flags = token.text[1:].rsplit("/", 1)
            if "\n" in body and "x" not in flags:
                raise self.error("a regexp may span lines only with the x (verbose) flag", token.pos)
            return _Regexp(_unescape_slashes(body), flags, token.pos)
        if token.kind == "special":
            self.take()
            return _SpecialToken(_special_token(token.text), token.pos)
        if token.kind == "name":
            self.take()
            if self.at("op", "{"):
                raise self.error(f"templates ({token.text}{{...}}) are not supported")
            return _Name(token.text, token.pos)
        return None

    def parse_string(self, token: _Token) -> _Literal:
        ignore_case = token.text.endswith("i")
        body = token.text[1 : -2 if ignore_case else -1]
        try:
            return _Literal(_unescape_string(body), ignore_case, token.pos)
        except ValueError as exc:
            raise self.error(str(exc), token.pos) from None


def _special_token(text: str) -> str | int:
    """`<[123]>` → 123; any other `<...>` is the special token with that text."""
    if text.startswith("<[") and text.endswith("]>") and text[2:-2].isdigit():
        return int(text[2:-2])
    return text


_STRING_ESCAPES = {"n": "\n", "f": "\f", "t": "\t", "r": "\r", "\\": "\\", '"': '"'}
_HEX_WIDTHS = {"x": 2, "u": 4, "U": 8}


def _unescape_string(body: str) -> str:
    """A Lark string body as Lark reads it: `\\n \\f \\t \\r \\\\ \\" \\xNN \\uNNNN \\UNNNNNNNN`;
    any other backslash stays a backslash."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[e])
            i += 2
        elif e in _HEX_WIDTHS:
            digits = body[i + 2 : i + 2 + _HEX_WIDTHS[e]]
            if len(digits) != _HEX_WIDTHS[e] or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"'\\{e}' needs exactly {_HEX_WIDTHS[e]} hex digits")
            if int(digits, 16) > rx.MAX_CODEPOINT:
                raise ValueError(f"'\\{e}{digits}' is beyond U+10FFFF")
            out.append(chr(int(digits, 16)))
            i += 2 + len(digits)
        else:
            out.append(c + e)
            i += 2
    return "".join(out)


def _unescape_slashes(body: str) -> str:
    """A Lark regexp body with its `\\/` turned into `/`; every other escape is the regex's own."""
    return re.sub(r"\\(.)", lambda m: m.group(1) if m.group(1) == "/" else m.group(0), body, flags=re.DOTALL)


# --- lowering -------------------------------------------------------------------------------------

_REGEX_FLAGS = {"i", "m", "s", "u", "x"}


class _Lowering:
    """Terminal definitions → regex trees (memoised, recursion rejected); rules → IR expressions."""

    def __init__(self, text: str, defs: _Definitions) -> None:
        self.text = text
        self.defs = defs
        self.terminal_regex: dict[str, rx.RegexNode] = {}
        self.in_progress: set[str] = set()
        ignored = [self.regex(node, "%ignore") for node in defs.ignored]
        #: What may precede every terminal of a rule: any number of ignored terminals.
        self.skip = rx.star(rx.alt(*ignored)) if ignored else rx.EMPTY

    def error(self, reason: str, pos: int) -> GrammarError:
        return GrammarError(reason, position=pos, source=self.text)

    def grammar(self, start: str) -> g.Grammar:
        for name in self.defs.terminals:
            self.terminal(name, self.defs.positions[name])
        rules = {name: self.expr(body) for name, body in self.defs.rules.items()}
        if start not in rules:
            raise GrammarError(f"the grammar has no start rule {start!r} (define `{start}: ...`)")
        if rx.is_empty(self.skip):
            return g.Grammar(rules, start=start)
        top = f"{start}+%ignore"  # not a Lark name, so it cannot clash
        rules[top] = g.seq(g.ref(start), g.lex(self.skip))
        return g.Grammar(rules, start=top)

    def terminal(self, name: str, pos: int) -> rx.RegexNode:
        if name in self.terminal_regex:
            return self.terminal_regex[name]
        if name not in self.defs.terminals:
            raise self.error(f"undefined terminal {name!r}", pos)
        if name in self.in_progress:
            raise self.error(f"terminal {name!r} is defined in terms of itself (terminals must be regular)", pos)
        if len(self.in_progress) >= MAX_GROUP_DEPTH:
            raise self.error(f"terminal {name!r} is defined through over {MAX_GROUP_DEPTH} levels of terminals", pos)
        self.in_progress.add(name)
        body = self.defs.terminals[name]
        node = self.regex(body, name) if isinstance(body, _Node) else body
        self.in_progress.discard(name)
        self.terminal_regex[name] = node
        return node

    def regex(self, node: _Node, owner: str) -> rx.RegexNode:
        """A terminal-level expression (inside terminal `owner`, or `%ignore`) as a regex tree."""
        if isinstance(node, _Literal):
            return _literal_regex(node)
        if isinstance(node, _Range):
            return rx.char_class([(ord(node.low), ord(node.high))])
        if isinstance(node, _Regexp):
            return self.regexp(node)
        if isinstance(node, _Name):
            if not _is_terminal_name(node.name):
                raise self.error(f"{owner} refers to rule {node.name!r}: terminals may use only terminals", node.pos)
            return self.terminal(node.name, node.pos)
        if isinstance(node, _SpecialToken):
            raise self.error(f"{owner}: special tokens may appear only in rules, not in terminals", node.pos)
        if isinstance(node, _Seq):
            return rx.concat(*(self.regex(i, owner) for i in node.items))
        if isinstance(node, _Choice):
            return rx.alt(*(self.regex(i, owner) for i in node.items))
        return rx.repeat(self.regex(node.item, owner), node.min, node.max)

    def expr(self, node: _Node) -> g.Expr:
        """A rule-level expression as IR; every terminal gets the ignored-terminals prefix."""
        if isinstance(node, _Name) and not _is_terminal_name(node.name):
            if node.name not in self.defs.rules:
                raise self.error(f"undefined rule {node.name!r}", node.pos)
            return g.ref(node.name)
        if isinstance(node, _SpecialToken):
            return g.seq(g.lex(self.skip), g.token(node.token))
        if isinstance(node, (_Literal, _Range, _Regexp, _Name)):
            return g.lex(rx.concat(self.skip, self.regex(node, "a rule")))
        if isinstance(node, _Seq):
            return g.seq(*(self.expr(i) for i in node.items))
        if isinstance(node, _Choice):
            return g.alt(*(self.expr(i) for i in node.items))
        return g.rep(self.expr(node.item), node.min, node.max)

    def regexp(self, node: _Regexp) -> rx.RegexNode:
        """A `/pattern/flags` terminal, its flags applied the way Lark does: `(?flags:pattern)`."""
        unknown = set(node.flags) - _REGEX_FLAGS
        if unknown:
            raise self.error(f"unsupported regexp flag(s) {''.join(sorted(unknown))!r} (use i, m, s, u, x)", node.pos)
        prefix = f"(?{node.flags}:" if node.flags else ""
        try:
            return parse_regex(prefix + node.pattern + (")" if prefix else ""), flavor="python")
        except GrammarError as exc:
            at = (exc.position or 0) - len(prefix)  # within the pattern, or in the flags we added
            offset = 0 if at < 0 else 1 + min(at, len(node.pattern))
            raise self.error(f"in regexp /{node.pattern}/{node.flags}: {exc.reason}", node.pos + offset) from None


def _literal_regex(node: _Literal) -> rx.RegexNode:
    if not node.ignore_case:
        return rx.literal(node.text)
    return rx.concat(*(_case_variants(c) for c in node.text))


@lru_cache(maxsize=1)
def _cased_chars() -> str:
    """Every character some case mapping changes; Unicode has none beyond the first two planes."""
    chars = map(chr, range(0x20000))
    return "".join(c for c in chars if c.lower() != c or c.upper() != c or c.casefold() != c)


@cache
def _case_variants(c: str) -> rx.RegexNode:
    """`c` in any case: the characters Python's `re` matches with IGNORECASE, as Lark's `"..."i` does."""
    variants = {c}
    if c in _cased_chars():
        same = re.compile(re.escape(c), re.IGNORECASE).fullmatch
        variants.update(x for x in _cased_chars() if same(x))
    return rx.char_class([(ord(x), ord(x)) for x in variants])
