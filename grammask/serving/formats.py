"""From a request's format fields to one grammask `Grammar` (or None for free text).

The fields, of which at most one may constrain the output (more is a 400):

- `response_format`: `json_schema` (with `strict: true` a missing `additionalProperties` means false),
  `json_object` (any JSON object), `text` (no constraint);
- vLLM's `structured_outputs`: `json`, `json_object`, `regex`, `choice`, `grammar` (GBNF, or Lark when
  it has no `::=`), `structural_tag`. As in grammask's vLLM backend (`grammask.integrations.vllm`),
  its JSON Schemas are strict and `disable_any_whitespace` makes JSON compact;
- vLLM's removed `guided_json`, `guided_regex`, `guided_choice`, `guided_grammar`: read as the
  `structured_outputs` field of the same name; `guided_decoding_backend` may only name grammask;
  any other `guided_*` field is a 400.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from grammask.errors import GrammarError
from grammask.grammar import Grammar
from grammask.integrations.structured_outputs import grammar_for
from grammask.limits import DEFAULT_LIMITS, Limits
from grammask.serving.protocol import APIError, ResponseFormat, StructuredOutputs

__all__ = ["GUIDED_FIELDS", "request_grammar", "size_of"]

#: The removed vLLM fields that are read, and the `structured_outputs` field each stands for.
GUIDED_FIELDS = {"guided_json": "json", "guided_regex": "regex", "guided_choice": "choice", "guided_grammar": "grammar"}


def size_of(value: Any) -> int:
    """Bytes of a format specification as JSON text (what `--max-format-bytes` bounds)."""
    return len(value.encode("utf-8")) if isinstance(value, str) else len(json.dumps(value).encode("utf-8"))


def _guided(extra: dict[str, Any]) -> dict[str, Any]:
    """The constraints given through the removed `guided_*` fields."""
    found = {}
    for key, value in extra.items():
        if not key.startswith("guided_") or value is None:
            continue
        if key in GUIDED_FIELDS:
            found[GUIDED_FIELDS[key]] = value
        elif key == "guided_decoding_backend":
            if value not in ("grammask", "auto", ""):
                raise APIError(400, f"this server decodes with grammask, not {value!r}", param=key)
        else:
            raise APIError(400, f"{key} is not supported (vLLM removed the guided_* fields)", param=key)
    return found


def request_grammar(
    response_format: ResponseFormat | None,
    structured_outputs: StructuredOutputs | None,
    extra: dict[str, Any],
    *,
    max_format_bytes: int,
    limits: Limits = DEFAULT_LIMITS,
) -> Grammar | None:
    """The grammar a request asks for, or None; `APIError` 400 for a bad or ambiguous format."""
    asked: list[tuple[str, str, Any]] = []  # (param, kind, spec)
    compact = False
    if response_format is not None and response_format.type != "text":
        if response_format.type == "json_object":
            asked.append(("response_format", "json_object", True))
        else:
            spec = response_format.json_schema
            if spec is None or spec.schema_ is None:
                raise APIError(400, "response_format json_schema needs json_schema.schema", param="response_format")
            asked.append(("response_format", "json_schema", (spec.schema_, bool(spec.strict))))
    if structured_outputs is not None:
        so = structured_outputs
        if so.whitespace_pattern is not None:
            raise APIError(400, "whitespace_pattern is not supported", param="structured_outputs.whitespace_pattern")
        compact = so.disable_any_whitespace
        for name in ("json", "regex", "choice", "grammar", "structural_tag"):
            value = getattr(so, "json_" if name == "json" else name)
            if value is not None:
                asked.append((f"structured_outputs.{name}", name, value))
        if so.json_object:
            asked.append(("structured_outputs.json_object", "json_object", True))
    for name, value in _guided(extra).items():
        asked.append((f"guided_{name}", name, value))
    if not asked:
        return None
    if len(asked) > 1:
        names = ", ".join(param for param, _, _ in asked)
        raise APIError(
            400, f"give at most one output format; this request has {len(asked)}: {names}", param=asked[1][0]
        )
    param, kind, spec = asked[0]
    raw = spec[0] if kind == "json_schema" else spec
    if size_of(raw) > max_format_bytes:
        raise APIError(
            400,
            f"the format is {size_of(raw)} bytes, over this server's limit of {max_format_bytes}",
            param=param,
            code="format_too_large",
        )
    try:
        return _build(kind, spec, compact, limits)
    except (GrammarError, ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split())
        raise APIError(400, f"invalid {param}: {reason}", param=param, code="invalid_format") from None


def _build(kind: str, spec: Any, compact: bool, limits: Limits) -> Grammar:
    if kind == "json_schema":
        schema, strict = spec
        return grammar_for("json", schema, compact=compact, strict=strict, limits=limits)
    return grammar_for(kind, spec, compact=compact, limits=limits)


def with_timeout(limits: Limits, seconds: float | None) -> Limits:
    """`limits` with a compile deadline."""
    return replace(limits, compile_timeout_s=seconds)
