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
    INLINE_REGEX_SIZE,
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
from grammask.ir.walk import Walk, run
from grammask.limits import DEFAULT_LIMITS, Limits, check_deadline, deadline

__all__ = ["BNF", "normalise", "terminal_symbol"]

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
    bodies = _RegularBodies(grammar)
    for name in grammar.rules:
        check_deadline(f"inlining regular rule {name!r}")
        run(bodies.rule_regex(name))
    return {name: node for name, node in bodies.done.items() if node is not None}


class _RegularBodies:
    """The walks of `_regular_bodies`, as methods: walks written as local functions would call
    each other through their closures, a reference cycle that would keep the grammar alive until
    a full garbage collection."""

    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar
        self.done: dict[str, rx.RegexNode | None] = {}
        self.visiting: set[str] = set()
        # Per Seq/Alt/Rep object of the grammar: its regex, so shared subexpressions convert once.
        self.converted: dict[int, rx.RegexNode | None] = {}

    def as_regex(self, expr: Expr) -> Walk[rx.RegexNode | None]:
        if isinstance(expr, Lex):
            return expr.regex
        if isinstance(expr, Token):
            return None
        if isinstance(expr, Ref):
            return (yield self.rule_regex(expr.name))
        if id(expr) in self.converted:
            return self.converted[id(expr)]
        if isinstance(expr, Rep):
            item = yield self.as_regex(expr.item)
            node = None if item is None else rx.repeat(item, expr.min, expr.max)
        else:
            parts: list[rx.RegexNode | None] = []
            for i in expr.items:  # leaves here, not through a sub-walk (a generator's round trip)
                leaf = isinstance(i, Lex | Token)
                parts.append((i.regex if isinstance(i, Lex) else None) if leaf else (yield self.as_regex(i)))
            nodes = [p for p in parts if p is not None]
            if len(nodes) < len(parts):
                node = None
            else:
                node = rx.concat(*nodes) if isinstance(expr, Seq) else rx.alt(*nodes)
        self.converted[id(expr)] = node
        return node

    def rule_regex(self, name: str) -> Walk[rx.RegexNode | None]:
        if name in self.done:
            return self.done[name]
        if name in self.visiting:  # recursion: not regular as written
            return None
        self.visiting.add(name)
        node = yield self.as_regex(self.grammar.rules[name])
        self.visiting.discard(name)
        if node is not None and rx.size(node) > INLINE_REGEX_SIZE:
            node = None
        self.done[name] = node
        return node


def _inline(expr: Expr, regular: dict[str, rx.RegexNode], memo: dict[int, Expr]) -> Walk[Expr]:
    """`expr` with references to `regular` rules replaced by their lexemes; `memo` (by object)
    makes each shared subexpression cost once."""
    if isinstance(expr, Ref):
        return _inline_ref(expr, regular)
    if _is_leaf(expr):
        return expr
    if id(expr) in memo:
        return memo[id(expr)]
    if isinstance(expr, Rep):
        out = rep((yield _inline(expr.item, regular, memo)), expr.min, expr.max)
    else:
        assert isinstance(expr, Seq | Alt)  # (`_is_leaf` said so)
        items = []
        for i in expr.items:  # leaves here, not through a sub-walk (a generator's round trip)
            if isinstance(i, Ref):
                items.append(_inline_ref(i, regular))
            else:
                items.append(i if _is_leaf(i) else (yield _inline(i, regular, memo)))
        out = seq(*items) if isinstance(expr, Seq) else alt(*items)
    memo[id(expr)] = out
    return out


def _inline_ref(expr: Ref, regular: dict[str, rx.RegexNode]) -> Expr:
    node = regular.get(expr.name)
    return expr if node is None else lex(node)


