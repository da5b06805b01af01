"""Grammar IR → BNF: numbered productions over nonterminals and terminals, ready for the parser.

Two rewrites happen here:

- Regular rules are inlined. A rule whose body uses only lexemes and references to other regular
  rules (no recursion, no special tokens) becomes one lexeme wherever it is referenced, as long as
  its regex stays small (`INLINE_REGEX_SIZE`). Fewer, larger lexemes mean fewer parser steps.
- Repetitions and nested choices become helper nonterminals: `x*` is a left-recursive list, `x{m,n}`
  is `m` copies of `x` followed by nested optionals.

Symbols in `BNF.productions` are ints: a nonterminal `n >= 0`, a terminal `k` encoded as `-1 - k`.
Production 0 is the augmented start `S' ::= start`.
"""

from __future__ import annotations

from dataclasses import dataclass

from grammask.errors import GrammarError
from grammask.ir import regex as rx
from grammask.ir.grammar import (
    EMPTY_SEQ,
    Alt,
    Expr,
    Grammar,
    Lex,
    Ref,
    Rep,
    Seq,
    Token,
    alt,
    lex,
    rep,
    seq,
)
from grammask.limits import DEFAULT_LIMITS, Limits

__all__ = ["BNF", "INLINE_REGEX_SIZE", "normalise", "terminal_symbol"]

#: Largest regex (by `grammask.ir.regex.size`) that a referenced regular rule is inlined as.
INLINE_REGEX_SIZE = 2_000

Terminal = Lex | Token


def terminal_symbol(k: int) -> int:
    """The symbol number of terminal `k` (and back: the mapping is its own inverse)."""
    return -1 - k


@dataclass(frozen=True)
class BNF:
    productions: tuple[tuple[int, tuple[int, ...]], ...]  # (lhs, rhs)
    terminals: tuple[Terminal, ...]
    nonterminal_names: tuple[str, ...]

    @property
    def n_nonterminals(self) -> int:
        return len(self.nonterminal_names)


def _regular_bodies(grammar: Grammar) -> dict[str, rx.RegexNode]:
    """The rules that denote a regular language small enough to inline, as regexes."""
    done: dict[str, rx.RegexNode | None] = {}
    visiting: set[str] = set()

    def as_regex(expr: Expr) -> rx.RegexNode | None:
        if isinstance(expr, Lex):
            return expr.regex
        if isinstance(expr, Token):
            return None
        if isinstance(expr, Ref):
            return rule_regex(expr.name)
        if isinstance(expr, Rep):
            item = as_regex(expr.item)
            return None if item is None else rx.repeat(item, expr.min, expr.max)
        parts = [as_regex(i) for i in expr.items]
        if any(p is None for p in parts):
            return None
        return rx.concat(*parts) if isinstance(expr, Seq) else rx.alt(*parts)

    def rule_regex(name: str) -> rx.RegexNode | None:
        if name in done:
            return done[name]
        if name in visiting:  # recursion: not regular as written
            return None
        visiting.add(name)
        node = as_regex(grammar.rules[name])
        visiting.discard(name)
        if node is not None and rx.size(node) > INLINE_REGEX_SIZE:
            node = None
        done[name] = node
        return node

    for name in grammar.rules:
        rule_regex(name)
    return {name: node for name, node in done.items() if node is not None}


def _inline(expr: Expr, regular: dict[str, rx.RegexNode]) -> Expr:
    if isinstance(expr, Ref):
        node = regular.get(expr.name)
        return expr if node is None else lex(node)
    if isinstance(expr, Seq):
        return seq(*(_inline(i, regular) for i in expr.items))
    if isinstance(expr, Alt):
        return alt(*(_inline(i, regular) for i in expr.items)) if expr.items else expr
    if isinstance(expr, Rep):
        return rep(_inline(expr.item, regular), expr.min, expr.max)
    return expr


