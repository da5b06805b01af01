"""A small JSON Schema validator for literal values: filters `enum`/`const` values and property names.

It evaluates only the keywords grammask can decide on a known value; for any other constraining
keyword it raises `GrammarError`, so a value is never kept on a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from grammask.errors import GrammarError
from grammask.frontends.json_schema import strings
from grammask.frontends.json_schema.formats import UNENFORCEABLE_FORMATS, format_regex
from grammask.frontends.json_schema.normalise import (
    canonical,
    json_type,
    number_value,
    property_schema,
    witnessed,
)
from grammask.frontends.regex_syntax import parse_search_pattern

__all__ = ["conforms"]

Resolve = Callable[[object, str], dict]


def _search(pattern: str, value: str, ptr: str) -> bool:
    """Whether `pattern` finds a match in `value`: as a grammar reads the pattern (ECMA-262), or
    by Python's `re` where grammask has no regex for it (a lookahead, say)."""
    try:
        return strings.matches(parse_search_pattern(pattern, flavor="ecma"), value)
    except GrammarError:
        pass
    try:
        return re.search(pattern, value) is not None
    except re.error as exc:
        raise GrammarError(f"cannot evaluate pattern: {exc}", pointer=f"{ptr}/pattern") from None


def conforms(value: Any, schema: dict, ptr: str, resolve: Resolve) -> bool:
    """Whether `value` (any JSON value: its kind is read from `json_type`) is valid under the
    normalised `schema`; `resolve` normalises a subschema."""
    if schema.get("_false"):
        return False
    t = json_type(value)
    if "type" in schema and not (t in schema["type"] or (t == "integer" and "number" in schema["type"])):
        return False
    if "enum" in schema and canonical(value) not in {canonical(v) for v in schema["enum"]}:
        return False
    if "_exclude" in schema and canonical(value) in {canonical(v) for v in schema["_exclude"]}:
        return False
    if t == "integer" and schema.get("_nonint"):
        return False
    if t in ("integer", "number"):
        x = number_value(value)
        for key, ok in (
            ("minimum", x.__ge__),
            ("maximum", x.__le__),
            ("exclusiveMinimum", x.__gt__),
            ("exclusiveMaximum", x.__lt__),
        ):
            if key in schema and not ok(schema[key]):
                return False
        if "multipleOf" in schema and (x / number_value(schema["multipleOf"])).denominator != 1:
            return False
    if t == "string":
        if not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
            return False
        patterns = ([schema["pattern"]] if "pattern" in schema else []) + schema.get("_patterns", [])
        if not all(_search(p, value, ptr) for p in patterns):
            return False
        if any(_search(p, value, ptr) for p in schema.get("_not_patterns", [])):
            return False
        if "format" in schema:
            if schema["format"] in UNENFORCEABLE_FORMATS:
                raise GrammarError("enum or property names combined with format", pointer=f"{ptr}/format")
            regex = format_regex(schema["format"])
            if regex is not None and not strings.matches(regex, value):
                return False
        for name in schema.get("_not_formats", []):
            regex = format_regex(name)
            if regex is not None and strings.matches(regex, value):
                return False
    if t == "array":
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
            return False
        prefix = schema.get("prefixItems", [])
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else schema.get("items", True)
            if not conforms(item, resolve(sub, f"{ptr}/items"), f"{ptr}/items", resolve):
                return False
        if schema.get("uniqueItems") and len({canonical(v) for v in value}) != len(value):
            return False
        if "contains" in schema:
            raise GrammarError("enum combined with contains", pointer=f"{ptr}/contains")
    if t == "object":
        if not schema.get("minProperties", 0) <= len(value) <= schema.get("maxProperties", len(value)):
            return False
        if any(name not in value for name in schema.get("required", [])):
            return False
        named = set(schema.get("properties", {})) | set(schema.get("required", []))
        if schema.get("_extra") and all(name in named for name in value):
            return False
        for witness in schema.get("_witness", []):
            if not any(
                name not in named
                and witnessed(witness, name, ptr)
                and conforms(item, resolve(witness[1], ptr), ptr, resolve)
                for name, item in value.items()
            ):
                return False
        for name, item in value.items():
            if "propertyNames" in schema and not conforms(name, resolve(schema["propertyNames"], ptr), ptr, resolve):
                return False
            if not conforms(item, resolve(property_schema(schema, name, ptr), ptr), ptr, resolve):
                return False
    for kind, subs, sub_ptr in schema.get("_branches", []):
        hits = sum(conforms(value, resolve(s, f"{sub_ptr}/{i}"), sub_ptr, resolve) for i, s in enumerate(subs))
        if hits == 0 or (kind == "oneOf" and hits > 1):
            return False
    for sub, sub_ptr in schema.get("_not", []):
        if conforms(value, resolve(sub, sub_ptr), sub_ptr, resolve):
            return False
    for key in (
        "if",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "unevaluatedProperties",
        "unevaluatedItems",
    ):
        if key in schema:
            raise GrammarError(f"enum combined with {key}", pointer=f"{ptr}/{key}")
    return True
