"""Every compile-time and run-time limit, with its default and what it costs.

Limits turn state blow-up into a `GrammarError` instead of exhausting memory or time. Change them
for one call by passing a `Limits` (e.g. `dataclasses.replace(DEFAULT_LIMITS, ...)`) to the
function that takes one; `DEFAULT_LIMITS` itself is frozen.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "Limits"]


@dataclass(frozen=True)
class Limits:
    #: States of one DFA (one lexeme, or one lexer over several lexemes). A DFA costs about
    #: 1 KiB per state (a 256-entry int32 row) plus its token-mask cache when it is reached.
    max_dfa_states: int = 20_000
    #: Regex syntax-tree size after expanding bounded repeats (`a{1000}` counts 1000).
    max_regex_size: int = 200_000
    #: Rules of a normalised grammar (after expanding repeats into helper rules).
    max_grammar_rules: int = 100_000
    #: Bytes of text the grammar may force in one `forced_text()` call.
    max_forced_bytes: int = 4096
    #: Bytes of derived data one compiled grammar keeps (token masks at V/8 bytes each, i.e. 16 KiB
    #: for a 128k vocabulary; trie walks; parser transitions): least recently used first out.
    #: Eviction never changes a result, it only costs recomputation.
    max_cache_bytes: int = 128 * 2**20
    #: Bytes all the grammars in `grammask.compile`'s cache may hold together (their caches and
    #: lexer tables, measured at each compile); least recently used grammars go first.
    max_compile_cache_bytes: int = 1024 * 2**20
    #: States of one grammar's lazily built lexer (about 1 KiB each, never evicted while the
    #: compiled grammar lives). Reaching it raises `GrammarError`.
    max_lexer_states: int = 50_000
    #: Earley sets and parser configurations kept for sharing (hash-consing) per compiled grammar;
    #: over it the tables start again empty, which loses sharing but changes no result.
    max_parser_states: int = 50_000
    #: Compiled grammars kept by `grammask.compile`'s cache.
    max_cached_grammars: int = 64
    #: Tokens a matcher keeps for `rollback`.
    max_rollback_tokens: int = 256


DEFAULT_LIMITS = Limits()
