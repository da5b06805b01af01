"""An Earley parser over lexemes, with hash-consed parser states.

Why Earley: it takes any context-free grammar (ambiguous, left- or right-recursive, with ε-rules)
without grammar rewriting, which matters when front-ends generate grammars mechanically. Its cost
is per lexeme, not per byte: between lexeme boundaries the parser only steps lexer DFAs.

The state of a parse after some text is a `Config`: a set of *scans* `(earley_set, lexer_state)`
— "a lexeme started where `earley_set` was made and the lexer for that set's expected terminals is
now in `lexer_state`" — plus whether the text so far is a complete sentence.

Earley sets are immutable and hash-consed: a set is identified by its items, whose origins are
themselves canonical sets, so two parses that can continue in exactly the same ways share one object.
Configs are hash-consed the same way. That turns the parser into a lazily built deterministic
automaton: work done for one config (its token mask, its successor on a token) is cached on it and
reused whenever the parse comes back to an equivalent state, at any depth, in any matcher.
"""

from __future__ import annotations

import threading

from grammask.automata.compile import compile_regex
from grammask.automata.dfa import ByteDFA
from grammask.engine.lexer import Lexer
from grammask.ir.grammar import Lex
from grammask.ir.normalise import BNF, terminal_symbol
from grammask.limits import Limits

__all__ = ["Config", "EarleySet", "Parser"]

# An Earley item: (production, dot, origin). Origin None means "the set that holds this item".
Item = tuple[int, int, "EarleySet | None"]


class EarleySet:
    """The items of one position of the parse, and what the parser expects there."""

    __slots__ = ("items", "waiting", "lexer", "tokens", "accepting", "after", "__weakref__")

    def __init__(self, items: frozenset[Item], parser: Parser) -> None:
        self.items = items
        waiting: dict[int, list[Item]] = {}
        rhs = parser.rhs
        accepting = False
        for item in items:
            p, dot, _ = item
            body = rhs[p]
            if dot < len(body):
                waiting.setdefault(body[dot], []).append(item)
            elif p == 0:
                accepting = True
        self.waiting = waiting
        self.accepting = accepting
        lexemes = tuple(sorted(terminal_symbol(s) for s in waiting if s < 0 and parser.is_lexeme[terminal_symbol(s)]))
        self.lexer = parser.lexer(lexemes) if lexemes else None
        #: token id → the terminal ids that match it here
        self.tokens: dict[int, tuple[int, ...]] = {}
        for s in waiting:
            if s < 0 and not parser.is_lexeme[k := terminal_symbol(s)]:
                for token_id in parser.token_ids[k]:
                    self.tokens[token_id] = self.tokens.get(token_id, ()) + (k,)
        #: cache: terminals completed here → the set made at the end of that lexeme
        self.after: dict[tuple[int, ...], EarleySet] = {}


class Config:
    """A parse state between tokens: the live scans and whether the text is a complete sentence."""

    __slots__ = ("scans", "accepting", "next", "mask", "forced", "__weakref__")

    def __init__(self, scans: tuple[tuple[EarleySet, int], ...], accepting: bool) -> None:
        self.scans = scans
        self.accepting = accepting
        #: cache: token id (or bytes) → the config after it, None if not allowed
        self.next: dict[int | bytes, Config | None] = {}
        self.mask = None  # token mask, filled in by grammask.engine.masks
        self.forced: bytes | None = None

    @property
    def is_dead(self) -> bool:
        return not self.scans and not self.accepting


