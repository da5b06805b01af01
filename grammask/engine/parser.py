"""An Earley parser over lexemes, with hash-consed parser states.

Why Earley: it takes any context-free grammar (ambiguous, left- or right-recursive, with ε-rules)
without grammar rewriting, which matters when front-ends generate grammars mechanically. Its cost
is per lexeme, not per byte: between lexeme boundaries the parser only steps the lexer.

The state of a parse after some text is a `Config`: a set of *scans* `(earley_set, lexer_state)`
— "a lexeme started where `earley_set` was made and the grammar's lexer is now in `lexer_state`" —
plus whether the text so far is a complete sentence.

Earley sets are immutable and hash-consed: a set is identified by its items, whose origins are
themselves canonical sets, so two parses that can continue in exactly the same ways share one object.
An item names its origin by the origin's number, and each set keeps its items' origins in a small
table: items are then tuples of integers, which Python's garbage collector stops scanning (a grammar
that has seen a few thousand sets holds tens of thousands of items).
Configs are hash-consed the same way. That turns the parser into a lazily built deterministic
automaton: work done for one config (its token mask, its successor on a token) is cached under it
(in the grammar's bounded `LRUCache`) and reused whenever the parse comes back to it.

*Abstract sets* make that work shareable across nesting depths. `abstract(s)` is `s` with every
origin older than `s` replaced by one opaque placeholder: the sets of `(`, `((`, `(((`, ... in
`root ::= "(" root ")" | "x"` all have the same abstract set. Text read from an abstract set is
read exactly as from any of its concrete sets, up to the point where a completion needs the
placeholder's items; sets made past that point are *tainted*, and a text rejected there is only
"unsure" (`grammask.engine.masks` checks those few against the concrete set).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Sequence
from itertools import count

from grammask.automata.compile import compile_regex
from grammask.automata.dfa import ByteDFA
from grammask.engine.lexer import Lexer
from grammask.errors import GrammarError
from grammask.ir import regex as rx
from grammask.ir.grammar import Lex
from grammask.ir.normalise import BNF, terminal_symbol
from grammask.limits import Limits, check_deadline
from grammask.lru import OBJECT_BYTES, LRUCache

__all__ = ["Config", "EarleySet", "Parser", "following_lexemes", "nullable_nonterminals"]

#: Estimated bytes of one Earley item (a tuple, its hash-table slots in the set and its index) and
#: of one Earley set or config object with its tables, for `Parser.nbytes`.
_ITEM_BYTES = 250
_STATE_BYTES = 600

# An Earley item: (production, dot, origin), the origin as the number of the set where the item
# started (`EarleySet.number`), or `HERE` for "the set that holds this item". A set keeps its items
# as a sorted tuple: a tuple of tuples of integers is an object the garbage collector stops
# tracking, where a frozenset would be one more for every full collection.
Item = tuple[int, int, int]
HERE = -1


class EarleySet:
    """The items of one position of the parse, and what the parser expects there."""

    __slots__ = (
        "items",
        "waiting",
        "lex_start",
        "tokens",
        "accepting",
        "expects",
        "tainted",
        "abstract",
        "number",
        "origins",
        "__weakref__",
    )

    def __init__(self, items: tuple[Item, ...], parser: Parser, tainted: bool, origins: dict[int, EarleySet]) -> None:
        self.items = items
        #: unique within the parser: how items name this set as their origin
        self.number = next(parser.numbers)
        #: number → set, for every origin of `items` (and keeping those sets alive)
        self.origins = origins
        waiting: dict[int, list[Item]] = {}
        rhs = parser.rhs
        accepting = False
        for item in items:
            p, dot, _ = item
            body = rhs[p]
            if dot < len(body):
                symbol = body[dot]
                found = waiting.get(symbol)
                if found is None:
                    waiting[symbol] = [item]
                else:
                    found.append(item)
            elif p == 0:
                accepting = True
        #: symbol → the items whose dot is before it. Tuples, not lists: the garbage collector
        #: stops tracking a tuple of items that all start here, as most do.
        self.waiting: dict[int, tuple[Item, ...]] = {s: tuple(found) for s, found in waiting.items()}
        self.accepting = accepting
        lexemes: list[int] = []
        special: list[int] = []
        for s in waiting:
            if s < 0:
                k = terminal_symbol(s)
                (lexemes if parser.is_lexeme[k] else special).append(k)
        #: where a lexeme starting here begins: a lexer state of its own, never reached by bytes
        self.lex_start = parser.lexer.start(tuple(lexemes))
        #: token id → the terminal ids that match it here
        self.tokens: dict[int, tuple[int, ...]] = {}
        for k in special:
            for token_id in parser.token_ids[k]:
                self.tokens[token_id] = self.tokens.get(token_id, ()) + (k,)
        self.expects = bool(lexemes) or bool(self.tokens)
        #: made by completing into the opaque placeholder: items of the concrete set may be missing
        self.tainted = tainted
        #: this set with its older origins replaced by the placeholder (see `Parser.abstract`)
        self.abstract: EarleySet | None = None


class Config:
    """A parse state between tokens: the live scans and whether the text is a complete sentence.

    The scans are kept as two tuples, the sets and their lexer states, not as pairs: a tuple of
    integers is untracked by Python's garbage collector, and a grammar holds thousands of configs."""

    __slots__ = ("sets", "states", "accepting", "forced", "number", "__weakref__")

    def __init__(self, sets: tuple[EarleySet, ...], states: tuple[int, ...], accepting: bool, number: int) -> None:
        self.sets = sets
        self.states = states
        self.accepting = accepting
        #: unique within the parser (shared with Earley sets): how cache keys name this config
        self.number = number
        self.forced: bytes | None = None

    @property
    def scans(self) -> tuple[tuple[EarleySet, int], ...]:
        """The live `(earley_set, lexer_state)` pairs."""
        return tuple(zip(self.sets, self.states, strict=True))

    @property
    def is_dead(self) -> bool:
        return not self.sets and not self.accepting


