"""Grammar + vocabulary → `CompiledGrammar`: the immutable, shareable half of constrained decoding.

A compiled grammar holds the parser (vocabulary-independent), the token-mask computer for one
vocabulary, and the one bounded cache (`LRUCache`) where both keep what they learn while
decoding. Many matchers, in many threads, can share one. `compile` keeps the most recently used
compiled grammars, keyed by grammar and vocabulary fingerprint, within a total byte budget. The
grammar's part of the key (`Grammar.cache_key`) is one untracked string or bytes, not its IR: 64
cached IRs were most of the objects a full garbage collection scans in a long-running process (75%
of its pause on MaskBench). It is the pickled arguments of the constructor that made the grammar,
or, for a grammar built or changed by hand, its canonical text (`Grammar.canonical`), which costs
about a millisecond per compile on real schemas.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable

from grammask.collector import paused
from grammask.engine.masks import MaskComputer
from grammask.engine.parser import Parser
from grammask.errors import GrammarError
from grammask.ir.grammar import Grammar, Token
from grammask.ir.normalise import BNF, normalise
from grammask.limits import DEFAULT_LIMITS, Limits, deadline
from grammask.lru import CacheStats, LRUCache
from grammask.matcher import Matcher
from grammask.vocab import Vocabulary

__all__ = ["CompiledGrammar", "compile"]


class CompiledGrammar:
    """A grammar compiled against a vocabulary. Make one with `grammask.compile`."""

    def __init__(self, grammar: Grammar, vocab: Vocabulary, limits: Limits = DEFAULT_LIMITS) -> None:
        # The grammar's IR is not kept: once its lexemes are compiled nothing reads it, and a
        # long-lived tree of small objects would only slow Python's garbage collector.
        #: The name of the grammar's start rule.
        self.start = grammar.start
        self.vocab = vocab
        self.limits = limits
        #: What a lenient front-end dropped (e.g. an unenforceable JSON Schema keyword).
        self.warnings: list[str] = list(grammar.warnings)
        with paused(), deadline(limits):  # (see `grammask.collector`)
            bnf = normalise(grammar, limits)
            self.cache = LRUCache(limits.max_cache_bytes)
            self.parser = Parser(bnf, _token_ids(bnf, vocab), limits, self.cache)
            self.masks = MaskComputer(self.parser, vocab)
            # Every lexeme's DFA now, and the first mask: a lexeme over a limit fails here, and no
            # decoding step stalls on compiling one.
            self.parser.compile_lexemes()
            self.masks.mask(self.parser.initial)
        #: The matchers alive on this grammar: one that has none may `cool`.
        self.matchers: weakref.WeakSet[Matcher] = weakref.WeakSet()
        self._cold_nbytes: int | None = None

    def matcher(self, *, stop_token_ids: Iterable[int] | None = None) -> Matcher:
        """A fresh matcher at the start of the grammar.

        `stop_token_ids` replaces the vocabulary's end-of-sequence tokens for this matcher (an
        engine passes the request's own end set)."""
        return Matcher(self, stop_token_ids=stop_token_ids)

    def cool(self) -> None:
        """Drop what decoding learned (the cache's masks and walks, the parser's shared Earley sets
        and configs); it is learned again when needed. Results never change: only time and memory.
        `compile` cools the grammars in its cache that no matcher uses and that are not among the
        `limits.max_warm_grammars` it was last asked for."""
        self.cache.clear()
        self.parser.forget_states()
        self._cold_nbytes = self._measure()

    def cache_stats(self) -> CacheStats:
        """Entries, bytes, hits, misses and evictions of this grammar's cache."""
        return self.cache.stats()

    @property
    def nbytes(self) -> int:
        """Memory held by this grammar's caches, parser states, lexer and lexeme automata
        (estimated for Python objects)."""
        if self._cold_nbytes is not None and not self.cache.nbytes:
            # Cooled and not used since (a mask or a step caches something): as measured then.
            # `compile` reads every cached grammar's size, and measuring is a dozen calls.
            return self._cold_nbytes
        return self._measure()

    def _measure(self) -> int:
        parser = self.parser
        return self.cache.nbytes + parser.nbytes + parser.lexer.nbytes + parser.dfa_bytes


def _token_ids(bnf: BNF, vocab: Vocabulary) -> list[tuple[int, ...]]:
    ids: list[tuple[int, ...]] = []
    for term in bnf.terminals:
        if not isinstance(term, Token):
            ids.append(())
        elif isinstance(term.token, int):
            if not 0 <= term.token < vocab.size:
                raise GrammarError(f"token id {term.token} is outside the vocabulary (size {vocab.size})")
            ids.append((term.token,))
        else:
            try:
                ids.append((vocab.token_id(term.token),))
            except KeyError:
                raise GrammarError(f"the vocabulary has no token {term.token!r}") from None
    return ids


_cache: OrderedDict[tuple[str | bytes, str, Limits], CompiledGrammar] = OrderedDict()
_cache_lock = threading.Lock()


def compile(grammar: Grammar, vocab: Vocabulary, *, limits: Limits | None = None) -> CompiledGrammar:
    """Compile `grammar` for `vocab` (cached: the same grammar and vocabulary give the same object;
    a grammar a constructor made is known by the constructor's arguments, see `Grammar.cache_key`).

    Raises `GrammarError` when a limit is met: a lexeme over `max_regex_size` or `max_dfa_states`,
    or the whole compile over `compile_timeout_s`.

    The cache keeps at most `limits.max_cached_grammars` grammars holding at most
    `limits.max_compile_cache_bytes` together, least recently used out first."""
    limits = limits or DEFAULT_LIMITS
    key = (grammar.cache_key(), vocab.fingerprint, limits)
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    compiled = CompiledGrammar(grammar, vocab, limits)
    with _cache_lock:
        _cache[key] = compiled
        cached = list(_cache.values())  # least recently asked for first
        for older in cached[: max(len(cached) - limits.max_warm_grammars, 0)]:
            if older.cache.nbytes and not older.matchers:
                older.cool()
        total = sum(c.nbytes for c in _cache.values())
        while len(_cache) > 1 and (len(_cache) > limits.max_cached_grammars or total > limits.max_compile_cache_bytes):
            _, evicted = _cache.popitem(last=False)
            total -= evicted.nbytes
    return compiled
