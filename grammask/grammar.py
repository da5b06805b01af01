"""The public `Grammar`: the IR grammar of `grammask.ir.grammar`, with one constructor per format.

The constructors live here, above the front-ends they call, so that the IR below them imports no
front-end ("nothing imports upward"). Front-end functions (`grammar_from_regex`, ...) return the IR
class; each constructor returns this subclass, which every consumer of the IR class accepts.
"""

from __future__ import annotations

import pickle

from grammask.frontends.choice import grammar_from_choice
from grammask.frontends.ebnf import grammar_from_ebnf
from grammask.frontends.json_schema import grammar_from_json_schema, grammar_from_pydantic
from grammask.frontends.lark import grammar_from_lark
from grammask.frontends.regex import grammar_from_regex
from grammask.frontends.structural_tag import grammar_from_structural_tag
from grammask.frontends.transitions import grammar_from_transitions
from grammask.ir import grammar as ir
from grammask.limits import DEFAULT_LIMITS, Limits

__all__ = ["Grammar"]


class Grammar(ir.Grammar):
    """A start rule and named rules. Make one with a constructor below; `grammask.compile` turns
    it into token masks. Malformed or unsupported input raises `GrammarError` (with a position or a
    JSON Pointer), a non-text argument `TypeError`."""

    @classmethod
    def _adopt(cls, grammar: ir.Grammar, *source: object) -> Grammar:
        """`grammar` as this class, noting the constructor's arguments (`ir.Grammar.made_from`)
        where they pickle. Its fields are taken over as they are: the front-end's grammar was
        checked when it was made, and checking every rule's references again cost a large schema
        a walk over all its rules."""
        adopted = cls.__new__(cls)
        adopted.__dict__.update(vars(grammar))
        if source:
            try:
                adopted.made_from(pickle.dumps(source, protocol=pickle.HIGHEST_PROTOCOL))
            except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
                pass  # keyed by its canonical text
        return adopted

    @classmethod
    def from_regex(cls, pattern: str) -> Grammar:
        """Text matching `pattern` as a whole (Python `re` syntax; `^`/`$` allowed at the ends)."""
        return cls._adopt(grammar_from_regex(pattern), "regex", pattern)

    @classmethod
    def from_ebnf(cls, text: str, start: str = "root") -> Grammar:
        """A llama.cpp GBNF grammar."""
        return cls._adopt(grammar_from_ebnf(text, start=start), "ebnf", text, start)

    @classmethod
    def from_lark(cls, text: str, start: str = "start") -> Grammar:
        """A grammar in the documented subset of Lark syntax (see docs/grammars.md)."""
        return cls._adopt(grammar_from_lark(text, start=start), "lark", text, start)

    @classmethod
    def choice(cls, options: list[str]) -> Grammar:
        """Exactly one of `options`."""
        return cls._adopt(grammar_from_choice(options), "choice", options)

    @classmethod
    def from_transitions(
        cls,
        initial_state: int,
        transitions: list[tuple[int, int, int]],
        accepting_states: list[int] | set[int],
    ) -> Grammar:
        """An explicit automaton over token ids: `(state, token_id, next_state)` edges."""
        return cls._adopt(grammar_from_transitions(initial_state, transitions, accepting_states))

    @classmethod
    def from_json_schema(
        cls,
        schema: dict | str | bool,
        *,
        whitespace: object = "flexible",
        lenient: bool = False,
        strict: bool = False,
        formats: str = "assert",
        limits: Limits = DEFAULT_LIMITS,
    ) -> Grammar:
        """JSON text valid under `schema` (see docs/json_schema.md for keywords and limits).

        With `strict`, a missing `additionalProperties` means false (OpenAI strict mode, XGrammar).
        `formats="annotate"` ignores `format` (draft 2020-12's default for validators); by default
        formats are asserted. `limits` bounds the rules built and, with `compile_timeout_s`, the
        time taken.
        """
        return cls._adopt(
            grammar_from_json_schema(
                schema, whitespace=whitespace, lenient=lenient, strict=strict, formats=formats, limits=limits
            ),
            *("json_schema", schema, whitespace, lenient, strict, formats, limits),
        )

    @classmethod
    def from_pydantic(
        cls,
        model: type,
        *,
        whitespace: object = "flexible",
        lenient: bool = False,
        strict: bool = False,
        limits: Limits = DEFAULT_LIMITS,
    ) -> Grammar:
        """JSON text valid for a pydantic model class (through its JSON Schema)."""
        return cls._adopt(
            grammar_from_pydantic(model, whitespace=whitespace, lenient=lenient, strict=strict, limits=limits)
        )

    @classmethod
    def from_structural_tag(cls, spec: dict | str, *, whitespace: object = "flexible", strict: bool = True) -> Grammar:
        """An XGrammar structural tag (the JSON format vLLM sends for tool calls): free text until
        a trigger, then the tagged format, then free text again (see docs/integrations.md)."""
        return cls._adopt(
            grammar_from_structural_tag(spec, whitespace=whitespace, strict=strict),
            *("structural_tag", spec, whitespace, strict),
        )

    @classmethod
    def json(cls, *, whitespace: object = "flexible") -> Grammar:
        """Any JSON value."""
        return cls.from_json_schema(True, whitespace=whitespace)