def _scan_order(scan: tuple[EarleySet, int]) -> tuple[int, int]:
    return scan[0].number, scan[1]


def _placeholder(number: int) -> EarleySet:
    """The stand-in for every origin older than an abstract set: it expects nothing and taints."""
    opaque = EarleySet.__new__(EarleySet)
    opaque.items, opaque.waiting, opaque.tokens, opaque.number, opaque.origins = (), {}, {}, number, {}
    opaque.lex_start, opaque.accepting, opaque.expects, opaque.tainted = 0, False, False, True
    opaque.abstract = _ITSELF
    return opaque


#: The `abstract` of a set that is its own abstract set (a reference to itself would be a cycle,
#: left for the cyclic collector when the grammar is dropped).
_ITSELF = EarleySet.__new__(EarleySet)


def nullable_nonterminals(lhs: Sequence[int], rhs: Sequence[tuple[int, ...]], n: int) -> list[bool]:
    """Per nonterminal, whether it derives the empty string; in time linear in the grammar: a
    production becomes nullable once the last of its symbols does (one with a terminal never does)."""
    nullable = [False] * n
    remaining = [len(body) for body in rhs]
    users: list[list[int]] = [[] for _ in range(n)]  # per nonterminal, the productions using it
    ready = []
    for p, body in enumerate(rhs):
        if any(s < 0 for s in body):
            continue
        for s in body:
            users[s].append(p)
        if not body:
            ready.append(lhs[p])
    while ready:
        symbol = ready.pop()
        if nullable[symbol]:
            continue
        nullable[symbol] = True
        for p in users[symbol]:
            remaining[p] -= 1
            if not remaining[p]:
                ready.append(lhs[p])
    return nullable


