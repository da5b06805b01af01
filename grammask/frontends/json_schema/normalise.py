"""Schema normalisation: draft spellings to 2020-12, `$ref` inlining for merges, and `allOf` merging.

A normalised schema is a dict with 2020-12 keywords, `enum` in place of `const`, numeric exclusive
bounds as numbers, `prefixItems`/`items` for arrays, and `"_false": True` for a schema nothing
satisfies. `anyOf`/`oneOf` become `_branches` entries `(kind, subschemas, pointer)`; `if`/`then`/
`else`, `dependencies`, `dependentRequired` and `dependentSchemas` become entries of kind "if" there
(an anyOf of exclusive branches: `(if ∧ then) ∨ (¬if ∧ else)`, `¬a ∨ (a ∧ deps)`); `not` becomes
`_not` entries `(subschema, pointer)`; `_exclude` lists values the instance must differ from (the
negation of an `enum`); `_nonint` keeps only non-integer numbers (the negation of `type: integer`);
`_extra` asks an object for at least one key it does not name (the negation of
`additionalProperties: false`); `_patterns` lists more patterns a string must match (an `allOf` of
different patterns), `_not_patterns` patterns it must not match and `_not_formats` formats it must
not meet (the negations of `pattern` and `format`); `_additional_except` lists `(patterns, schema)`
rules, each an `additionalProperties` relative to its own `patternProperties` (an `allOf` of objects
whose patterns and additional schemas differ): a key declared nowhere and matching none of a rule's
patterns meets its schema; `_witness` lists `(pattern, schema, names, patterns)`: some key the
object does not declare matches the pattern, is none of the names and matches none of the
patterns, and has a value meeting the schema (the negations of `patternProperties` and of an
`additionalProperties` schema).
Merging intersects keyword by keyword; property-wise it keeps each object's own
`additionalProperties` meaning (a property one side does not declare gets that side's additional
or pattern schema), and the merged `properties` order is the first schema's followed by the new
names of the next.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

from grammask.errors import GrammarError
from grammask.frontends.json_schema.resolve import Document, escape_pointer

__all__ = [
    "FALSE",
    "KEYWORDS",
    "canonical",
    "json_type",
    "merge",
    "normalise",
    "number_value",
    "pattern_matches",
    "property_schema",
    "types_of",
    "witnessed",
]

FALSE: dict = {"_false": True}
ALL_TYPES = frozenset({"null", "boolean", "object", "array", "string", "number", "integer"})
#: Keywords that constrain an instance (or are resolved away by `normalise`). Everything else —
#: annotations, `x-*` extensions, vendor and unknown keywords — is ignored, never merged.
KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "nullable",
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "prefixItems",
        "items",
        "additionalItems",
        "contains",
        "minContains",
        "maxContains",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "$ref",
        "dependencies",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
        "unevaluatedItems",
        "$dynamicRef",
        "$recursiveRef",
        # internal forms (a normalised schema normalises to itself)
        "_false",
        "_branches",
        "_not",
        "_exclude",
        "_nonint",
        "_extra",
        "_patterns",
        "_not_patterns",
        "_not_formats",
        "_additional_except",
        "_witness",
    }
)


def canonical(value: object) -> str:
    """A text equal for JSON-equal values (1 and 1.0 included)."""
    return json.dumps(_numbers_as_fractions(value), sort_keys=True)


def _numbers_as_fractions(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return {"#n": str(Fraction(v))} if math.isfinite(v) else str(v)
    if isinstance(v, list):
        return [_numbers_as_fractions(x) for x in v]
    return {k: _numbers_as_fractions(x) for k, x in v.items()}


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def number_value(value: float | Fraction) -> Fraction:
    """The exact decimal a JSON number denotes (a float by its shortest spelling: 0.1 is 1/10)."""
    if isinstance(value, float):
        return Fraction(repr(value)) if math.isfinite(value) else Fraction(0)
    return Fraction(value)


def _num(value: object, ptr: str, key: str) -> Fraction:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, Fraction))
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise GrammarError(f"{key} must be a number, not {value!r}", pointer=ptr)
    return number_value(value)


def normalise(schema: object, ptr: str, doc: Document) -> dict:
    """One schema position in normal form (shallow: subschemas stay as written)."""
    if schema is True:
        return {}
    if schema is False:
        return dict(FALSE)
    if not isinstance(schema, dict):
        raise GrammarError(f"a schema must be an object or a boolean, not {type(schema).__name__}", pointer=ptr)
    out = {k: v for k, v in schema.items() if k in KEYWORDS}
    _check_types(out, ptr)
    if not doc.assert_formats:
        out.pop("format", None)
    if "$ref" in out and doc.draft <= 7:
        out = {"$ref": out["$ref"]}
    if "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        if not all(isinstance(t, str) and t in ALL_TYPES for t in types):
            raise GrammarError(f"unknown type {out['type']!r}", pointer=f"{ptr}/type")
        out["type"] = sorted(set(types))
    if out.pop("nullable", False) is True and "type" in out:
        out["type"] = sorted(set(out["type"]) | {"null"})
        if "enum" in out:
            out["enum"] = list(out["enum"]) + [None]
    if "const" in out:
        const = out.pop("const")
        out["enum"] = [v for v in out.get("enum", [const]) if canonical(v) == canonical(const)]
    if "enum" in out and not isinstance(out["enum"], list):
        raise GrammarError("enum must be an array", pointer=f"{ptr}/enum")
    for key, strict_key in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if isinstance(out.get(strict_key), bool) and out.pop(strict_key) and key in out:
            out[strict_key] = out.pop(key)
        if key in out:
            out[key] = _num(out[key], ptr, key)
        if strict_key in out:
            out[strict_key] = _num(out[strict_key], ptr, strict_key)
    if isinstance(out.get("items"), list):
        if "prefixItems" in out:
            raise GrammarError("array-form items next to prefixItems", pointer=f"{ptr}/items")
        out["prefixItems"] = out.pop("items")
        if "additionalItems" in out:
            out["items"] = out.pop("additionalItems")
    out.pop("additionalItems", None)
    for kind in ("anyOf", "oneOf"):
        if kind in out:
            if not isinstance(out[kind], list) or not out[kind]:
                raise GrammarError(f"{kind} must be a non-empty array", pointer=f"{ptr}/{kind}")
            out["_branches"] = [*out.get("_branches", []), (kind, out.pop(kind), f"{ptr}/{kind}")]
    if "not" in out:
        out["_not"] = [(out.pop("not"), f"{ptr}/not")]
    _conditionals(out, ptr)
    return out


_OBJECT_KEYWORDS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
)
_LIST_KEYWORDS = ("enum", "allOf", "anyOf", "oneOf", "prefixItems")
_COUNT_KEYWORDS = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
)


def _check_types(schema: dict, ptr: str) -> None:
    """A `GrammarError` for a keyword whose value has the wrong JSON type (checked before any use,
    so no malformed schema reaches the builder as a Python exception); counts such as `2.0`
    become ints."""

    def fail(key: str, what: str) -> GrammarError:
        return GrammarError(f"{key} must be {what}, not {_json_name(schema[key])}", pointer=f"{ptr}/{key}")

    for key in _OBJECT_KEYWORDS:
        if key in schema and not isinstance(schema[key], dict):
            raise fail(key, "an object")
    for key in _LIST_KEYWORDS:
        if key in schema and not isinstance(schema[key], list):
            raise fail(key, "an array")
    for key in _COUNT_KEYWORDS:
        if key not in schema:
            continue
        v = schema[key]
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or not math.isfinite(v)
            or v < 0
            or not float(v).is_integer()
        ):
            raise fail(key, "a non-negative integer")
        schema[key] = int(v)
    if "required" in schema and not (
        isinstance(schema["required"], list) and all(isinstance(n, str) for n in schema["required"])
    ):
        raise fail("required", "an array of strings")
    for key in ("pattern", "format"):
        if key in schema and not isinstance(schema[key], str):
            raise fail(key, "a string")
    if "uniqueItems" in schema and not isinstance(schema["uniqueItems"], bool):
        raise fail("uniqueItems", "a boolean")
    for key in ("enum", "const"):
        values = schema.get(key, []) if key == "enum" else [schema.get(key)]
        if key in schema and not all(_is_json_value(v) for v in values):
            raise GrammarError(
                f"{key} holds a value that is not JSON (a set, bytes, tuple or a non-string object key)",
                pointer=f"{ptr}/{key}",
            )


def _is_json_value(value: object) -> bool:
    """Whether `value` is made of what `json.loads` returns: None, bool, int, float, str, list, dict."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack += v
        elif isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                return False
            stack += v.values()
        elif not (v is None or isinstance(v, (bool, int, float, str))):
            return False
    return True


