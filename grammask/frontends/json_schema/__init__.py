"""JSON Schema (draft 4 to 2020-12) and pydantic models → grammar IR.

See docs/json_schema.md for the supported keywords, the layout rules and every limitation.
"""

from __future__ import annotations

import json
import sys
from typing import Any, cast

from grammask.errors import GrammarError
from grammask.frontends.json_schema.builder import Builder
from grammask.frontends.json_schema.resolve import Document
from grammask.frontends.json_schema.whitespace import DEFAULT_MAX_RUN, Whitespace
from grammask.ir.grammar import FAIL, Grammar
from grammask.limits import DEFAULT_LIMITS, Limits, deadline

#: Python recursion limit while a schema is compiled (nesting and long property lists recurse).
RECURSION_LIMIT = 6000

__all__ = ["DEFAULT_MAX_RUN", "Whitespace", "grammar_from_json_schema", "grammar_from_pydantic"]


def grammar_from_json_schema(
    schema: dict | str | bool,
    *,
    whitespace: object = "flexible",
    lenient: bool = False,
    strict: bool = False,
    formats: str = "assert",
    limits: Limits = DEFAULT_LIMITS,
) -> Grammar:
    """JSON text valid under `schema` (a dict, a boolean, or JSON text).

    `whitespace` is "flexible", "compact", an indent (int) or a `Whitespace`. With `lenient`,
    constraints that cannot be enforced exactly are dropped and listed in `Grammar.warnings`
    instead of raising `GrammarError`. With `strict`, an object schema without
    `additionalProperties` allows no undeclared properties (as OpenAI's strict mode and XGrammar).
    `formats` is "assert" (the default: `format` constrains strings, as a model's output should)
    or "annotate" (`format` is ignored, draft 2020-12's default for validators); another value
    raises `ValueError`. `limits` bounds the rules built and, with `compile_timeout_s`, the time
    taken.
    """
    if formats not in ("assert", "annotate"):
        raise ValueError(f"formats must be 'assert' or 'annotate', not {formats!r}")
    if isinstance(schema, str):
        text = schema
        try:
            schema = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GrammarError(f"the schema is not valid JSON: {exc.msg}", position=exc.pos, source=text) from None
    ws = Whitespace.of(whitespace)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    try:
        with deadline(limits):
            builder = Builder(Document(schema, assert_formats=formats == "assert"), ws, lenient, strict, limits)
            body = builder.value(builder.doc.root, "", 0)
    except RecursionError:
        raise GrammarError("the schema nests too deeply to compile", pointer="") from None
    finally:
        sys.setrecursionlimit(limit)
    if body == FAIL:
        raise GrammarError("the schema is unsatisfiable: no JSON value is valid under it", pointer="")
    rules = {"root": body, **builder.rules}
    return Grammar(rules, "root", warnings=builder.warnings)


def grammar_from_pydantic(
    model: type,
    *,
    whitespace: object = "flexible",
    lenient: bool = False,
    strict: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> Grammar:
    """JSON text valid for a pydantic (v2) model class, through `model.model_json_schema()`."""
    try:
        import pydantic
    except ImportError:
        raise ImportError("Grammar.from_pydantic needs pydantic: pip install 'grammask[pydantic]'") from None
    if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
        raise TypeError(f"expected a pydantic BaseModel subclass, not {model!r}")
    # pydantic is not analysed (follow_imports = "skip"), so the issubclass check above narrows nothing.
    pydantic_model = cast(Any, model)
    return grammar_from_json_schema(
        pydantic_model.model_json_schema(), whitespace=whitespace, lenient=lenient, strict=strict, limits=limits
    )