def following_lexemes(
    lhs: Sequence[int], rhs: Sequence[tuple[int, ...]], nullable: Sequence[bool], is_lexeme: Sequence[bool]
) -> list[tuple[int, ...]]:
    """Per terminal, the lexeme terminals that may come right after it in some sentence (the
    classic FOLLOW sets, over all contexts at once). Text that goes on past the end of a lexeme
    must begin one of these, whatever the parse: the lexer uses them to skip lexeme boundaries
    that nothing can cross (the end of a regex that is one lexeme, a digit of a number followed
    by another digit). Sets are Python ints used as bitsets, propagated along subset edges."""
    n = len(nullable)
    first = [0] * n  # per nonterminal: the terminals a sentence of it may begin with
    first_edges: list[list[int]] = [[] for _ in range(n)]  # y -> x: first[x] includes first[y]
    for p, body in enumerate(rhs):
        x = lhs[p]
        for s in body:
            if s < 0:
                first[x] |= 1 << terminal_symbol(s)
                break
            first_edges[s].append(x)
            if not nullable[s]:
                break
    _propagate(first, first_edges)

    def begins(rest: tuple[int, ...]) -> tuple[int, bool]:
        found = 0
        for s in rest:
            if s < 0:
                return found | 1 << terminal_symbol(s), False
            found |= first[s]
            if not nullable[s]:
                return found, False
        return found, True

    follow = [0] * n  # per nonterminal
    follow_edges: list[list[int]] = [[] for _ in range(n)]  # lhs -> s: follow[s] includes follow[lhs]
    terminal_follow = [0] * len(is_lexeme)
    at_end: list[tuple[int, int]] = []  # (terminal, lhs): the terminal may end its production
    for p, body in enumerate(rhs):
        for i, s in enumerate(body):
            found, open_end = begins(body[i + 1 :])
            if s < 0:
                terminal_follow[terminal_symbol(s)] |= found
                if open_end:
                    at_end.append((terminal_symbol(s), lhs[p]))
            else:
                follow[s] |= found
                if open_end:
                    follow_edges[lhs[p]].append(s)
    _propagate(follow, follow_edges)
    for k, x in at_end:
        terminal_follow[k] |= follow[x]
    lexemes = sum(1 << k for k, is_lex in enumerate(is_lexeme) if is_lex)
    return [_members(found & lexemes) for found in terminal_follow]


def _propagate(sets: list[int], edges: list[list[int]]) -> None:
    """Grow `sets` (bitsets) until `sets[b]` includes `sets[a]` for every edge `a -> b`."""
    work = [a for a in range(len(sets)) if sets[a] and edges[a]]
    while work:
        a = work.pop()
        for b in edges[a]:
            grown = sets[b] | sets[a]
            if grown != sets[b]:
                sets[b] = grown
                work.append(b)


def _members(bits: int) -> tuple[int, ...]:
    found = []
    while bits:
        low = bits & -bits
        found.append(low.bit_length() - 1)
        bits ^= low
    return tuple(found)


class _Lexemes:
    """The DFAs of a grammar's lexemes, compiled once each (apart from the parser, so that the lexer
    that asks for them holds no reference back to it: a dropped grammar is freed at once)."""

    def __init__(self, regexes: dict[int, rx.RegexNode], limits: Limits) -> None:
        #: the regexes of lexemes not compiled yet (each dropped once compiled: a parse never needs
        #: it again, and the IR's many small objects would stay alive as long as the grammar)
        self._regexes = regexes
        self._dfas: dict[int, ByteDFA] = {}
        self._limits = limits
        self._lock = threading.Lock()
        #: the bytes of the DFAs' tables, counted as they are compiled (all at compile time). Many
        #: are in the process's DFA cache too, but a grammar keeps its own alive after that cache
        #: lets them go: 47 grammars of large MaskBench schemas held 1.1 GB of them.
        self.nbytes = 0

    def dfa(self, terminal: int) -> ByteDFA:
        found = self._dfas.get(terminal)
        if found is None:
            with self._lock:
                found = self._dfas.get(terminal)
                if found is None:
                    found = compile_regex(self._regexes[terminal], limits=self._limits)
                    self._dfas[terminal] = found
                    del self._regexes[terminal]
                    self.nbytes += found.nbytes
        return found