class Parser:
    """Everything about a grammar that does not depend on a vocabulary."""

    def __init__(self, bnf: BNF, token_ids: list[tuple[int, ...]], limits: Limits) -> None:
        """`token_ids[k]` gives the token ids that `Token` terminal k matches (empty for lexemes)."""
        self.bnf = bnf
        self.limits = limits
        self.lhs = [lhs for lhs, _ in bnf.productions]
        self.rhs = [rhs for _, rhs in bnf.productions]
        self.is_lexeme = [isinstance(t, Lex) for t in bnf.terminals]
        self.token_ids = token_ids
        self._dfas: dict[int, ByteDFA] = {}
        self._lexers: dict[tuple[int, ...], Lexer] = {}
        self._sets: dict[frozenset[Item], EarleySet] = {}
        self._configs: dict[tuple, Config] = {}
        self._lock = threading.Lock()
        self._init_prediction()
        self.root = self._make_set({(0, 0, None)})
        self.initial = self.config_after_set(self.root)

    # -- grammar analysis -------------------------------------------------------------------------

    def _init_prediction(self) -> None:
        n = self.bnf.n_nonterminals
        by_lhs: list[list[int]] = [[] for _ in range(n)]
        for p, lhs in enumerate(self.lhs):
            by_lhs[lhs].append(p)
        nullable = [False] * n
        changed = True
        while changed:
            changed = False
            for p, lhs in enumerate(self.lhs):
                if not nullable[lhs] and all(s >= 0 and nullable[s] for s in self.rhs[p]):
                    nullable[lhs] = changed = True
        self.nullable = nullable
        self.by_lhs = by_lhs
        self._predicted: dict[int, frozenset[tuple[int, int]]] = {}

    def predicted(self, nonterminal: int) -> frozenset[tuple[int, int]]:
        """Items (production, dot) predicted from `nonterminal`, dots moved over nullable symbols."""
        found = self._predicted.get(nonterminal)
        if found is not None:
            return found
        items: set[tuple[int, int]] = set()
        seen = {nonterminal}
        stack = [nonterminal]
        while stack:
            for p in self.by_lhs[stack.pop()]:
                body = self.rhs[p]
                for dot in range(len(body) + 1):
                    items.add((p, dot))
                    if dot == len(body):
                        break
                    s = body[dot]
                    if s < 0:
                        break
                    if s not in seen:
                        seen.add(s)
                        stack.append(s)
                    if not self.nullable[s]:
                        break
        found = frozenset(items)
        self._predicted[nonterminal] = found
        return found

    # -- lexers -----------------------------------------------------------------------------------

    def dfa(self, terminal: int) -> ByteDFA:
        found = self._dfas.get(terminal)
        if found is None:
            term = self.bnf.terminals[terminal]
            assert isinstance(term, Lex)
            found = compile_regex(term.regex, limits=self.limits)
            self._dfas[terminal] = found
        return found

    def lexer(self, terminals: tuple[int, ...]) -> Lexer:
        found = self._lexers.get(terminals)
        if found is None:
            found = Lexer(terminals, [self.dfa(t) for t in terminals], self.limits)
            self._lexers[terminals] = found
        return found

    # -- Earley sets ------------------------------------------------------------------------------

    def _make_set(self, kernel) -> EarleySet:
        """The closure of `kernel` (prediction and completion), hash-consed."""
        rhs, lhs_of, nullable = self.rhs, self.lhs, self.nullable
        items: set[Item] = set()
        stack = list(kernel)
        while stack:
            item = stack.pop()
            if item in items:
                continue
            items.add(item)
            p, dot, origin = item
            body = rhs[p]
            if dot == len(body):
                if origin is not None:  # completions with origin "here" are ε: handled by `nullable`
                    for p2, d2, o2 in origin.waiting.get(lhs_of[p], ()):
                        stack.append((p2, d2 + 1, origin if o2 is None else o2))
                continue
            s = body[dot]
            if s >= 0:
                for p2, d2 in self.predicted(s):
                    items.add((p2, d2, None))
                if nullable[s]:
                    stack.append((p, dot + 1, origin))
        key = frozenset(items)
        found = self._sets.get(key)
        if found is None:
            found = EarleySet(key, self)
            with self._lock:
                found = self._sets.setdefault(key, found)
        return found

    def complete(self, earley_set: EarleySet, terminals: tuple[int, ...]) -> EarleySet:
        """The set made when a lexeme that started at `earley_set` ends as one of `terminals`."""
        found = earley_set.after.get(terminals)
        if found is None:
            found = self._make_set(self._kernel(earley_set, terminals))
            earley_set.after[terminals] = found
        return found

    @staticmethod
    def _kernel(earley_set: EarleySet, terminals: tuple[int, ...]) -> list[Item]:
        kernel = []
        for k in terminals:
            for p, dot, origin in earley_set.waiting.get(terminal_symbol(k), ()):
                kernel.append((p, dot + 1, earley_set if origin is None else origin))
        return kernel

    @staticmethod
    def _expects_anything(earley_set: EarleySet) -> bool:
        return earley_set.lexer is not None or bool(earley_set.tokens)

    # -- configs ----------------------------------------------------------------------------------

    def _config(self, scans: set[tuple[EarleySet, int]], accepting: bool) -> Config:
        key = (frozenset(scans), accepting)
        found = self._configs.get(key)
        if found is None:
            found = Config(tuple(scans), accepting)
            with self._lock:
                if len(self._configs) >= self.limits.max_cached_masks:
                    self._configs.clear()  # configs in use stay valid; only sharing is lost
                found = self._configs.setdefault(key, found)
        return found

    def config_after_set(self, earley_set: EarleySet) -> Config:
        """The config right after a lexeme boundary that made `earley_set`."""
        scans = {(earley_set, 1)} if self._expects_anything(earley_set) else set()
        return self._config(scans, earley_set.accepting)

    def step_bytes(self, config: Config, data: bytes) -> Config | None:
        """The config after `data`, or None if `data` cannot follow."""
        scans = config.scans
        accepting = config.accepting
        for byte in data:
            # An Earley set can appear with several lexer states: hash-consing may make the sets of
            # two positions one object when they continue alike.
            stepped: set[tuple[EarleySet, int]] = set()
            completions: list[tuple[EarleySet, tuple[int, ...]]] = []
            for earley_set, state in scans:
                lexer = earley_set.lexer
                if lexer is None:
                    continue
                state = lexer.rows()[state][byte]
                if state:
                    stepped.add((earley_set, state))
                    if lexer.accepts[state]:
                        completions.append((earley_set, lexer.accepts[state]))
            accepting = False
            if completions:
                if len(completions) == 1:
                    made = self.complete(*completions[0])
                else:
                    made = self._make_set([item for done in completions for item in self._kernel(*done)])
                accepting = made.accepting
                if self._expects_anything(made):
                    stepped.add((made, 1))
            if not stepped and not accepting:
                return None
            scans = stepped
        return self._config(scans, accepting)

    def step_token(self, config: Config, token_id: int, token_bytes: bytes, is_special: bool) -> Config | None:
        """The config after one token (cached on `config`), or None if it is not allowed."""
        cached = config.next.get(token_id, False)
        if cached is not False:
            return cached
        scans: set[tuple[EarleySet, int]] = set()
        accepting = False
        for earley_set, state in config.scans:  # the token as a terminal of its own
            terminals = earley_set.tokens.get(token_id) if state == 1 else None
            if terminals:
                made = self.config_after_set(self.complete(earley_set, terminals))
                scans.update(made.scans)
                accepting |= made.accepting
        if token_bytes and not is_special:  # the token as text
            stepped = self.step_bytes(config, token_bytes)
            if stepped is not None:
                scans.update(stepped.scans)
                accepting |= stepped.accepting
        result = self._config(scans, accepting) if scans or accepting else None
        config.next[token_id] = result
        return result

    def allowed_bytes(self, config: Config) -> set[int]:
        allowed: set[int] = set()
        for earley_set, state in config.scans:
            if earley_set.lexer is not None:
                allowed.update(earley_set.lexer.next_bytes(state).tolist())
        return allowed

    def has_special_tokens(self, config: Config) -> bool:
        return any(state == 1 and earley_set.tokens for earley_set, state in config.scans)

    def forced_bytes(self, config: Config) -> bytes:
        """The longest text that every continuation of `config` starts with."""
        if config.forced is not None:
            return config.forced
        out = bytearray()
        current: Config | None = config
        while current is not None and len(out) < self.limits.max_forced_bytes:
            if current.accepting or self.has_special_tokens(current):
                break
            allowed = self.allowed_bytes(current)
            if len(allowed) != 1:
                break
            byte = allowed.pop()
            out.append(byte)
            current = self.step_bytes(current, bytes((byte,)))
        config.forced = bytes(out)
        return config.forced

