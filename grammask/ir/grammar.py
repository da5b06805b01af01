"""The grammar IR: a context-free grammar whose terminals are regular expressions (lexemes).

Every front-end (regex, GBNF, Lark, JSON Schema, choice, token automaton) produces a `Grammar`:
named rules whose bodies are expressions built from

- `Lex`     a lexeme: any string of a regular language (`grammask.ir.regex`),
- `Token`   one special token (by name or id) or, for token-level automata, one token id,
- `Ref`     another rule (recursion is allowed and unbounded),
- `Seq`, `Alt`, `Rep` sequence, choice and bounded/unbounded repetition.

The language is plain context-free over bytes: a lexeme boundary may fall anywhere the grammar
allows one (there is no maximal-munch lexer), so front-ends may split or merge lexemes freely
without changing what is accepted. Build expressions with the functions below, which simplify as
they go (adjacent lexemes in a sequence merge into one lexeme, for instance).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grammask.errors import GrammarError
from grammask.ir import regex as rx
from grammask.ir.hashing import cached_hash

__all__ = [
    "INLINE_REGEX_SIZE",
    "Alt",
    "Expr",
    "Grammar",
    "Lex",
    "Ref",
    "Rep",
    "Seq",
    "Token",
    "alt",
    "lex",
    "literal",
    "opt",
    "plus",
    "ref",
    "rep",
    "seq",
    "star",
    "token",
]


@dataclass(frozen=True, slots=True)
@cached_hash
class Lex:
    """Any string of the regular language `regex`."""

    regex: rx.RegexNode
    _hash: int = field(init=False, repr=False, compare=False, default=0)


@dataclass(frozen=True, slots=True)
class Token:
    """Exactly one token, named by its text (a special token such as `<|python_tag|>`) or by id.

    Special tokens never match grammar text; this is the only way a grammar can emit one.
    """

    token: str | int


@dataclass(frozen=True, slots=True)
class Ref:
    """The rule called `name`."""

    name: str


@dataclass(frozen=True, slots=True)
@cached_hash
class Seq:
    items: tuple[Expr, ...]
    _hash: int = field(init=False, repr=False, compare=False, default=0)


@dataclass(frozen=True, slots=True)
@cached_hash
class Alt:
    items: tuple[Expr, ...]
    _hash: int = field(init=False, repr=False, compare=False, default=0)


@dataclass(frozen=True, slots=True)
@cached_hash
class Rep:
    """`item` between `min` and `max` times (`max` None: unbounded)."""

    item: Expr
    min: int
    max: int | None
    _hash: int = field(init=False, repr=False, compare=False, default=0)


Expr = Lex | Token | Ref | Seq | Alt | Rep

#: Largest regex (by `grammask.ir.regex.size`, repeats expanded) that a repetition of a lexeme
#: (other than one character class), or a referenced regular rule (`grammask.ir.normalise`),
#: becomes one lexeme as. Past it the parser counts: 1,000 array items of a 50-state lexeme
#: would be one automaton of 50,000 states.
INLINE_REGEX_SIZE = 2_000

EMPTY_SEQ = Seq(())
#: Matches nothing: a choice with no alternatives.
FAIL = Alt(())


def _is_empty_seq(expr: Expr) -> bool:
    """`expr == EMPTY_SEQ`, by type first: equality is a Python call (see `rx.is_nothing`)."""
    return isinstance(expr, Seq) and not expr.items


def lex(node: rx.RegexNode) -> Expr:
    if rx.is_nothing(node):
        return FAIL
    return EMPTY_SEQ if rx.is_empty(node) else Lex(node)


def literal(text: str) -> Expr:
    return lex(rx.literal(text))


def token(t: str | int) -> Expr:
    return Token(t)


def ref(name: str) -> Expr:
    return Ref(name)


def seq(*items: Expr) -> Expr:
    """Sequence; nested sequences flatten and adjacent lexemes merge into one lexeme."""
    flat: list[Expr] = []
    run: list[Lex] = []  # lexemes waiting to merge, concatenated once (linear time)
    for item in items:
        if isinstance(item, Alt) and not item.items:  # FAIL, by type first (see `rx.is_nothing`)
            return FAIL
        for sub in item.items if isinstance(item, Seq) else (item,):
            if isinstance(sub, Lex):
                run.append(sub)
            else:
                if run:
                    flat.append(_merged(run))
                    run = []
                flat.append(sub)
    if run:
        flat.append(_merged(run))
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def _merged(run: list[Lex]) -> Lex:
    """One lexeme for adjacent ones (a lone one as it is)."""
    return run[0] if len(run) == 1 else Lex(rx.concat(*(x.regex for x in run)))


def alt(*items: Expr) -> Expr:
    """Choice; nested choices flatten, duplicates drop, and an all-lexeme choice becomes one lexeme."""
    unique: dict[Expr, None] = {}
    for item in items:
        for sub in item.items if isinstance(item, Alt) else (item,):
            unique[sub] = None
    flat = list(unique)
    if flat and all(isinstance(x, Lex) or _is_empty_seq(x) for x in flat):
        return lex(rx.alt(*(x.regex if isinstance(x, Lex) else rx.EMPTY for x in flat)))
    return flat[0] if len(flat) == 1 else Alt(tuple(flat))


def rep(item: Expr, min: int, max: int | None) -> Expr:
    if max is not None and max < min:
        return FAIL
    if max == 0 or _is_empty_seq(item):
        return EMPTY_SEQ
    if min == max == 1:
        return item
    if isinstance(item, Lex):
        node = rx.repeat(item.regex, min, max)
        # A run of one character class stays one lexeme at any length: its automaton is a chain
        # of one state a character (`[^"]{0,10000}`), which the parser would count far slower.
        if rx.size(node) <= INLINE_REGEX_SIZE or isinstance(item.regex, rx.CharClass):
            return lex(node)
    return Rep(item, min, max)


def opt(item: Expr) -> Expr:
    return rep(item, 0, 1)


def star(item: Expr) -> Expr:
    return rep(item, 0, None)


def plus(item: Expr) -> Expr:
    return rep(item, 1, None)


#: What a grammar is made of, as `Grammar.made_from` keeps it to tell whether it changed since.
_Contents = tuple[str, tuple[tuple[str, Expr], ...], tuple[str, ...]]


@dataclass
class Grammar:
    """A start rule and named rules, checked to refer only to defined rules. Front-ends build one;
    `grammask.compile` turns it into masks. The public `grammask.Grammar` (`grammask/grammar.py`,
    above the front-ends) is this class with a constructor per format."""

    rules: dict[str, Expr]
    start: str = "root"
    #: Notes on what a lenient front-end dropped (for example an unenforceable JSON Schema keyword).
    warnings: list[str] = field(default_factory=list)

    def __eq__(self, other: object) -> bool:
        # Equal across the public subclass: a front-end's result equals the constructor's.
        if not isinstance(other, Grammar):
            return NotImplemented
        return (self.rules, self.start, self.warnings) == (other.rules, other.start, other.warnings)

    def __repr__(self) -> str:
        # Short: a rule body may nest as deep as its input, and its repr would recurse as deep.
        return f"{type(self).__name__}(start={self.start!r}, {len(self.rules)} rules)"

    def canonical(self) -> str:
        """An exact text of this grammar (rules, start and warnings): equal for equal grammars and
        different for different ones, whatever subtrees they share and in whatever order their
        rules were defined.

        One untracked string, so it can key a long-lived cache (`grammask.compile`'s) where the
        grammar's own tree of small objects would make every full garbage collection slower."""
        names = sorted(self.rules)
        records, roots = _canonical_nodes([self.rules[name] for name in names])
        return repr((records, list(zip(names, roots, strict=True)), self.start, self.warnings))

    def cache_key(self) -> str | bytes:
        """What `grammask.compile` keys its cache by: the input of the constructor that made this
        grammar (`made_from`), while its rules, start and warnings are still the ones it made, and
        `canonical()` otherwise. A JSON Schema's pickle costs tens of microseconds; its grammar's
        canonical text about a millisecond, a tenth of a typical compile."""
        made = self._made_from
        if made is not None and made[1] == self._contents():
            return made[0]
        return self.canonical()

    def made_from(self, source: bytes) -> None:
        """Note that this grammar is what a constructor makes of `source` (its arguments, pickled):
        equal sources make equal grammars, so `cache_key` may use it instead of the canonical text."""
        self._made_from: tuple[bytes, _Contents] | None = (source, self._contents())

    def _contents(self) -> _Contents:
        # Compared by identity first, element by element: unchanged rules cost one pass.
        return self.start, tuple(self.rules.items()), tuple(self.warnings)

    def __post_init__(self) -> None:
        self._made_from = None
        if self.start not in self.rules:
            raise GrammarError(f"the start rule {self.start!r} is not defined")
        if _refs(*self.rules.values()) <= self.rules.keys():
            return
        for name, body in self.rules.items():  # name the rule at fault
            for missing in _refs(body) - self.rules.keys():
                raise GrammarError(f"rule {name!r} refers to undefined rule {missing!r}")


#: The record tag of each kind of node with children, and where they are.
_ITEMS = {rx.Concat: "concat", rx.Alt: "|", Seq: "seq", Alt: "alt"}
_ITEM = {rx.Repeat: "repeat", Rep: "rep"}


def _canonical_nodes(roots: list[Expr]) -> tuple[list[tuple], list[int]]:
    """Every distinct node under `roots` as a record of its kind, fields and children's numbers
    (children first, numbered in order of first record), and the numbers of `roots`. Iterative,
    and each object visited once; equal nodes get one number, so sharing does not change it."""
    number_of: dict[int, int] = {}  # id(node) -> its record's number
    records: dict[tuple, int] = {}
    stack: list[Any] = list(roots)  # nodes of both trees, told apart by type (the hot loop)
    while stack:
        node = stack[-1]
        if id(node) in number_of:
            stack.pop()
            continue
        kind = type(node)
        record: tuple
        if kind is rx.CharClass:
            record = node.ranges  # pairs, or none: every other record starts with a string
        elif kind is Ref:
            record = ("ref", node.name)
        elif kind is Token:
            record = ("token", node.token)
        else:
            if kind in _ITEMS:
                children = node.items
            elif kind in _ITEM:
                children = (node.item,)
            else:
                children = (node.left, node.right) if kind is rx.Difference else (node.regex,)
            missing = [child for child in children if id(child) not in number_of]
            if missing:
                stack.extend(missing)
                continue
            numbers = [number_of[id(child)] for child in children]
            if kind in _ITEMS:
                record = (_ITEMS[kind], *numbers)
            elif kind in _ITEM:
                record = (_ITEM[kind], numbers[0], node.min, node.max)
            elif kind is rx.Difference:
                record = ("minus", *numbers)
            else:
                record = ("lex", numbers[0])
        stack.pop()
        number_of[id(node)] = records.setdefault(record, len(records))
    return list(records), [number_of[id(root)] for root in roots]


def _refs(*exprs: Expr) -> set[str]:
    """The rule names `exprs` refer to (iterative, and each shared subexpression visited once:
    expressions may nest as deep as their input, and share subtrees at every level)."""
    out: set[str] = set()
    seen: set[int] = set()  # containers only: leaves (lexemes, most items) cost a test of type
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if isinstance(e, Ref):
            out.add(e.name)
        elif isinstance(e, (Seq, Alt, Rep)) and id(e) not in seen:
            seen.add(id(e))
            if isinstance(e, Rep):
                stack.append(e.item)
            else:
                stack.extend(e.items)
    return out