class Parser:
    """Everything about a grammar that does not depend on a vocabulary."""

    def __init__(
        self, bnf: BNF, token_ids: list[tuple[int, ...]], limits: Limits, cache: LRUCache | None = None
    ) -> None:
        """`token_ids[k]` gives the token ids that `Token` terminal k matches (empty for lexemes).
        Derived data goes to `cache` (a fresh one under `limits.max_cache_bytes` if None)."""
        self.limits = limits
        self.cache = cache if cache is not None else LRUCache(limits.max_cache_bytes)
        # Tables of the grammar as tuples of integers, which Python's garbage collector stops
        # tracking (lists it would scan in every full collection, for every cached grammar).
        self.lhs = tuple(lhs for lhs, _ in bnf.productions)
        self.rhs = tuple(rhs for _, rhs in bnf.productions)
        self.is_lexeme = tuple(isinstance(t, Lex) for t in bnf.terminals)
        #: per nonterminal, its rule's name (`<...>` for the helpers `normalise` makes)
        self.rule_names = bnf.nonterminal_names
        self.token_ids = tuple(token_ids)
        self._lexemes = _Lexemes({k: t.regex for k, t in enumerate(bnf.terminals) if isinstance(t, Lex)}, limits)
        self._init_prediction(bnf.n_nonterminals)
        follows = following_lexemes(self.lhs, self.rhs, self.nullable, self.is_lexeme)
        self.lexer = Lexer(self._lexemes.dfa, limits, tuple(follows))
        # Hash-consing tables, one per value of the flag (tainted, accepting) rather than keyed by
        # (items, flag) pairs: a pair per entry would be one more object for the garbage collector.
        self._sets: tuple[dict[tuple[Item, ...], EarleySet], ...] = ({}, {})
        self._set_items = 0  # items of the sets in `_sets`, for `nbytes`
        self._configs: tuple[dict[int | tuple[int, ...], Config], ...] = ({}, {})
        #: per set number: the `Config.sets` of its configs of one scan
        self._alone: dict[int, tuple[EarleySet, ...]] = {}
        self._lock = threading.Lock()
        #: numbers for new Earley sets and configs. Cache keys name sets and configs by number, not
        #: by reference: a key of integers is one object fewer for the garbage collector, and
        #: numbers are never reused, so an entry whose set or config is gone is just never read
        #: again (the LRU drops it in time).
        self.numbers = count()
        self.placeholder = _placeholder(next(self.numbers))
        self.root = self._make_set({(0, 0, HERE)}, {})
        self.initial = self.config_after_set(self.root)

    @property
    def nbytes(self) -> int:
        """Estimated memory of the hash-consed Earley sets and configs (items, their indexes)."""
        return _ITEM_BYTES * self._set_items + _STATE_BYTES * sum(map(len, self._sets + self._configs))

    @property
    def dfa_bytes(self) -> int:
        """Memory of the lexemes' DFAs compiled so far (all of them, once compiled)."""
        return self._lexemes.nbytes

    def forget_states(self) -> None:
        """Empty the hash-consing tables of Earley sets and configs: sets and configs in use stay
        valid, and the cache's entries for them stay right; only sharing with new ones is lost."""
        with self._lock:
            for table in self._sets + self._configs:
                table.clear()
            self._alone.clear()
            self._set_items = 0

    # -- grammar analysis -------------------------------------------------------------------------

    def _init_prediction(self, n: int) -> None:
        by_lhs: list[list[int]] = [[] for _ in range(n)]
        for p, lhs in enumerate(self.lhs):
            by_lhs[lhs].append(p)
        self.nullable = tuple(nullable_nonterminals(self.lhs, self.rhs, n))
        self.by_lhs = tuple(map(tuple, by_lhs))
        self._predicted: dict[int, frozenset[Item]] = {}

    def predicted(self, nonterminal: int) -> frozenset[Item]:
        """Items (production, dot, HERE) predicted from `nonterminal`, dots moved over nullable
        symbols, and not complete (see `_make_set`): whole, so that a closure takes them in with
        one set union."""
        found = self._predicted.get(nonterminal)
        if found is not None:
            return found
        items: set[Item] = set()
        seen = {nonterminal}
        stack = [nonterminal]
        while stack:
            for p in self.by_lhs[stack.pop()]:
                body = self.rhs[p]
                for dot in range(len(body)):
                    items.add((p, dot, HERE))
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

    # -- lexemes --------------------------------------------------------------------------------

    def dfa(self, terminal: int) -> ByteDFA:
        """The DFA of lexeme terminal `terminal` (compiled once, by `compile_lexemes` or on demand)."""
        return self._lexemes.dfa(terminal)

    def compile_lexemes(self) -> None:
        """Compile the DFA of every lexeme now (checking the compile deadline between them). A
        lexeme over a limit raises `GrammarError` naming the rules it comes from."""
        for k, is_lexeme in enumerate(self.is_lexeme):
            if is_lexeme:
                try:
                    check_deadline("compiling lexemes")
                    self.dfa(k)
                except GrammarError as exc:
                    rules = self.rules_using(k)
                    where = f"rule{'s' if len(rules) > 1 else ''} {', '.join(map(repr, rules))}"
                    raise GrammarError(f"in the lexeme of {where}: {exc.reason}") from None

    def rules_using(self, terminal: int) -> list[str]:
        """The grammar's own rules (not the helpers `normalise` made) whose bodies use lexeme
        `terminal`, directly or through helpers; sorted."""
        named: set[str] = set()
        seen: set[int] = set()
        wanted = {terminal_symbol(terminal)}
        while wanted:
            users = {lhs for lhs, rhs in zip(self.lhs, self.rhs, strict=True) if not wanted.isdisjoint(rhs)} - seen
            seen |= users
            helpers = {n for n in users if self.rule_names[n].startswith("<")}
            named.update(self.rule_names[n] for n in users - helpers)
            wanted = helpers
        return sorted(named)

    # -- Earley sets ------------------------------------------------------------------------------

    def _make_set(self, kernel: Iterable[Item], known: dict[int, EarleySet], tainted: bool = False) -> EarleySet:
        """The closure of `kernel` (prediction and completion), hash-consed. `known` gives the
        sets the kernel's origins number (it grows by those the completions reach).

        The set keeps only the items still waiting for a symbol (and the start symbol's, when
        complete): a completed item has done all it will do during the closure, and what a set
        can still do depends on its waiting items alone. The sets after the second and third
        members of a list then are one set, though each completed a different value."""
        rhs, lhs_of, nullable = self.rhs, self.lhs, self.nullable
        items: set[Item] = set()
        done: set[Item] = set()
        stack = list(kernel)
        while stack:
            item = stack.pop()
            p, dot, o = item
            body = rhs[p]
            if dot == len(body):
                if item in done:
                    continue
                done.add(item)
                if not p:  # the start symbol complete: the one completed item a set keeps
                    items.add(item)
                if o != HERE:  # completions with origin "here" are ε: handled by `nullable`
                    origin = known[o]
                    tainted = tainted or origin.tainted
                    self._advance(origin, lhs_of[p], known, stack)
                continue
            if item in items:
                continue
            items.add(item)
            s = body[dot]
            if s >= 0:
                items |= self.predicted(s)
                if nullable[s]:
                    stack.append((p, dot + 1, o))
        return self._intern_set(tuple(sorted(items)), tainted, known)

    def _intern_set(self, items: tuple[Item, ...], tainted: bool, known: dict[int, EarleySet]) -> EarleySet:
        """The one set object with these items (hash-consing, within `max_parser_states`). `known`
        gives the sets their origins number."""
        table = self._sets[tainted]
        found = table.get(items)
        if found is None:
            origins = {o: known[o] for _, _, o in items if o != HERE}
            found = EarleySet(items, self, tainted, origins)
            with self._lock:
                if sum(map(len, self._sets)) >= self.limits.max_parser_states:
                    for full in self._sets:
                        full.clear()  # sets in use stay valid; only sharing is lost
                    self._set_items = 0
                found = table.setdefault(items, found)
                if found.items is items:
                    self._set_items += len(items)
        return found

    def complete(self, earley_set: EarleySet, terminals: tuple[int, ...]) -> EarleySet:
        """The set made when a lexeme that started at `earley_set` ends as one of `terminals`."""
        key = ("after", earley_set.number, terminals)
        found = self.cache.get(key)
        if found is None:
            known: dict[int, EarleySet] = {}
            found = self._make_set(self._kernel(earley_set, terminals, known), known, earley_set.tainted)
            self.cache.put(key, found)
        return found

    @classmethod
    def _kernel(cls, earley_set: EarleySet, terminals: tuple[int, ...], known: dict[int, EarleySet]) -> list[Item]:
        """The items after `earley_set` once a lexeme ends as one of `terminals`; the sets their
        origins number go to `known`."""
        kernel: list[Item] = []
        for k in terminals:
            cls._advance(earley_set, terminal_symbol(k), known, kernel)
        return kernel

    @staticmethod
    def _advance(earley_set: EarleySet, symbol: int, known: dict[int, EarleySet], out: list[Item]) -> None:
        """Append to `out` the items of `earley_set` waiting for `symbol`, the dot moved over it
        (an item that started there now names it by number); the sets their origins number go to
        `known`."""
        for p, dot, o in earley_set.waiting.get(symbol, ()):
            if o == HERE:
                out.append((p, dot + 1, earley_set.number))
                known[earley_set.number] = earley_set
            else:
                out.append((p, dot + 1, o))
                known[o] = earley_set.origins[o]

    def abstract_items(self, earley_set: EarleySet) -> tuple[Item, ...] | None:
        """The items of `earley_set`'s abstract set, without making it (None, and noted, when the
        set is its own abstract set)."""
        found = earley_set.abstract
        if found is not None:
            return None if found is _ITSELF else found.items
        placeholder = self.placeholder.number
        items = tuple(sorted({(p, d, o if o == HERE else placeholder) for p, d, o in earley_set.items}))
        if items == earley_set.items:
            earley_set.abstract = _ITSELF
            return None
        return items

    def abstract(self, earley_set: EarleySet, items: tuple[Item, ...] | None = None) -> EarleySet:
        """`earley_set` with every older origin replaced by the placeholder (itself if it has none).
        `items` are its `abstract_items`, when the caller has them already.

        What text does from the abstract set holds for the concrete one until a completion reaches
        the placeholder: from there on, sets are tainted."""
        found = earley_set.abstract
        if found is None:
            items = items if items is not None else self.abstract_items(earley_set)
            if items is None:
                return earley_set
            placeholder = self.placeholder.number
            found = self._intern_set(items, earley_set.tainted, {placeholder: self.placeholder})
            found.abstract = _ITSELF
            earley_set.abstract = found
        return earley_set if found is _ITSELF else found

    # -- configs ----------------------------------------------------------------------------------

    def _config(self, scans: Collection[tuple[EarleySet, int]], accepting: bool) -> Config:
        # Keyed by integers (a set's number and a lexer state in one), which the garbage collector
        # does not track: one scan, as most configs have, is one int.
        if len(scans) == 1:
            ((earley_set, state),) = scans
            ordered: Collection[tuple[EarleySet, int]] = scans
            key: int | tuple[int, ...] = earley_set.number << 32 | state
        else:
            ordered = sorted(scans, key=_scan_order)
            key = tuple(earley_set.number << 32 | state for earley_set, state in ordered)
        table = self._configs[accepting]
        found = table.get(key)
        if found is None:
            if len(ordered) == 1:  # the configs of one set share its one-tuple (one object fewer each)
                sets = self._alone.get(earley_set.number) or self._alone.setdefault(earley_set.number, (earley_set,))
            else:
                sets = tuple(earley_set for earley_set, _ in ordered)
            found = Config(sets, tuple(state for _, state in ordered), accepting, next(self.numbers))
            with self._lock:
                if sum(map(len, self._configs)) >= self.limits.max_parser_states:
                    for full in self._configs:
                        full.clear()  # configs in use stay valid; only sharing is lost
                    self._alone.clear()
                found = table.setdefault(key, found)
        return found

    def config_after_set(self, earley_set: EarleySet) -> Config:
        """The config right after a lexeme boundary that made `earley_set`."""
        scans = {(earley_set, earley_set.lex_start)} if earley_set.expects else set()
        return self._config(scans, earley_set.accepting)

    def step_bytes(self, config: Config, data: bytes) -> Config | None:
        """The config after `data`, or None if `data` cannot follow.

        A lexeme is completed only at the last byte, or where the byte after it can begin a lexeme
        that may follow it (`Lexer.may_end_before`): anywhere else the completion's scans would die
        on the next byte. So the digits of a number, or the letters of a word where a word may end
        after any letter, step the lexer alone, and build and look up no Earley set."""
        lexer = self.lexer
        step, accepts, ends_before = lexer.step, lexer.accepts, lexer.may_end_before
        last = len(data) - 1
        scans: Collection[tuple[EarleySet, int]]
        if len(config.sets) == 1 and data:  # inside one lexeme, as most tokens are: no sets to build
            earley_set, state = config.sets[0], config.states[0]
            for i, byte in enumerate(data):
                after = step(state, byte)
                if not after:
                    return None
                if accepts(after) and (i == last or ends_before(after, data[i + 1])):
                    data, last = data[i:], last - i  # a lexeme may end here: the loop below goes on
                    break
                state = after
            else:
                return self._config(((earley_set, state),), False)
            scans = ((earley_set, state),)
        else:
            scans = config.scans
        accepting = config.accepting
        for i, byte in enumerate(data):
            # An Earley set can appear with several lexer states: hash-consing may make the sets of
            # two positions one object when they continue alike.
            stepped: set[tuple[EarleySet, int]] = set()
            completions: list[tuple[EarleySet, tuple[int, ...]]] = []
            for earley_set, state in scans:
                state = step(state, byte)
                if state:
                    stepped.add((earley_set, state))
                    ended = accepts(state)
                    if ended and (i == last or ends_before(state, data[i + 1])):
                        completions.append((earley_set, ended))
            accepting = False
            if completions:
                if len(completions) == 1:
                    made = self.complete(*completions[0])
                else:
                    known: dict[int, EarleySet] = {}
                    made = self._make_set(
                        [item for done in completions for item in self._kernel(*done, known)],
                        known,
                        any(s.tainted for s, _ in completions),
                    )
                accepting = made.accepting
                if made.expects:
                    stepped.add((made, made.lex_start))
            if not stepped and not accepting:
                return None
            scans = stepped
        return self._config(scans, accepting)

    def step_token(self, config: Config, token_id: int, token_bytes: bytes, is_special: bool) -> Config | None:
        """The config after one token (cached), or None if it is not allowed."""
        key = ("next", config.number, token_id)
        cached = self.cache.get(key, False)
        if cached is not False:
            return cached
        scans: set[tuple[EarleySet, int]] = set()
        accepting = False
        for earley_set, state in zip(config.sets, config.states, strict=True):  # the token as a terminal of its own
            terminals = earley_set.tokens.get(token_id) if state == earley_set.lex_start else None
            if terminals:
                made = self.config_after_set(self.complete(earley_set, terminals))
                scans.update(made.scans)
                accepting |= made.accepting
        result = None
        if token_bytes and not is_special:  # the token as text
            result = self.step_bytes(config, token_bytes)
        if scans or accepting:  # the token as a terminal too: both ways
            if result is not None:
                scans.update(result.scans)
                accepting |= result.accepting
            result = self._config(scans, accepting)
        self.cache.put(key, result, OBJECT_BYTES)
        return result

    def allowed_bytes(self, config: Config) -> set[int]:
        allowed: set[int] = set()
        for state in config.states:
            allowed.update(self.lexer.next_bytes(state))
        return allowed

    def has_special_tokens(self, config: Config) -> bool:
        return any(state == earley_set.lex_start and earley_set.tokens for earley_set, state in config.scans)

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