def _json_name(value: object) -> str:
    """The JSON type name of a keyword value, or its Python type when it is not JSON."""
    return json_type(value) if _is_json_value(value) else type(value).__name__


def _conditionals(out: dict, ptr: str) -> None:
    """`if`/`then`/`else` and the dependency keywords as branches of kind "if": an anyOf whose
    branches exclude each other by construction (each exact).

    Next to unevaluated*, an `if` without `then`/`else` still counts: its annotations are seen
    when it passes. `cond ∨ true` says so without negating `cond` (an instance that passes `cond`
    may take either branch, the first with its annotations).
    """
    then, otherwise = out.pop("then", True), out.pop("else", True)
    if "if" in out:
        cond = out.pop("if")
        if not (_trivial(then) and _trivial(otherwise)):
            out["_branches"] = [
                *out.get("_branches", []),
                ("if", [{"allOf": [cond, then]}, {"not": cond, "allOf": [otherwise]}], f"{ptr}/if"),
            ]
        elif ("unevaluatedProperties" in out or "unevaluatedItems" in out) and not _trivial(cond):
            out["_branches"] = [*out.get("_branches", []), ("if", [cond, True], f"{ptr}/if")]
    deps = []
    for key in ("dependencies", "dependentRequired", "dependentSchemas"):
        table = out.pop(key, {})
        if not isinstance(table, dict):
            raise GrammarError(f"{key} must be an object", pointer=f"{ptr}/{key}")
        for name, dep in table.items():
            dptr = f"{ptr}/{key}/{escape_pointer(name)}"
            if isinstance(dep, list):
                if not all(isinstance(n, str) for n in dep):
                    raise GrammarError(f"{key} lists must hold property names", pointer=dptr)
                if dep:
                    deps.append(("if", [{"properties": {name: False}}, {"required": [name, *dep]}], dptr))
            elif not _trivial(dep):
                deps.append(("if", [{"properties": {name: False}}, {"required": [name], "allOf": [dep]}], dptr))
    if deps:
        out["_branches"] = [*out.get("_branches", []), *deps]


