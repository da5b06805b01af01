"""vLLM's structured-output kinds as grammask grammars.

vLLM names a constraint by kind (`json`, `json_object`, `regex`, `choice`, `grammar`,
`structural_tag`) and passes its spec as text or parsed JSON. The vLLM backend and `grammask serve`
both read constraints that way; this module is the one mapping between the two.
"""

from __future__ import annotations

import json
from typing import Any

from grammask.grammar import Grammar
from grammask.limits import DEFAULT_LIMITS, Limits

__all__ = ["KINDS", "grammar_for"]

#: The kinds of vLLM's `structured_outputs`, in its order.
KINDS = ("json", "regex", "choice", "grammar", "json_object", "structural_tag")


def grammar_for(
    kind: str, spec: Any, *, compact: bool = False, strict: bool = True, limits: Limits = DEFAULT_LIMITS
) -> Grammar:
    """The grammar of one constraint of `kind`.

    `spec` is the schema (a dict or JSON text) for `json`, a pattern for `regex`, a list of strings
    (or its JSON text) for `choice`, GBNF (a text with `::=`) or Lark for `grammar`, and a structural
    tag (a dict or JSON text) for `structural_tag`; `json_object` ignores it. `compact` allows no
    whitespace between JSON tokens; with `strict` (vLLM's and xgrammar's reading) a JSON Schema
    without `additionalProperties` allows no undeclared properties. Raises `GrammarError` for an
    invalid or unsupported spec, `ValueError` for a spec of the wrong shape or an unknown kind.
    """
    whitespace = "compact" if compact else "flexible"
    if kind == "json":
        schema = json.loads(spec) if isinstance(spec, str) else spec
        return Grammar.from_json_schema(schema, whitespace=whitespace, strict=strict, limits=limits)
    if kind == "json_object":
        return Grammar.from_json_schema({"type": "object"}, whitespace=whitespace, limits=limits)
    if kind == "regex":
        return Grammar.from_regex(_text(spec, kind))
    if kind == "choice":
        options = json.loads(spec) if isinstance(spec, str) else spec
        if not isinstance(options, list) or not options or not all(isinstance(o, str) for o in options):
            raise ValueError("choice is a non-empty list of strings")
        return Grammar.choice(options)
    if kind == "grammar":
        text = _text(spec, kind)
        return Grammar.from_ebnf(text) if "::=" in text else Grammar.from_lark(text)
    if kind == "structural_tag":
        return Grammar.from_structural_tag(spec, whitespace=whitespace, strict=strict)
    raise ValueError(f"unknown structured output kind {kind!r} (one of {', '.join(KINDS)})")


def _text(spec: Any, kind: str) -> str:
    if not isinstance(spec, str):
        raise ValueError(f"{kind} must be a string")
    return spec