def _is_leaf(expr: Expr) -> bool:
    """Nothing inside to inline: a lexeme, a token, an empty sequence or choice."""
    return not isinstance(expr, (Seq, Alt, Rep)) or (not isinstance(expr, Rep) and not expr.items)


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
                    "a lexeme is too large: its regex has more than "
                    f"Limits.max_regex_size={self.limits.max_regex_size} nodes with repeats expanded"
                )
            self.terminal_ids[term] = len(self.terminals)
            self.terminals.append(term)
        return terminal_symbol(self.terminal_ids[term])

    def add(self, lhs: int, body: Expr) -> Walk[None]:
        alternatives = body.items if isinstance(body, Alt) else (body,)
        for alternative in alternatives:
            symbols = []
            for item in alternative.items if isinstance(alternative, Seq) else (alternative,):
                # a leaf here, not through a sub-walk (a generator's round trip)
                leaf = self.leaf_symbol(item)
                symbols.append(leaf if leaf is not None else (yield self.symbol(item)))
            self.productions.append((lhs, tuple(symbols)))

    def leaf_symbol(self, expr: Expr) -> int | None:
        """The symbol of a rule, a token, a non-empty lexeme or a helper made before; else None."""
        if isinstance(expr, Ref):
            return self.nonterminal(expr.name)
        if isinstance(expr, Token) or (isinstance(expr, Lex) and not rx.is_nullable(expr.regex)):
            return self.terminal(expr)
        return self.helpers.get(expr)

    def symbol(self, expr: Expr) -> Walk[int]:
        leaf = self.leaf_symbol(expr)
        if leaf is not None:
            return leaf
        n = self.helpers[expr] = self.nonterminal(f"<helper {len(self.helpers)}>", helper=True)
        if isinstance(expr, Lex):
            # Lexemes never match the empty string in the parser: `L` becomes `ε | L`.
            self.productions.append((n, ()))
            self.productions.append((n, (self.terminal(expr),)))
        elif isinstance(expr, Rep):
            yield self.add_repeat(n, expr)
        else:
            yield self.add(n, expr)
        return n

    def add_repeat(self, n: int, expr: Rep) -> Walk[None]:
        if expr.min > self.limits.max_grammar_rules:
            raise GrammarError(
                f"a repetition of at least {expr.min} copies is over Limits.max_grammar_rules="
                f"{self.limits.max_grammar_rules} (each copy is a grammar symbol)"
            )
        item = yield self.symbol(expr.item)
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
    """The BNF of `grammar`; `GrammarError` over a limit (rules, lexeme size, `compile_timeout_s`)."""
    with deadline(limits):
        return _normalise(grammar, limits)


def _normalise(grammar: Grammar, limits: Limits) -> BNF:
    regular = _regular_bodies(grammar)
    builder = _Builder(limits)
    start = builder.nonterminal("<start>")
    builder.productions.append((start, (builder.nonterminal(grammar.start),)))
    # Only rules reachable from the start are built; `nonterminal` numbers rules as they are reached.
    done = 1
    inlined: dict[int, Expr] = {}
    while done < len(builder.names):
        name = builder.names[done]
        done += 1
        if name in grammar.rules and name not in builder.helper_names:
            check_deadline(f"normalising rule {name!r}")
            run(builder.add(builder.ids[name], run(_inline(grammar.rules[name], regular, inlined))))
    productions = _productive(builder.productions, len(builder.names))
    if not any(lhs == start for lhs, _ in productions):
        raise GrammarError(f"the grammar accepts no text at all (rule {grammar.start!r} can never be completed)")
    return BNF(tuple(productions), tuple(builder.terminals), tuple(builder.names))


def _productive(productions: list[tuple[int, tuple[int, ...]]], n: int) -> list[tuple[int, tuple[int, ...]]]:
    """The productions that can derive some text: a prefix of the language then always extends to a
    sentence, which exact token masks rely on."""
    # Worklist (linear time): a production fires once all its nonterminals are productive.
    waiting = [sum(1 for s in rhs if s >= 0) for _, rhs in productions]
    uses: list[list[int]] = [[] for _ in range(n)]
    for p, (_, rhs) in enumerate(productions):
        for s in rhs:
            if s >= 0:
                uses[s].append(p)
    productive = [False] * n
    ready = [p for p, count in enumerate(waiting) if count == 0]
    while ready:
        lhs = productions[ready.pop()][0]
        if productive[lhs]:
            continue
        productive[lhs] = True
        for p in uses[lhs]:
            waiting[p] -= 1
            if waiting[p] == 0:
                ready.append(p)
    kept = [(lhs, rhs) for lhs, rhs in productions if productive[lhs] and all(s < 0 or productive[s] for s in rhs)]
    return kept