def _trivial(schema: object) -> bool:
    return schema is True or (isinstance(schema, dict) and not set(schema) & KEYWORDS)


def types_of(schema: dict) -> frozenset[str]:
    """The JSON types a normalised schema may take ("integer" is listed on its own)."""
    if schema.get("_false"):
        return frozenset()
    types = set(schema.get("type", ALL_TYPES))
    if "number" in types:
        types.add("integer")
    if schema.get("_nonint"):
        types.discard("integer")
    if "enum" in schema:
        types &= {json_type(v) for v in schema["enum"]} | ({"integer"} if "number" in types else set())
        enum_types = {json_type(v) for v in schema["enum"]}
        types = {t for t in types if t in enum_types or (t == "number" and "integer" in enum_types)}
    return frozenset(types)


def pattern_matches(pattern: str, name: str, ptr: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error as exc:
        raise GrammarError(f"cannot evaluate pattern {pattern!r}: {exc}", pointer=ptr) from None


def witnessed(witness: tuple, name: str, ptr: str) -> bool:
    """Whether key `name` (one the object does not declare) may be a `_witness` entry's key: the
    entry's pattern matches it, and it is none of its excluded names nor matched by its excluded
    patterns."""
    pattern, _, except_names, except_patterns = witness
    return (
        pattern_matches(pattern, name, ptr)
        and name not in except_names
        and not any(pattern_matches(p, name, ptr) for p in except_patterns)
    )


def property_schema(schema: dict, name: str, ptr: str) -> object:
    """The schema a property called `name` gets in an object schema (declared, pattern or additional)."""
    if name in schema.get("properties", {}):
        parts = [schema["properties"][name]]
    else:
        parts = []
    for pattern, sub in schema.get("patternProperties", {}).items():
        if pattern_matches(pattern, name, ptr):
            parts.append(sub)
    if not parts:
        parts.append(schema.get("additionalProperties", True))
    if name not in schema.get("properties", {}):
        for patterns, sub in schema.get("_additional_except", []):
            if not any(pattern_matches(pattern, name, ptr) for pattern in patterns):
                parts.append(sub)
    return parts[0] if len(parts) == 1 else {"allOf": parts}


def _additional_rules(schema: dict) -> list[tuple[tuple[str, ...], object]]:
    """`schema`'s `_additional_except` rules, and its `additionalProperties` as one more (relative
    to its `patternProperties`)."""
    rules = list(schema.get("_additional_except", []))
    if "additionalProperties" in schema:
        rules.append((tuple(schema.get("patternProperties", {})), schema["additionalProperties"]))
    return rules


def _both(a: object, b: object) -> object:
    if a is True or a == {}:
        return b
    if b is True or b == {} or a == b:
        return a
    return {"allOf": [a, b]}


def _merge_objects(a: dict, b: dict, out: dict, ptr: str) -> None:
    names = list(a.get("properties", {})) + [n for n in b.get("properties", {}) if n not in a.get("properties", {})]
    if names:
        out["properties"] = {n: _both(property_schema(a, n, ptr), property_schema(b, n, ptr)) for n in names}
    pa, pb = a.get("patternProperties", {}), b.get("patternProperties", {})
    if pa or pb:
        merged = dict(pa)
        for pattern, sub in pb.items():
            merged[pattern] = _both(merged[pattern], sub) if pattern in merged else sub
        out["patternProperties"] = merged
    if (pa and b.get("additionalProperties", True) is not True) or (
        pb and a.get("additionalProperties", True) is not True
    ):
        # Each side's additional schema holds where that side's own patterns do not match.
        out.pop("additionalProperties", None)
        out["_additional_except"] = [
            rule for rule in _additional_rules(a) + _additional_rules(b) if rule[1] is not True and rule[1] != {}
        ]
    elif "additionalProperties" in a or "additionalProperties" in b:
        out["additionalProperties"] = _both(a.get("additionalProperties", True), b.get("additionalProperties", True))
    if "propertyNames" in a or "propertyNames" in b:
        out["propertyNames"] = _both(a.get("propertyNames", True), b.get("propertyNames", True))
    if "required" in a or "required" in b:
        out["required"] = list(dict.fromkeys(list(a.get("required", [])) + list(b.get("required", []))))


def _merge_arrays(a: dict, b: dict, out: dict) -> None:
    pa, pb = a.get("prefixItems", []), b.get("prefixItems", [])
    if pa or pb:

        def at(s: dict, p: list, i: int) -> object:
            return p[i] if i < len(p) else s.get("items", True)

        out["prefixItems"] = [_both(at(a, pa, i), at(b, pb, i)) for i in range(max(len(pa), len(pb)))]
    if "items" in a or "items" in b:
        out["items"] = _both(a.get("items", True), b.get("items", True))


def _lcm(a: Fraction, b: Fraction, ptr: str) -> Fraction:
    """The least common multiple of two positive steps: x is a multiple of both exactly when it is
    a multiple of it (lcm of the numerators over gcd of the denominators, in lowest terms)."""
    if a <= 0 or b <= 0:
        raise GrammarError("multipleOf must be a positive number", pointer=ptr)
    return Fraction(math.lcm(a.numerator, b.numerator), math.gcd(a.denominator, b.denominator))


def merge(a: dict, b: dict, ptr: str) -> dict:
    """The conjunction of two normalised schemas (without `$ref`, whose `allOf` is already split)."""
    if a.get("_false") or b.get("_false"):
        return dict(FALSE)
    out = {k: v for k, v in a.items() if k not in b}
    out.update({k: v for k, v in b.items() if k not in a})
    also: list[str] = []  # a second pattern, which the string must match too
    for key in set(a) & set(b):
        x, y = a[key], b[key]
        if key == "type":
            tx, ty = set(x), set(y)
            tx |= {"integer"} if "number" in tx else set()
            ty |= {"integer"} if "number" in ty else set()
            out[key] = sorted(tx & ty)
        elif key == "enum":
            keep = {canonical(v) for v in y}
            out[key] = [v for v in x if canonical(v) in keep]
        elif key in ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"):
            out[key] = max(x, y)
        elif key in ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"):
            out[key] = min(x, y)
        elif key == "uniqueItems":
            out[key] = x or y
        elif key == "multipleOf":
            out[key] = _lcm(_num(x, ptr, key), _num(y, ptr, key), ptr)
        elif key in (
            "_branches",
            "_not",
            "_exclude",
            "_patterns",
            "_not_patterns",
            "_not_formats",
            "_additional_except",
            "_witness",
            "allOf",
        ):
            out[key] = [*x, *y]
        elif key == "pattern" and x != y:
            out[key] = x
            also.append(y)
        elif key in (
            "properties",
            "patternProperties",
            "additionalProperties",
            "required",
            "propertyNames",
            "prefixItems",
            "items",
        ):
            continue
        elif x != y:
            raise GrammarError(f"allOf with two different {key!r} values cannot be merged exactly", pointer=ptr)
        else:
            out[key] = x  # the same value on both sides (a `pattern`, `format`, `contains`, ...)
    if also:
        out["_patterns"] = [*out.get("_patterns", []), *also]
    if set(a) & {"properties", "patternProperties", "additionalProperties", "required", "propertyNames"} or set(b) & {
        "properties",
        "patternProperties",
        "additionalProperties",
        "required",
        "propertyNames",
    }:
        _merge_objects(a, b, out, ptr)
    if set(a) & {"prefixItems", "items"} or set(b) & {"prefixItems", "items"}:
        _merge_arrays(a, b, out)
    return out
