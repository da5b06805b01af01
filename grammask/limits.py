"""Every compile-time and run-time limit, with its default and what it costs.

Limits turn state blow-up into a `GrammarError` instead of exhausting memory or time. Change them
for one call by passing a `Limits` to the function that takes one, or globally with `DEFAULT_LIMITS`.
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
    #: Token masks kept per compiled grammar, for parser configurations and, separately, for their
    #: scans: each costs V/8 bytes (16 KiB for a 128k vocabulary), so at most ~2 x 160 MiB.
    max_cached_masks: int = 10_000
    #: Compiled grammars kept by `grammask.compile`'s cache.
    max_cached_grammars: int = 64
    #: Tokens a matcher keeps for `rollback`.
    max_rollback_tokens: int = 256


DEFAULT_LIMITS = Limits()