class _Builder:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.names: list[str] = []
        self.ids: dict[str, int] = {}
        self.productions: list[tuple[int, tuple[int, ...]]] = []
        self.terminals: list[Terminal] = []
        self.terminal_ids: dict[Terminal, int] = {}
        self.helpers: dict[Expr, int] = {}
        self.helper_names: set[str] = set()

    def nonterminal(self, name: str, helper: bool = False) -> int:
        if helper:
            self.helper_names.add(name)
        if name not in self.ids:
            if len(self.names) >= self.limits.max_grammar_rules:
                raise GrammarError(
                    f"grammar too large: more than {self.limits.max_grammar_rules} rules after expanding "
                    "repetitions (Limits.max_grammar_rules)"
                )
            self.ids[name] = len(self.names)
            self.names.append(name)
        return self.ids[name]

    def terminal(self, term: Terminal) -> int:
        if term not in self.terminal_ids:
            if isinstance(term, Lex) and rx.size(term.regex) > self.limits.max_regex_size:
                raise GrammarError(
                    f"a lexeme is too large: its regex has {rx.size(term.regex)} nodes with repeats expanded, "
                    f"over Limits.max_regex_size={self.limits.max_regex_size}"
                )
            self.terminal_ids[term] = len(self.terminals)
            self.terminals.append(term)
        return terminal_symbol(self.terminal_ids[term])

    def add(self, lhs: int, body: Expr) -> None:
        alternatives = body.items if isinstance(body, Alt) else (body,)
        for alternative in alternatives:
            items = alternative.items if isinstance(alternative, Seq) else (alternative,)
            self.productions.append((lhs, tuple(self.symbol(i) for i in items)))

    def symbol(self, expr: Expr) -> int:
        if isinstance(expr, Ref):
            return self.nonterminal(expr.name)
        if isinstance(expr, Token):
            return self.terminal(expr)
        if isinstance(expr, Lex):
            if not rx.is_nullable(expr.regex):
                return self.terminal(expr)
            # Lexemes never match the empty string in the parser: `L` becomes `ε | L`.
            return self.helper(expr, lambda n: self.add(n, Alt((EMPTY_SEQ, expr))), nullable_lexeme=True)
        if isinstance(expr, Rep):
            return self.helper(expr, lambda n: self.add_repeat(n, expr))
        return self.helper(expr, lambda n: self.add(n, expr))

    def helper(self, expr: Expr, define, nullable_lexeme: bool = False) -> int:
        if expr in self.helpers:
            return self.helpers[expr]
        n = self.nonterminal(f"<helper {len(self.helpers)}>", helper=True)
        self.helpers[expr] = n
        if nullable_lexeme:
            self.productions.append((n, ()))
            self.productions.append((n, (self.terminal(expr),)))
        else:
            define(n)
        return n

    def add_repeat(self, n: int, expr: Rep) -> None:
        item = self.symbol(expr.item)
        if expr.max is None:
            # n ::= item{min} tail ; tail ::= ε | tail item   (left recursion: constant Earley work)
            tail = self.nonterminal(f"<helper {len(self.helpers)} tail {n}>", helper=True)
            self.productions.append((tail, ()))
            self.productions.append((tail, (tail, item)))
            self.productions.append((n, (item,) * expr.min + (tail,)))
            return
        # n ::= item{min} opt_k ; opt_k ::= ε | item opt_{k-1}
        rest = None
        for k in range(1, expr.max - expr.min + 1):
            opt = self.nonterminal(f"<helper {len(self.helpers)} opt {n}.{k}>", helper=True)
            self.productions.append((opt, ()))
            self.productions.append((opt, (item,) if rest is None else (item, rest)))
            rest = opt
        self.productions.append((n, (item,) * expr.min + (() if rest is None else (rest,))))


def normalise(grammar: Grammar, limits: Limits = DEFAULT_LIMITS) -> BNF:
    regular = _regular_bodies(grammar)
    builder = _Builder(limits)
    start = builder.nonterminal("<start>")
    builder.productions.append((start, (builder.nonterminal(grammar.start),)))
    # Only rules reachable from the start are built; `nonterminal` numbers rules as they are reached.
    done = 1
    while done < len(builder.names):
        name = builder.names[done]
        done += 1
        if name in grammar.rules and name not in builder.helper_names:
            builder.add(builder.ids[name], _inline(grammar.rules[name], regular))
    productions = _productive(builder.productions, len(builder.names))
    if not any(lhs == start for lhs, _ in productions):
        raise GrammarError(f"the grammar accepts no text at all (rule {grammar.start!r} can never be completed)")
    return BNF(tuple(productions), tuple(builder.terminals), tuple(builder.names))


def _productive(productions: list[tuple[int, tuple[int, ...]]], n: int) -> list[tuple[int, tuple[int, ...]]]:
    """The productions that can derive some text: a prefix of the language then always extends to a
    sentence, which exact token masks rely on."""
    productive = [False] * n
    changed = True
    while changed:
        changed = False
        for lhs, rhs in productions:
            if not productive[lhs] and all(s < 0 or productive[s] for s in rhs):
                productive[lhs] = changed = True
    kept = [(lhs, rhs) for lhs, rhs in productions if productive[lhs] and all(s < 0 or productive[s] for s in rhs)]
    return kept
