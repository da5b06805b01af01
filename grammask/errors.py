"""The exceptions grammask raises.

    GrammaskError
    ├── GrammarError (ValueError)      a format is malformed, unsupported, or too large to compile
    │                                  (regex, GBNF, Lark, JSON Schema, token automaton)
    ├── VocabularyError (ValueError)   a tokenizer or vocabulary file cannot be read
    └── GenerationError (RuntimeError) generation cannot go on: every token of a row is masked, or the
                                       format can no longer be completed within the budget

Every message names what is wrong and where: a character offset (with line and column) for text
formats, a JSON Pointer for JSON Schema.
"""

from __future__ import annotations

__all__ = ["GenerationError", "GrammarError", "GrammaskError", "VocabularyError"]


class GrammaskError(Exception):
    """Root of every exception raised on purpose by grammask."""


class GrammarError(GrammaskError, ValueError):
    """A format that is malformed, unsupported, or over a compile limit.

    `position` is a character offset into the source text (or None); `pointer` is the JSON Pointer of
    the offending schema location for JSON Schema (or None); `reason` is the bare message.
    """

    def __init__(
        self,
        reason: str,
        *,
        position: int | None = None,
        source: str | None = None,
        pointer: str | None = None,
    ) -> None:
        self.reason = reason
        self.position = position
        self.pointer = pointer
        where = ""
        if pointer is not None:
            where = f" at {pointer or '/'}"
        elif position is not None:
            where = f" at position {position}"
            if source is not None:
                line = source.count("\n", 0, position) + 1
                column = position - (source.rfind("\n", 0, position) + 1) + 1
                where += f" (line {line}, column {column})"
        super().__init__(f"{reason}{where}")


class VocabularyError(GrammaskError, ValueError):
    """A tokenizer or vocabulary file that cannot be turned into a `Vocabulary`."""


class GenerationError(GrammaskError, RuntimeError):
    """Generation cannot continue (no token allowed, or the format cannot be finished)."""
