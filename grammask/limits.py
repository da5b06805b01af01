"""Every compile-time and run-time limit, with its default and what it costs.

Limits turn state blow-up into a `GrammarError` instead of exhausting memory or time. Change them
for one call by passing a `Limits` (e.g. `dataclasses.replace(DEFAULT_LIMITS, ...)`) to the
function that takes one; `DEFAULT_LIMITS` itself is frozen.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from grammask.errors import GrammarError

__all__ = ["DEFAULT_LIMITS", "Limits", "check_deadline", "deadline"]


@dataclass(frozen=True)
class Limits:
    #: States of one DFA (one lexeme, or one lexer over several lexemes). A DFA costs 512 bytes
    #: per state (a 256-entry row of 16-bit states; 1 KiB past 65,536 states) plus its token-mask
    #: cache when it is reached.
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
    max_cache_bytes: int = 64 * 2**20
    #: Bytes all the grammars in `grammask.compile`'s cache may hold together (their caches, lexer
    #: tables and lexeme DFAs, measured at each compile); least recently used grammars go first.
    max_compile_cache_bytes: int = 256 * 2**20
    #: States of one grammar's lazily built lexer (512 bytes each while it has at most 65,536, as
    #: all but the largest grammars have; past that its table is copied once into 1 KiB rows;
    #: never evicted while the compiled grammar lives). Reaching it raises `GrammarError`.
    max_lexer_states: int = 1 << 18
    #: Earley sets and parser configurations kept for sharing (hash-consing) per compiled grammar;
    #: over it the tables start again empty, which loses sharing but changes no result.
    max_parser_states: int = 50_000
    #: Compiled grammars kept by `grammask.compile`'s cache.
    max_cached_grammars: int = 64
    #: Of those, how many (the ones `compile` was last asked for) keep what decoding learned
    #: (masks, walks, parser states) while no matcher uses them. The others drop it
    #: (`CompiledGrammar.cool`) and learn it again when used: it is most of what Python's garbage
    #: collector scans in a long-running process, and a full collection pauses decoding meanwhile.
    max_warm_grammars: int = 4
    #: Tokens a matcher keeps for `rollback`.
    max_rollback_tokens: int = 256
    #: Wall-clock seconds one compile may take (front-end, normalisation, automata, engine tables),
    #: checked between steps by `check_deadline`; over it raises `GrammarError`. None: no deadline.
    compile_timeout_s: float | None = None


DEFAULT_LIMITS = Limits()

#: (expiry on the monotonic clock, the timeout it came from) of the innermost `deadline` block.
_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("grammask_deadline", default=None)


@contextmanager
def deadline(limits: Limits) -> Iterator[None]:
    """Run one compile under `limits.compile_timeout_s`: inside the block (in this thread or
    task), `check_deadline` raises once the time is up. A nested block never extends the deadline
    of an outer one, so a front-end called from a compile shares the compile's budget."""
    if limits.compile_timeout_s is None:
        yield
        return
    outer = _DEADLINE.get()
    mine = (time.monotonic() + limits.compile_timeout_s, limits.compile_timeout_s)
    token = _DEADLINE.set(mine if outer is None or mine[0] < outer[0] else outer)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_deadline(where: str) -> None:
    """Raise `GrammarError` when the innermost `deadline` block has run out of time; `where`
    names the step (for the message). Costs one clock read: call it once per unit of work
    (a rule, a DFA state), not per byte."""
    current = _DEADLINE.get()
    if current is not None and time.monotonic() > current[0]:
        raise GrammarError(
            f"compiling took longer than Limits.compile_timeout_s={current[1]:g} s (stopped while {where})"
        )
