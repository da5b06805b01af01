"""Normalised schemas → grammar IR: one expression per schema, one rule per `$ref` target.

Objects list their declared properties in `properties` order (optional ones may be left out), then
any additional properties. Arrays follow `prefixItems` then `items`. Each state of an object body
(next property, properties so far) is a rule, so optional properties cost linear, not exponential, size.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Callable, Sequence
from fractions import Fraction

from grammask.errors import GrammarError
from grammask.frontends.json_schema import strings
from grammask.frontends.json_schema.formats import UNENFORCEABLE_FORMATS, format_regex
from grammask.frontends.json_schema.normalise import (
    ALL_TYPES,
    FALSE,
    canonical,
    json_type,
    merge,
    normalise,
    number_value,
    pattern_matches,
    property_schema,
    types_of,
    witnessed,
)
from grammask.frontends.json_schema.numbers import Bounds, listed_multiples, number_regex, signed_multiples
from grammask.frontends.json_schema.resolve import Document, escape_pointer
from grammask.frontends.json_schema.validate import conforms
from grammask.frontends.json_schema.whitespace import MAX_PRETTY_DEPTH, Whitespace
from grammask.frontends.regex_syntax import parse_search_pattern
from grammask.ir import grammar as g
from grammask.ir import regex as rx
from grammask.limits import DEFAULT_LIMITS, Limits, check_deadline

__all__ = ["LEXEME_REPEAT_MAX", "MAX_BRANCH_PRODUCT", "MAX_SCHEMA_DEPTH", "Builder"]

#: Most pairs of `oneOf` branches that may overlap, in a `oneOf` under `not`: its negation is
#: "none of them, or two at once", one `allOf` per such pair.
ONEOF_NEGATION_PAIRS_MAX = 16

#: Most `patternProperties` an object may have for its additional keys to be split exactly, by
#: the set of patterns each key matches (2 ** n key classes, many of them empty); over it, every
#: additional key's value must meet every pattern's schema.
PATTERN_CLASSES_MAX = 3

#: Longest bounded string repeat kept inside one lexeme; longer ones become binary-block rules,
#: since a lexeme's automaton grows with its bound.
LEXEME_REPEAT_MAX = 64
#: Strings with a maxLength up to this are written as a chain of `LEXEME_REPEAT_MAX`-character
#: blocks (a rule per block); longer ones as binary blocks (a rule per power of two).
CHUNKED_STRING_MAX = 4096
#: Most arrays and objects one value may nest (the builder recurses per level, within
#: `RECURSION_LIMIT` frames).
MAX_SCHEMA_DEPTH = 1000
#: Most alternatives that distributing nested anyOf/oneOf over each other may create.
MAX_BRANCH_PRODUCT = 1024
#: Settled into additionalProperties/items where their annotations are known (`settle`).
_UNEVALUATED = ("unevaluatedProperties", "unevaluatedItems")
#: Most anyOf branches next to unevaluated* that are expanded into one option per set of passing
#: branches (2**n - 1 options); more are read one branch at a time (stricter).
ANYOF_SUBSETS_MAX = 4
#: Most negations one schema may expand (a guard against recursive `not` of `$ref`).
MAX_NEGATIONS = 4096
#: Most item values a `uniqueItems` array over a finite set of values may draw from.
UNIQUE_ITEMS_MAX_VALUES = 8
#: keyword → (the type it constrains, the keyword of its complement, offset of the complement's value).
_COMPLEMENT_BOUND = {
    "minimum": ("number", "exclusiveMaximum", 0),
    "exclusiveMinimum": ("number", "maximum", 0),
    "maximum": ("number", "exclusiveMinimum", 0),
    "exclusiveMaximum": ("number", "minimum", 0),
    "minLength": ("string", "maxLength", -1),
    "maxLength": ("string", "minLength", 1),
    "minItems": ("array", "maxItems", -1),
    "maxItems": ("array", "minItems", 1),
    "minProperties": ("object", "maxProperties", -1),
    "maxProperties": ("object", "minProperties", 1),
}


class _Rules:
    """A family of named rules `(tag, serial, *args)`, each made once by `body(family, *args)`.

    `body` reaches the family through its argument, not its closure: local functions that call
    each other are a reference cycle, which would keep every expression they captured alive until
    a full garbage collection (a pause in some later decoding step)."""

    def __init__(self, builder: Builder, tag: str, body: Callable[..., g.Expr], ptr: str) -> None:
        self.builder = builder
        self.key = (tag, next(builder._objects))
        self.body = body
        self.name = f"#{ptr} ({tag}"  # the rules' names: the schema's place, the family, the args

    def __call__(self, *args: object) -> g.Expr:
        name = f"{self.name} {', '.join(map(str, args))})" if args else f"{self.name})"
        return self.builder.rule((*self.key, *args), lambda: self.body(self, *args), name)


def _single_word(node: rx.RegexNode) -> str | None:
    """The one string `node` matches, if it is a plain literal."""
    items = node.items if isinstance(node, rx.Concat) else (node,)
    chars = [
        i for i in items if isinstance(i, rx.CharClass) and len(i.ranges) == 1 and i.ranges[0][0] == i.ranges[0][1]
    ]
    if len(chars) == len(items):
        return "".join(chr(c.ranges[0][0]) for c in chars)
    return None


def _float_spelling(value: int) -> bool:
    """Whether `value` is also written `value.0`: the float is exact, and `json.dumps` of it has no
    exponent (below 1e16)."""
    return abs(value) < 10**16 and float(value) == value


def _is_json(value: object) -> bool:
    """Whether `value` has a JSON text: NaN and the infinities have none, so an enum or const value
    holding one can never be produced (and is dropped, as no instance can equal it)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return False
        if isinstance(v, list):
            stack += v
        elif isinstance(v, dict):
            stack += v.values()
    return True


def _is_true(schema: object) -> bool:
    return schema is True or schema == {}


def _bounds(s: dict) -> Bounds:
    return Bounds(
        lo=max((s[k] for k in ("minimum", "exclusiveMinimum") if k in s), default=None),
        hi=min((s[k] for k in ("maximum", "exclusiveMaximum") if k in s), default=None),
        lo_strict="exclusiveMinimum" in s and ("minimum" not in s or s["exclusiveMinimum"] >= s["minimum"]),
        hi_strict="exclusiveMaximum" in s and ("maximum" not in s or s["exclusiveMaximum"] <= s["maximum"]),
    )


def _ranges_disjoint(a: dict, b: dict) -> bool:
    x, y = _bounds(a), _bounds(b)
    for lo, hi in ((x, y), (y, x)):
        if (
            lo.hi is not None
            and hi.lo is not None
            and (lo.hi < hi.lo or (lo.hi == hi.lo and (lo.hi_strict or hi.lo_strict)))
        ):
            return True
    return False


def _pending(s: dict) -> bool:
    """Whether `s` holds an unevaluatedProperties/unevaluatedItems not yet settled."""
    return any(key in s for key in _UNEVALUATED)


def settle(s: dict) -> dict:
    """`s` with unevaluatedProperties/unevaluatedItems turned into additionalProperties/items.

    Exact once every in-place applicator whose annotations they see (`$ref`, `allOf`, the chosen
    `anyOf`/`oneOf`/`if` branch) is merged into `s`, and before any `not` is (a `not` evaluates
    nothing): a merged schema declares exactly the union of what its parts evaluate (a part with
    additionalProperties/items evaluates everything), so what it leaves undeclared is unevaluated.
    Items `contains` matches are evaluated too: an item past the prefix satisfies contains or the
    unevaluatedItems schema.
    """
    s = dict(s)
    if "unevaluatedProperties" in s:
        s.setdefault("additionalProperties", s.pop("unevaluatedProperties"))
    if "unevaluatedItems" in s:
        rest = s.pop("unevaluatedItems")
        if "items" not in s:
            s["items"] = {"anyOf": [s["contains"], rest]} if "contains" in s and not _is_true(rest) else rest
    return s


def _declared(s: dict) -> frozenset[str]:
    """The property names an object schema lists (its `properties` and `required`)."""
    return frozenset(s.get("properties", {})) | frozenset(s.get("required", []))


def _pattern(pattern: str, ptr: str) -> rx.RegexNode:
    """The strings in which `pattern` finds a match."""
    try:
        return parse_search_pattern(pattern, flavor="ecma")
    except GrammarError as exc:
        raise GrammarError(f"pattern: {exc.reason}", pointer=f"{ptr}/pattern") from None


def _matching_any(patterns: Sequence[str]) -> rx.RegexNode:
    """The keys in which one of `patterns` (`patternProperties` names) finds a match."""
    return rx.alt(*(parse_search_pattern(p, flavor="ecma") for p in patterns))


def _unconstraining(key: str, value: object) -> bool:
    """Whether the keyword, as written, constrains nothing (so its negation is empty)."""
    if key in ("additionalProperties", "items", "propertyNames"):
        return _is_true(value)
    if key == "format":
        return not isinstance(value, str) or format_regex(value) is None
    return key == "uniqueItems" and value is False


#: Additional keys of an object that share a value schema: their regex (or, from a finite
#: `propertyNames`, their list) and the schemas their value meets.
_KeyClass = tuple[rx.RegexNode, list[str] | None, list[object]]
#: An `_additional_except` rule: keys matching none of these patterns meet this schema.
_Rule = tuple[tuple[str, ...], object]

_ANY_CHAR_JSON = strings.encode(rx.ANY_CHAR)
_QUOTE = rx.literal('"')


class Builder:
    """Builds the rules of one schema document."""

    def __init__(
        self, doc: Document, ws: Whitespace, lenient: bool, strict: bool = False, limits: Limits = DEFAULT_LIMITS
    ) -> None:
        self.doc, self.ws, self.lenient, self.strict, self.limits = doc, ws, lenient, strict, limits
        self.rules: dict[str, g.Expr] = {}
        self.warnings: list[str] = []
        self._named: dict[object, str] = {}
        #: per rule name, the number of the last `name (n)` given out (see `rule`)
        self._suffixes: dict[str, int] = {}
        self._branches = 0
        self._negations = 0
        self._objects = itertools.count()

    # -- helpers -----------------------------------------------------------------------------

    def unsupported(self, reason: str, ptr: str) -> None:
        """Drop a constraint leniently (with a warning) or raise."""
        if not self.lenient:
            raise GrammarError(f"{reason} (pass lenient=True to drop it)", pointer=ptr)
        self.warnings.append(f"dropped at {ptr or '/'}: {reason}")

    def rule(self, key: object, make, name: str) -> g.Expr:
        """A rule for `key`, built by `make()` once; recursion sees the name before the body.
        `name` says where in the schema it comes from (its JSON Pointer, as `#/$defs/item`), so
        that an error about the rule names that place; a `<...>` name marks a helper (a long
        string's blocks), which errors skip for the rules that use it."""
        if key not in self._named:
            check_deadline("building the schema's rules")
            # The first free of `name`, `name (2)`, `name (3)` ...: rules are never dropped, so the
            # search goes on from where the last one for `name` stopped (a family of a thousand
            # rules at one place in the schema made a million tries from the start).
            n = self._suffixes.get(name, 1)
            unique = name if n == 1 else f"{name} ({n})"
            while unique in self.rules or unique == "root":
                n += 1
                unique = f"{name} ({n})"
            self._suffixes[name] = n
            name = unique
            self._named[key] = name
            self.rules[name] = g.FAIL
            self.rules[name] = make()
            if len(self.rules) > self.limits.max_grammar_rules:
                raise GrammarError(
                    f"the schema needs more than Limits.max_grammar_rules="
                    f"{self.limits.max_grammar_rules} grammar rules",
                    pointer="",
                )
        return g.ref(self._named[key])

    def flatten(self, schema: object, ptr: str, stack: tuple[str, ...] = ()) -> dict:
        """Normalise, inline `$ref` targets and merge `allOf`.

        The pieces merge in the order they are written, so the properties they declare come out
        in that order: a `$ref` written after `properties` puts its target's properties after
        them, an `allOf` written before `properties` puts its parts' first.
        """
        s = normalise(schema, ptr, self.doc)
        keys = list(s)
        own_at = min((keys.index(k) for k in ("properties", "required") if k in s), default=-1)
        pieces = sorted((keys.index(k), k) for k in ("$ref", "allOf") if k in s)
        ref, parts = s.pop("$ref", None), s.pop("allOf", [])
        out = None
        for _, key in sorted([(own_at, ""), *pieces]):
            if key == "$ref":
                target = self.doc.target(ref, ptr)
                if target in stack:
                    raise GrammarError("recursive $ref through allOf or sibling keywords", pointer=ptr)
                merged = [self.part(self.flatten(self.doc.at(target), target, (*stack, target)), target)]
            elif key == "allOf":
                merged = [
                    self.part(self.flatten(part, f"{ptr}/allOf/{i}", stack), f"{ptr}/allOf/{i}")
                    for i, part in enumerate(parts)
                ]
            else:
                merged = [s]
            for piece in merged:
                out = piece if out is None else merge(out, piece, ptr)
        assert out is not None
        return out

    def part(self, s: dict, ptr: str) -> dict:
        """A flattened schema about to be merged into a larger one (an `allOf` part, a `$ref`
        target, an `anyOf`/`oneOf` branch). Its unevaluated* keywords see its own annotations, not
        its cousins': they are settled on the part alone, unless its own branches are still open."""
        if not _pending(s):
            return s
        if s.get("_branches"):
            self.unsupported(
                "unevaluatedProperties/unevaluatedItems next to anyOf/oneOf/if inside an allOf part, "
                "$ref target or anyOf/oneOf branch",
                ptr,
            )
            return {k: v for k, v in s.items() if k not in _UNEVALUATED}
        return settle(s)

    def _resolver(self, schema: object, ptr: str) -> dict:
        return self.closed(self.flatten(schema, ptr))

    def closed(self, s: dict) -> dict:
        """`s` as its objects are built: in strict mode a missing `additionalProperties` is false.

        Applied to the flattened schema (after `$ref` and `allOf` merging), so properties declared by
        any merged part are allowed.
        """
        if self.strict and "additionalProperties" not in s:
            return {**s, "additionalProperties": False}
        return s

    # -- values ------------------------------------------------------------------------------

    def value(self, schema: object, ptr: str, depth: int) -> g.Expr:
        """A JSON value valid under `schema` (as written at `ptr`), nested `depth` containers deep."""
        check_deadline(f"compiling the schema at {ptr or '/'}")
        if depth > MAX_SCHEMA_DEPTH:
            raise GrammarError(
                f"values nest over MAX_SCHEMA_DEPTH={MAX_SCHEMA_DEPTH} arrays and objects deep", pointer=ptr
            )
        if (
            isinstance(schema, dict)
            and "$ref" in schema
            and (self.doc.draft <= 7 or set(schema) - {"$ref", "description", "title", "$comment"} == set())
        ):
            target = self.doc.target(schema["$ref"], ptr)
            return self.rule(
                (target, self._depth(depth)),
                lambda: self.build(self.flatten(self.doc.at(target), target, (target,)), target, depth),
                self._at(target, depth),
            )
        return self._own_rule_if_large(self.build(self.flatten(schema, ptr), ptr, depth), ptr, depth)

    def _own_rule_if_large(self, expr: g.Expr, ptr: str, depth: int) -> g.Expr:
        """A lexeme too large to inline becomes a rule, so the containers around it stay rules
        instead of growing one lexeme by every nesting level (a 500-deep array is 500 rules)."""
        if isinstance(expr, g.Lex) and rx.size(expr.regex) > g.INLINE_REGEX_SIZE:
            return self.rule(("lexeme", expr), lambda: expr, self._at(ptr, depth))
        return expr

    def _at(self, ptr: str, depth: int) -> str:
        """A rule's name for the schema at `ptr` (with its nesting depth where layout depends on it)."""
        depth = self._depth(depth)
        return f"#{ptr}" + (f" at depth {depth}" if depth else "")

    def _depth(self, depth: int) -> int:
        return depth if self.ws.indent is not None else 0

    def build(self, s: dict, ptr: str, depth: int) -> g.Expr:
        """A value valid under the flattened schema `s`."""
        if not s:
            layout = self._depth(depth)
            return self.rule(
                ("any", layout),
                lambda: self._build({"type": ["null"]}, ptr, depth, True),
                f"<any value at depth {layout}>" if layout else "<any value>",
            )
        return self._build(s, ptr, depth)

    def _build(self, s: dict, ptr: str, depth: int, anything: bool = False) -> g.Expr:
        if anything:
            s = {}
        if s.get("_false"):
            return g.FAIL
        if _pending(s):
            if s.get("_branches"):
                return self._branch(s, ptr, depth)  # the chosen branches' annotations first
            s = settle(s)  # before folding `not`, whose keywords evaluate nothing
        if s.get("_not"):
            s = self._fold_not(s)
            if s.get("_false"):
                return g.FAIL
        if s.get("_branches"):
            return self._branch(s, ptr, depth)
        if "$dynamicRef" in s:
            self.unsupported(
                "$dynamicRef whose target depends on the dynamic scope (several schema resources "
                "define its $dynamicAnchor, the root not among them)",
                f"{ptr}/$dynamicRef",
            )
        if "$recursiveRef" in s:
            self.unsupported("$recursiveRef (draft 2019-09) is not supported", f"{ptr}/$recursiveRef")
        excluded = s.get("_exclude", [])
        if "enum" in s:
            return self._enum(s, ptr, depth)
        types = types_of(s)
        parts = []
        if "null" in types and None not in excluded:
            parts.append(g.literal("null"))
        if "boolean" in types:
            words = [w for w, v in (("true", True), ("false", False)) if not any(x is v for x in excluded)]
            parts.append(g.lex(rx.alt(*map(rx.literal, words))) if words else g.FAIL)
        if "number" in types or "integer" in types:
            parts.append(self.number(s, ptr, integer="number" not in types))
        if "string" in types:
            parts.append(self.string(s, ptr))
        if "array" in types:
            parts.append(self.array(s, ptr, depth))
        if "object" in types:
            parts.append(self.object(s, ptr, depth))
        for kind in {json_type(v) for v in excluded} & {"array", "object"} & types:
            self.unsupported(f"not: enum/const with an {kind} value", f"{ptr}/not")
        return g.alt(*parts)

    def _enum(self, s: dict, ptr: str, depth: int) -> g.Expr:
        """The enum values valid under the rest of `s`; strings share one lexeme (a trie)."""
        rest = self.closed({k: v for k, v in s.items() if k != "enum"})
        seen, words, integers, others = set(), [], [], []
        for v in s["enum"]:
            key = canonical(v)
            if key in seen or not _is_json(v) or not conforms(v, rest, ptr, self._resolver):
                continue
            seen.add(key)
            if isinstance(v, str):
                words.append(v)
            elif json_type(v) == "integer" and not isinstance(v, bool):
                integers.append(int(v))
            else:
                others.append(v)
        parts = [g.lex(self.literal(v, depth)) for v in others]
        if words:
            parts.append(g.lex(strings.string_literal(rx.words(words))))
        # An integer-valued number has two usual spellings, 1 and 1.0 (json.dumps of a float); one
        # trie for all keeps a 50,000-value enum linear.
        parts.append(
            g.lex(
                rx.alt(
                    rx.concat(rx.words(str(i) for i in integers if _float_spelling(i)), rx.optional(rx.literal(".0"))),
                    rx.words(str(i) for i in integers if not _float_spelling(i)),
                )
            )
        )
        return g.alt(*parts)

    def _branch(self, s: dict, ptr: str, depth: int) -> g.Expr:
        """Distribute the first anyOf/oneOf over the rest of the schema.

        An exact oneOf is the union of (branch ∧ ¬every other branch it may overlap with); branches
        proven disjoint need no negation.
        """
        (kind, subs, bptr), *rest = s["_branches"]
        base = {k: v for k, v in s.items() if k != "_branches"}
        if rest:
            base["_branches"] = rest
        parts = [self.part(self.flatten(sub, f"{bptr}/{i}"), f"{bptr}/{i}") for i, sub in enumerate(subs)]
        if kind == "anyOf" and _pending(s) and 1 < len(parts) <= ANYOF_SUBSETS_MAX:
            # Every passing branch's annotations count: one option per set of branches passing
            # together (an instance accepted through a set passes at least those, so it is exact).
            parts = [
                functools.reduce(lambda a, b: merge(a, b, bptr), (p for i, p in enumerate(parts) if mask >> i & 1))
                for mask in range(1, 2 ** len(parts))
            ]
        options = [(i, merge(base, part, bptr)) for i, part in enumerate(parts)]
        options = [(i, o) for i, o in options if not o.get("_false")]
        self._branches += len(options)
        if self._branches > MAX_BRANCH_PRODUCT:
            raise GrammarError("anyOf/oneOf combinations exceed grammask's branch limit", pointer=bptr)
        if kind == "oneOf":
            options = self._exclusive(options, subs, bptr)
        return g.alt(*(self.build(o, bptr, depth) for _, o in options))

    def _exclusive(self, options: list[tuple[int, dict]], subs: list, bptr: str) -> list[tuple[int, dict]]:
        """oneOf options, each made to exclude the other branches it may overlap with."""
        out = []
        for i, o in options:
            others = [j for j, p in options if j != i and not self.disjoint(o, p)]
            if others:
                try:
                    for j in others:
                        self.negation(self.flatten(subs[j], f"{bptr}/{j}"), f"{bptr}/{j}", types_of(o), _declared(o))
                except GrammarError as exc:
                    self.unsupported(f"oneOf whose branches may overlap ({exc.reason})", bptr)
                    return options
                o = {**o, "_not": [*o.get("_not", []), *((subs[j], f"{bptr}/{j}") for j in others)]}
            out.append((i, o))
        return out

    def disjoint(self, a: dict, b: dict) -> bool:
        """Whether no value satisfies both (False when unsure)."""
        common = types_of(a) & types_of(b)
        if not common:
            return True
        if "enum" in a and "enum" in b:
            return not {canonical(v) for v in a["enum"]} & {canonical(v) for v in b["enum"]}
        for x, y in ((a, b), (b, a)):
            if "enum" in x and not any(conforms(v, y, "", self._resolver) for v in x["enum"]):
                return True
        if common <= {"number", "integer"} and _ranges_disjoint(a, b):
            return True
        if common == {"object"}:
            for name in set(a.get("required", [])) & set(b.get("required", [])):
                pa = self.flatten(property_schema(a, name, ""), "")
                pb = self.flatten(property_schema(b, name, ""), "")
                if self.disjoint(pa, pb):
                    return True
            for x, y in ((a, b), (b, a)):
                for name in x.get("required", []):
                    if self.flatten(property_schema(y, name, ""), "").get("_false"):
                        return True
        return False

    def _fold_not(self, s: dict) -> dict:
        """`s` with each `not` replaced by its negation: merged when one schema, else an anyOf branch."""
        s = dict(s)
        while s.get("_not") and not s.get("_false"):
            (sub, nptr), *rest = s.pop("_not")
            if rest:
                s["_not"] = rest
            try:
                disjuncts = self.negation(self.flatten(sub, nptr), nptr, types_of(s), _declared(s))
            except GrammarError as exc:
                self.unsupported(f"this 'not' cannot be enforced exactly: {exc.reason}", nptr)
                continue
            live = [d for d in disjuncts if types_of(self.flatten(d, nptr)) & types_of(s)]
            if {} in live:
                continue
            if not live:
                return dict(FALSE)
            if len(live) == 1:
                s = merge(s, self.part(self.flatten(live[0], nptr), nptr), nptr)  # its unevaluated* is its own
            else:
                s["_branches"] = [("anyOf", live, nptr), *s.get("_branches", [])]
        return s

    def negation(
        self, n: dict, ptr: str, context: frozenset[str], declared: frozenset[str] = frozenset()
    ) -> list[dict]:
        """Schemas whose union is exactly the complement of the flattened `n` (for values whose type
        is in `context`, in a schema that names the properties `declared`); a `GrammarError` when
        the complement has no such finite form."""
        self._negations += 1
        if self._negations > MAX_NEGATIONS:
            raise GrammarError("too many nested negations", pointer=ptr)
        if n.get("_false"):
            return [{}]
        if _pending(n):
            if n.get("_branches"):
                raise GrammarError("the negation of unevaluated* next to anyOf/oneOf/if has no exact form", pointer=ptr)
            n = settle(n)
        out: list[dict] = []
        if "type" in n:
            t = set(n["type"]) | ({"integer"} if "number" in n["type"] else set())
            out.append({"type": sorted(ALL_TYPES - t - ({"number"} if "integer" in t else set()))})
            if "integer" in t and "number" not in t and "number" in context:
                out.append({"type": ["number"], "_nonint": True})  # the numbers that are not integers
        if "enum" in n:
            out.append({"_exclude": n["enum"]})
        if "_exclude" in n:
            out.append({"enum": n["_exclude"]})
        for key, value in n.items():
            if key in _COMPLEMENT_BOUND:
                kind, other, shift = _COMPLEMENT_BOUND[key]
                if shift == 0 or value + shift >= 0:
                    out.append({"type": [kind], other: value + shift})
            elif key == "required":
                out += [{"type": ["object"], "properties": {name: False}} for name in value]
            elif key == "properties":
                out += [
                    {"type": ["object"], "required": [name], "properties": {name: {"not": sub}}}
                    for name, sub in value.items()
                    if not _is_true(sub)
                ]
            elif key == "_branches":
                for kind, subs, bptr in value:
                    out.append({"allOf": [{"not": sub} for sub in subs]})  # none of them
                    if kind == "oneOf" and len(subs) > 1:
                        flat = [self.flatten(sub, f"{bptr}/{i}") for i, sub in enumerate(subs)]
                        pairs = [(i, j) for i in range(len(subs)) for j in range(i + 1, len(subs))]
                        overlapping = [(i, j) for i, j in pairs if not self.disjoint(flat[i], flat[j])]
                        if len(overlapping) > ONEOF_NEGATION_PAIRS_MAX:
                            raise GrammarError("not of a oneOf whose branches may overlap", pointer=bptr)
                        out += [{"allOf": [subs[i], subs[j]]} for i, j in overlapping]  # or two at once
            elif key == "_not":
                out += [sub for sub, _ in value]
            elif key == "_nonint":
                out.append({"type": ["integer"]})
            elif key == "pattern":
                out.append({"type": ["string"], "_not_patterns": [value]})
            elif key == "_patterns":
                out += [{"type": ["string"], "_not_patterns": [p]} for p in value]
            elif key == "_not_patterns":
                out += [{"type": ["string"], "pattern": p} for p in value]
            elif key == "format" and not _unconstraining(key, value):
                out.append({"type": ["string"], "_not_formats": [value]})
            elif key == "_not_formats":
                out += [{"type": ["string"], "format": f} for f in value]
            elif key in ("prefixItems", "items", "additionalProperties"):
                out += self._negate_members(n, key, ptr, declared)
            elif key == "contains":
                # fewer hits than minContains (none, for the default 1), or more than maxContains
                lo, hi = n.get("minContains", 1), n.get("maxContains")
                if lo == 1:
                    out.append({"type": ["array"], "items": {"not": value}})
                elif lo > 1:
                    out.append({"type": ["array"], "contains": value, "minContains": 0, "maxContains": lo - 1})
                if hi is not None:
                    out.append({"type": ["array"], "contains": value, "minContains": hi + 1})
            elif key in ("minContains", "maxContains"):
                continue  # read with `contains`; without it they constrain nothing
            elif key == "patternProperties":
                for pattern, sub in value.items():
                    if _is_true(sub):
                        continue
                    # some key the pattern matches has a value that fails its schema: a declared
                    # name, or a key the object does not declare (`_witness`)
                    out += [
                        {"type": ["object"], "required": [name], "properties": {name: {"not": sub}}}
                        for name in sorted(declared)
                        if pattern_matches(pattern, name, ptr)
                    ]
                    out.append({"type": ["object"], "_witness": [(pattern, {"not": sub}, (), ())]})
            elif key not in ("type", "enum", "_exclude") and not _unconstraining(key, value):
                raise GrammarError(f"the negation of {key!r} has no exact form", pointer=ptr)
        return out

    def _negate_members(self, n: dict, key: str, ptr: str, declared: frozenset[str]) -> list[dict]:
        """The complement of `prefixItems`, `items` or `additionalProperties` (on arrays/objects):
        some item or property that fails its schema, where that has a finite form.

        `additionalProperties: false` next to `properties` P: some key outside P, either a name the
        enclosing schema declares (`declared`, each its own disjunct) or an additional key there
        (`_extra`). Another `additionalProperties` S: the same, with a value that fails S, for keys
        outside P that none of the negated schema's patterns match (`_witness` for the additional
        one). A key the enclosing schema only declares later, through a branch merged after the
        negation, is not a witness: stricter, never looser.
        """
        if key == "prefixItems":
            return [
                {"type": ["array"], "minItems": i + 1, "prefixItems": [*[True] * i, {"not": sub}]}
                for i, sub in enumerate(n["prefixItems"])
                if not _is_true(sub)
            ]
        value = n[key]
        if _is_true(value):
            return []
        empty = value is False or bool(self.flatten(value, f"{ptr}/{key}").get("_false"))
        if key == "items":
            start = len(n.get("prefixItems", []))
            if empty:
                return [{"type": ["array"], "minItems": start + 1}]
            if start == 0:
                return [{"type": ["array"], "contains": {"not": value}}]
        elif empty and not n.get("patternProperties"):
            own = n.get("properties", {})
            if not own:
                return [{"type": ["object"], "minProperties": 1}]
            others = sorted(declared - set(own))
            return [
                *({"type": ["object"], "required": [name]} for name in others),
                {"type": ["object"], "properties": dict.fromkeys(own, True), "_extra": True},
            ]
        elif key == "additionalProperties":  # a schema, or false next to patternProperties
            own, patterns = n.get("properties", {}), tuple(n.get("patternProperties", {}))
            others = [
                name
                for name in sorted(declared - set(own))
                if not any(pattern_matches(pattern, name, ptr) for pattern in patterns)
            ]
            return [
                *({"type": ["object"], "required": [name], "properties": {name: {"not": value}}} for name in others),
                {"type": ["object"], "_witness": [("", {"not": value}, tuple(own), patterns)]},
            ]
        raise GrammarError(f"the negation of {key!r} has no exact form", pointer=ptr)

    # -- scalars -----------------------------------------------------------------------------

    def literal(self, value: object, depth: int) -> rx.RegexNode:
        """The JSON text of one value, in this layout."""
        if isinstance(value, str):
            return strings.string_literal(rx.literal(value))
        if isinstance(value, list):
            if not value:
                return self.ws.empty("[]")
            items = [self.literal(v, depth + 1) for v in value]
            body = [items[0]] + [rx.concat(self.ws.comma(depth), x) for x in items[1:]]
            return rx.concat(self.ws.open("[", depth), *body, self.ws.close("]", depth))
        if isinstance(value, dict):
            if not value:
                return self.ws.empty("{}")
            items = [
                rx.concat(strings.string_literal(rx.literal(k)), self.ws.colon(), self.literal(v, depth + 1))
                for k, v in value.items()
            ]
            body = [items[0]] + [rx.concat(self.ws.comma(depth), x) for x in items[1:]]
            return rx.concat(self.ws.open("{", depth), *body, self.ws.close("}", depth))
        if isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float) and value.is_integer():
            # An integer-valued number has two usual spellings: 1 and 1.0 (json.dumps of a float).
            spellings = [json.dumps(int(value))]
            if _float_spelling(int(value)):
                spellings.append(json.dumps(float(value)))
            return rx.alt(*map(rx.literal, spellings))
        return rx.literal(json.dumps(value))

    def number(self, s: dict, ptr: str, *, integer: bool) -> g.Expr:
        bounds = _bounds(s)
        decimals = None
        fractional = bool(s.get("_nonint"))
        if "multipleOf" in s:
            step = s["multipleOf"]
            if isinstance(step, bool) or not isinstance(step, (int, float, Fraction)) or step <= 0:
                raise GrammarError("multipleOf must be a positive number", pointer=f"{ptr}/multipleOf")
            step = number_value(step)
            if integer:
                step = Fraction(step.numerator)  # the integer multiples of p/q are those of p
            if step.denominator == 1:
                if fractional:
                    return g.FAIL  # multiples of an integer step are integers
                if step != 1:
                    return self._exclude_numbers(self._multiples(int(step), bounds, ptr), s, ptr, integer=True)
                integer = True
            elif step.numerator == 1 and 10 ** (len(str(step.denominator)) - 1) == step.denominator:
                decimals = len(str(step.denominator)) - 1  # 10^-k: at most k decimals
            else:
                self.unsupported("a fractional multipleOf other than a power of ten", f"{ptr}/multipleOf")
        if bounds.is_empty(integer):
            return g.FAIL
        try:
            if not integer and decimals is None and self._excluded_numbers(s, bounds):
                # x ≠ v is x < v ∨ x > v: the range cut at each excluded value, every spelling of v out.
                return g.alt(
                    *(
                        g.lex(number_regex(piece, integer=False, pointer=ptr, fractional=fractional))
                        for piece in self._cut(bounds, self._excluded_numbers(s, bounds))
                    )
                )
            expr = g.lex(number_regex(bounds, integer=integer, pointer=ptr, decimals=decimals, fractional=fractional))
        except GrammarError as exc:
            self.unsupported(exc.reason, ptr)
            expr = g.lex(number_regex(Bounds(), integer=integer, pointer=ptr, fractional=fractional))
        return self._exclude_numbers(expr, s, ptr, integer=integer)

    @staticmethod
    def _excluded_numbers(s: dict, bounds: Bounds) -> list[Fraction]:
        """The distinct `_exclude` numbers inside `bounds`, ascending."""
        values = {number_value(v) for v in s.get("_exclude", []) if json_type(v) in ("integer", "number")}
        return sorted(
            v for v in values if (bounds.lo is None or v >= bounds.lo) and (bounds.hi is None or v <= bounds.hi)
        )

    @staticmethod
    def _cut(bounds: Bounds, values: list[Fraction]) -> list[Bounds]:
        """`bounds` without the points `values` (ascending, inside it): the open pieces between them."""
        pieces, lo, lo_strict = [], bounds.lo, bounds.lo_strict
        for v in values:
            pieces.append(Bounds(lo, lo_strict, v, True))
            lo, lo_strict = v, True
        pieces.append(Bounds(lo, lo_strict, bounds.hi, bounds.hi_strict))
        return [p for p in pieces if not p.is_empty(False)]

    def _exclude_numbers(self, expr: g.Expr, s: dict, ptr: str, *, integer: bool) -> g.Expr:
        """`expr` without the numbers of `_exclude` (exact for canonical integers only)."""
        values = [number_value(v) for v in s.get("_exclude", []) if json_type(v) in ("integer", "number")]
        if integer:
            values = [v for v in values if v.denominator == 1]
        if not values:
            return expr
        if not integer:
            self.unsupported("not: enum/const with a number (it has many spellings)", f"{ptr}/not")
            return expr
        words = {str(int(v)) for v in values}
        if isinstance(expr, g.Lex):
            return g.lex(strings.subtract_words(expr.regex, words))
        return g.alt(
            *(
                x
                for x in (expr.items if isinstance(expr, g.Alt) else (expr,))
                if not (isinstance(x, g.Lex) and _single_word(x.regex) in words)
            )
        )

    def _multiples(self, step: int, bounds: Bounds, ptr: str) -> g.Expr:
        """Integer multiples of `step` within `bounds`: listed when the range is bounded, through
        a digit automaton when it is open on one side or both."""
        lo, hi = bounds.int_bounds()
        try:
            if lo is not None and hi is not None:
                values = listed_multiples(step, lo, hi, ptr)
                return g.lex(rx.words(str(v) for v in values)) if values else g.FAIL
            return g.lex(signed_multiples(step, lo, hi, ptr))
        except GrammarError as exc:
            self.unsupported(exc.reason, f"{ptr}/multipleOf")
            return g.lex(number_regex(bounds, integer=True, pointer=ptr))

    def string_content(self, s: dict, ptr: str) -> tuple[rx.RegexNode | None, int, int | None]:
        """The decoded-string regex of a string schema (None: any text) and its length bounds."""
        lo, hi = s.get("minLength", 0), s.get("maxLength")
        for key, v in (("minLength", lo), ("maxLength", hi)):
            if v is not None and not (
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 and float(v).is_integer()
            ):
                raise GrammarError(f"{key} must be a non-negative integer", pointer=f"{ptr}/{key}")
        lo, hi = int(lo), None if hi is None else int(hi)
        # The patterns and format all hold (intersections), the negated patterns and formats do not.
        regexes = [_pattern(p, ptr) for p in ([s["pattern"]] if "pattern" in s else []) + s.get("_patterns", [])]
        if s.get("format") in UNENFORCEABLE_FORMATS:
            self.unsupported(f"format {s['format']!r}", f"{ptr}/format")
        elif isinstance(s.get("format"), str) and (fmt := format_regex(s["format"])) is not None:
            regexes.append(fmt)
        content = None if not regexes else functools.reduce(rx.intersect, regexes)
        excluded = [_pattern(p, ptr) for p in s.get("_not_patterns", [])]
        excluded += [regex for f in s.get("_not_formats", []) if (regex := format_regex(f)) is not None]
        for regex in excluded:
            content = rx.difference(rx.star(rx.ANY_CHAR) if content is None else content, regex)
        if content is not None and (lo, hi) != (0, None):
            try:
                content = strings.restrict_length(content, lo, hi, ptr)
            except GrammarError as exc:
                self.unsupported(exc.reason, ptr)
        return content, lo, hi

    def string(self, s: dict, ptr: str) -> g.Expr:
        content, lo, hi = self.string_content(s, ptr)
        if hi is not None and hi < lo:
            return g.FAIL
        words = {v for v in s.get("_exclude", []) if isinstance(v, str)}
        if words:
            if content is None and (hi is None or hi <= LEXEME_REPEAT_MAX):
                content = rx.repeat(rx.ANY_CHAR, lo, hi)
            if content is None:
                self.unsupported("not: enum/const next to maxLength > 64", f"{ptr}/not")
            else:
                content = strings.subtract_words(content, words)
        if content is None:
            return self._any_string(lo, hi)
        return g.lex(strings.string_literal(content))

    def _any_string(self, lo: int, hi: int | None) -> g.Expr:
        # Lexemes end at the closing quote, not before it: a lexeme that could end after any
        # character would make every token inside the string a split to check.
        quote = g.literal('"')
        if hi is None and lo > LEXEME_REPEAT_MAX:
            # Exactly `lo` characters as binary blocks, then any more: one lexeme of `lo` chained
            # characters is over `max_dfa_states` from about a thousand on.
            return g.seq(quote, self._exactly(lo), g.lex(rx.concat(rx.repeat(_ANY_CHAR_JSON, 0, None), _QUOTE)))
        if hi is None or hi <= LEXEME_REPEAT_MAX:
            return g.lex(rx.concat(_QUOTE, rx.repeat(_ANY_CHAR_JSON, lo, hi), _QUOTE))
        if hi <= CHUNKED_STRING_MAX:
            return g.seq(quote, self._chunks(lo, hi))
        return g.seq(quote, self._exactly(lo), self._up_to(hi - lo), quote)

    def _chunks(self, lo: int, hi: int) -> g.Expr:
        """lo..hi characters (hi above `LEXEME_REPEAT_MAX`) and the closing quote, as blocks of
        exactly that many characters and a last lexeme of at most two blocks' worth with the quote.
        A text splits into these lexemes one way only, so inside the string a lexeme ends only
        where a block is full."""
        n = LEXEME_REPEAT_MAX

        def make() -> g.Expr:
            rest_lo, rest_hi = max(lo - n, 0), hi - n
            if rest_hi <= n:
                # The last block and the rest would merge into one lexeme anyway (adjacent and
                # alternative lexemes do): written as the one repeat it is, the compiler chains
                # it from the character's table, where the alternative of two repeats went
                # through subset construction (100 ms and more for the JSON string character).
                return g.lex(rx.concat(rx.repeat(_ANY_CHAR_JSON, lo, hi), _QUOTE))
            rest = self._chunks(rest_lo, rest_hi)
            full = g.seq(g.lex(rx.repeat(_ANY_CHAR_JSON, n, n)), rest)
            if lo >= n:
                return full
            return g.alt(g.lex(rx.concat(rx.repeat(_ANY_CHAR_JSON, lo, n - 1), _QUOTE)), full)

        return self.rule(("chunks", lo, hi), make, f"<{lo} to {hi} string characters>")

    def _block(self, k: int) -> g.Expr:
        """Exactly 2**k characters."""
        if 2**k <= LEXEME_REPEAT_MAX:
            return g.lex(rx.repeat(_ANY_CHAR_JSON, 2**k, 2**k))
        return self.rule(
            ("block", k), lambda: g.seq(self._block(k - 1), self._block(k - 1)), f"<{2**k} string characters>"
        )

    def _exactly(self, n: int) -> g.Expr:
        return g.seq(*(self._block(k) for k in reversed(range(n.bit_length())) if n >> k & 1))

    def _up_to(self, n: int) -> g.Expr:
        """0..n characters, as binary blocks; below two blocks of `LEXEME_REPEAT_MAX`, one lexeme.
        Blocks that small merge into lexemes such as `(c{64})? c{0,63}`, which the compiler cannot
        join and builds by subset construction (75 ms for the JSON string character), where
        `c{0,127}` is chained from `c`'s table."""
        if n < 2 * LEXEME_REPEAT_MAX:
            return g.lex(rx.repeat(_ANY_CHAR_JSON, 0, n))
        k = n.bit_length() - 1
        full = self._up_to(2**k - 1)  # one lexeme, or the rule of the case `n == 2 ** (k + 1) - 1` below
        name = f"<up to {n} string characters>"
        if n == 2 ** (k + 1) - 1:
            return self.rule(("upto", n), lambda: g.seq(g.opt(self._block(k)), full), name)
        return self.rule(("upto", n), lambda: g.alt(full, g.seq(self._block(k), self._up_to(n - 2**k))), name)

    # -- containers --------------------------------------------------------------------------

    def _container_depth_ok(self, depth: int) -> bool:
        return self.ws.indent is None or depth < MAX_PRETTY_DEPTH

    def array(self, s: dict, ptr: str, depth: int) -> g.Expr:
        if not self._container_depth_ok(depth):
            return g.FAIL
        lo, hi = s.get("minItems", 0), s.get("maxItems")
        if hi is not None and hi < max(lo, 1):
            needs_hit = "contains" in s and s.get("minContains", 1) > 0  # a hit needs an item
            return g.lex(self.ws.empty("[]")) if hi == 0 == lo and not needs_hit else g.FAIL
        if s.get("uniqueItems") and (hi is None or hi > 1):
            unique = self._unique_array(s, ptr, depth)
            if unique is not None:
                return unique
        prefix = s.get("prefixItems", [])
        items = s.get("items", True)

        def el(sub: object, p: str) -> g.Expr:
            return self.value(sub, p, depth + 1)

        elems = [el(sub, f"{ptr}/prefixItems/{i}") for i, sub in enumerate(prefix)]
        rest = el(items, f"{ptr}/items")
        comma = g.lex(self.ws.comma(depth))
        if "contains" in s and (s.get("minContains", 1) > 0 or "maxContains" in s):
            if prefix or lo > 1 or hi is not None:
                self.unsupported("contains together with prefixItems, minItems > 1 or maxItems", f"{ptr}/contains")
            else:
                return self._contains(s, ptr, depth, items, rest, comma)

        # The items after the first, built from the back: from the first position where only
        # `rest` items (or none) may come, then each prefix item before it.
        tail: g.Expr
        end = max(1, len(elems) if hi is None else min(len(elems), hi))
        if hi is not None and end >= hi:
            tail = g.EMPTY_SEQ
        else:
            tail = g.rep(g.seq(comma, rest), max(lo - end, 0), None if hi is None else hi - end)
        for i in reversed(range(1, end)):
            more = g.seq(comma, elems[i], tail)
            tail = more if i < lo else g.alt(g.EMPTY_SEQ, more)

        first = elems[0] if elems else rest
        body = g.seq(g.lex(self.ws.open("[", depth)), first, tail, g.lex(self.ws.close("]", depth)))
        if hi is not None and hi < lo:
            return g.FAIL
        return g.alt(g.lex(self.ws.empty("[]")), body) if lo == 0 else body

    def _contains(self, s: dict, ptr: str, depth: int, items: object, rest: g.Expr, comma: g.Expr) -> g.Expr:
        """An array with between minContains (default 1) and maxContains items matching `contains`.

        Without maxContains, n hits among any items; with it, each item is a hit or a miss
        (items ∧ ¬contains, disjoint), one rule per hit count so far.
        """
        c_lo, c_hi = s.get("minContains", 1), s.get("maxContains")
        cptr = f"{ptr}/contains"
        items_s = self.part(self.flatten(items, f"{ptr}/items"), f"{ptr}/items")
        hit = self.build(merge(items_s, self.part(self.flatten(s["contains"], cptr), cptr), ptr), cptr, depth + 1)
        open_, close = g.lex(self.ws.open("[", depth)), g.lex(self.ws.close("]", depth))
        if c_hi is None:
            skip = g.star(g.seq(rest, comma))
            body = g.seq(skip, hit, g.rep(g.seq(comma, skip, hit), c_lo - 1, c_lo - 1), g.star(g.seq(comma, rest)))
            return g.seq(open_, body, close)
        if c_hi < c_lo:
            return g.FAIL
        if c_hi > self.limits.max_grammar_rules:
            raise GrammarError(
                f"maxContains over Limits.max_grammar_rules={self.limits.max_grammar_rules}",
                pointer=f"{ptr}/maxContains",
            )
        miss = self.build(merge(items_s, {"_not": [(s["contains"], cptr)]}, ptr), cptr, depth + 1)

        def after(state: _Rules, k: int) -> g.Expr:
            """The items after the first, k hits so far."""
            return g.alt(
                *([g.EMPTY_SEQ] if k >= c_lo else []),
                g.seq(comma, miss, state(k)),
                *([g.seq(comma, hit, state(k + 1))] if k < c_hi else []),
            )

        state = _Rules(self, "contains", after, ptr)
        for k in reversed(range(c_hi + 1)):  # bottom-up: no recursion as deep as maxContains
            state(k)
        first = g.alt(g.seq(miss, state(0)), *([g.seq(hit, state(1))] if c_hi > 0 else []))
        filled = g.seq(open_, first, close)
        return g.alt(g.lex(self.ws.empty("[]")), filled) if c_lo == 0 else filled

    def _unique_array(self, s: dict, ptr: str, depth: int) -> g.Expr | None:
        """An array of distinct items drawn from a small finite set: one rule per set of items used."""
        values = None
        if not s.get("prefixItems") and "contains" not in s:
            values = self._finite_values(self.flatten(s.get("items", True), f"{ptr}/items"), f"{ptr}/items")
        if values is None or len(values) > UNIQUE_ITEMS_MAX_VALUES:
            self.unsupported("uniqueItems over items not drawn from a small finite set", f"{ptr}/uniqueItems")
            return None
        lo, hi = s.get("minItems", 0), s.get("maxItems")
        cap = len(values) if hi is None else min(hi, len(values))
        if lo > cap:
            return g.FAIL
        lits = [g.lex(self.literal(v, depth + 1)) for v in values]
        comma = g.lex(self.ws.comma(depth))

        def body(state: _Rules, used: frozenset[int]) -> g.Expr:
            more = [g.seq(comma, lits[i], state(used | {i})) for i in range(len(values)) if i not in used]
            return g.alt(*([g.EMPTY_SEQ] if len(used) >= lo else []), *(more if len(used) < cap else []))

        state = _Rules(self, "unique", body, ptr)
        first = g.alt(*(g.seq(lits[i], state(frozenset({i}))) for i in range(len(values))))
        filled = g.seq(g.lex(self.ws.open("[", depth)), first, g.lex(self.ws.close("]", depth)))
        return g.alt(g.lex(self.ws.empty("[]")), filled) if lo == 0 else filled

    def _finite_values(self, s: dict, ptr: str) -> list | None:
        """The distinct values valid under `s` when they are few and known (an enum, null, booleans)."""
        if "enum" in s:
            candidates = s["enum"]
        elif types_of(s) <= {"null", "boolean"}:
            candidates = [None, True, False]
        else:
            return None
        seen, out = set(), []
        for v in candidates:
            if canonical(v) not in seen and conforms(v, s, ptr, self._resolver):
                seen.add(canonical(v))
                out.append(v)
        return out

    def object(self, s: dict, ptr: str, depth: int) -> g.Expr:
        if not self._container_depth_ok(depth):
            return g.FAIL
        s = self.closed(s)
        declared = list(s.get("properties", {}))
        required = list(dict.fromkeys(s.get("required", [])))
        names = declared + [n for n in required if n not in declared]
        name_schema = self.flatten(s["propertyNames"], f"{ptr}/propertyNames") if "propertyNames" in s else None
        colon = self.ws.colon()
        items = []  # (required, expr) in output order
        for name in names:
            if name_schema is not None and not conforms(name, name_schema, f"{ptr}/propertyNames", self._resolver):
                if name in required:
                    return g.FAIL
                continue
            value = self.value(property_schema(s, name, ptr), f"{ptr}/properties/{escape_pointer(name)}", depth + 1)
            if value == g.FAIL:
                if name in required:
                    return g.FAIL
                continue
            key = g.lex(rx.concat(strings.string_literal(rx.literal(name)), colon))
            items.append((name in required, g.seq(key, value)))
        extra = self._additional(s, ptr, depth, names, name_schema)
        lo, hi = s.get("minProperties", 0), s.get("maxProperties")
        if extra is not None and lo - sum(1 for is_required, _ in items if is_required) >= 2:
            # The grammar cannot keep additional keys distinct, and validators count a repeated key
            # once: {"a": 1, "a": 2} would meet minProperties 2.
            self.unsupported(
                "minProperties that two or more additional properties may have to meet (their keys could repeat)",
                f"{ptr}/minProperties",
            )
        comma = g.lex(self.ws.comma(depth))
        witness = None  # the additional entries that must be there (negations of patternProperties)
        if s.get("_witness"):
            if len(s["_witness"]) > 2 or s.get("_extra") or hi is not None:
                self.unsupported(
                    "negations of patternProperties or additionalProperties: over two, or next to maxProperties", ptr
                )
            else:
                witness = self._witnesses(s, ptr, depth, names, name_schema, comma)
        need = max(lo, 1)
        cap = max(need, hi or 0)

        def body(state: _Rules, i: int, count: int) -> g.Expr:
            sep = comma if count else g.EMPTY_SEQ
            if i == len(items):
                n_lo = max(need - count, 1 if s.get("_extra") else 0)
                n_hi = None if hi is None else hi - count
                if extra is None:
                    return g.EMPTY_SEQ if n_lo == 0 and witness is None else g.FAIL
                if witness is not None:  # any extras, the witnesses among them (at most one needed)
                    more = g.rep(g.seq(comma, extra), 0, None)
                    if count:
                        return g.seq(more, comma, witness, more)
                    return g.alt(g.seq(witness, more), g.seq(extra, more, comma, witness, more))
                if count:
                    return g.rep(g.seq(comma, extra), n_lo, n_hi)
                return g.seq(extra, g.rep(g.seq(comma, extra), max(n_lo - 1, 0), None if n_hi is None else n_hi - 1))
            nxt = min(count + 1, cap)
            present = g.FAIL if hi is not None and count >= hi else g.seq(sep, items[i][1], state(i + 1, nxt))
            return present if items[i][0] else g.alt(present, state(i + 1, count))

        state = _Rules(self, "object", body, ptr)
        if (len(items) + 1) * (cap + 1) <= 4096:
            for i in reversed(range(len(items) + 1)):  # bottom-up, so long objects need no deep recursion
                for count in range(min(i, cap) + 1):
                    state(i, count)
        empty_ok = lo == 0 and not required and not s.get("_extra") and not s.get("_witness")
        filled = g.seq(g.lex(self.ws.open("{", depth)), state(0, 0), g.lex(self.ws.close("}", depth)))
        return g.alt(g.lex(self.ws.empty("{}")), filled) if empty_ok else filled

    def _finite_names(self, name_schema: dict, ptr: str) -> list[str] | None:
        """The property names `propertyNames` allows when they are a known finite list (an enum or
        const, or none at all: `false`, no string type); None otherwise."""
        if "string" not in types_of(name_schema):
            return []
        if "enum" not in name_schema:
            return None
        return [v for v in self._finite_values(name_schema, ptr) or [] if isinstance(v, str)]

    def _witnesses(
        self, s: dict, ptr: str, depth: int, names: list[str], name_schema: dict | None, comma: g.Expr
    ) -> g.Expr:
        """Additional entries, separated by commas, among which each `_witness` (one or two) has
        its entry: for two, one entry that is both, or one of each with any entries between."""
        first, *rest = s["_witness"]
        one = self._additional(s, ptr, depth, names, name_schema, [first]) or g.FAIL
        if not rest:
            return one
        two = self._additional(s, ptr, depth, names, name_schema, rest) or g.FAIL
        both = self._additional(s, ptr, depth, names, name_schema, [first, *rest]) or g.FAIL
        extra = self._additional(s, ptr, depth, names, name_schema) or g.FAIL
        between = g.seq(g.rep(g.seq(comma, extra), 0, None), comma)
        return g.alt(both, g.seq(one, between, two), g.seq(two, between, one))

    def _additional(
        self,
        s: dict,
        ptr: str,
        depth: int,
        names: list[str],
        name_schema: dict | None,
        witnesses: Sequence[tuple] = (),
    ) -> g.Expr | None:
        """One `"key": value` entry of a name not in `names` (None when no such property is
        allowed): a choice between key classes, one per set of `patternProperties` a key matches
        (each class's value meets all of that set's schemas, and `additionalProperties` where it
        matches none). Up to `PATTERN_CLASSES_MAX` patterns; over that, every key's value meets
        every pattern's schema (stricter, with a warning). With `witnesses` (see `witnessed`),
        only the keys each names, whose value also meets each one's schema."""
        patterns = s.get("patternProperties", {})
        additional = s.get("additionalProperties", True)
        finite = None if name_schema is None else self._finite_names(name_schema, f"{ptr}/propertyNames")
        named = rx.star(rx.ANY_CHAR)  # the key names propertyNames allows, when not a finite list
        if finite is None and name_schema is not None and set(name_schema) - {"type"}:
            if set(name_schema) - {"pattern", "minLength", "maxLength", "format", "type"}:
                self.unsupported(
                    "propertyNames with keywords other than pattern, format and lengths", f"{ptr}/propertyNames"
                )
            else:
                content, lo, hi = self.string_content(name_schema, f"{ptr}/propertyNames")
                named = rx.repeat(rx.ANY_CHAR, lo, hi) if content is None else content
        if len(patterns) > PATTERN_CLASSES_MAX:
            self.warnings.append(
                f"note at {ptr or '/'}: additional properties must satisfy every "
                "patternProperties schema (a stricter, safe reading)"
            )
            rules = [(tuple(patterns), additional), *s.get("_additional_except", [])]
            parts = [*patterns.values(), *(sub for _, sub in rules if sub not in (True, False, {}))]
            keys = named
            for rule_patterns, sub in rules:
                if sub is False:  # keys must match one of the rule's patterns
                    keys = rx.intersect(_matching_any(rule_patterns), keys)
            words = None if finite is None else [n for n in finite if strings.matches(keys, n)]
            classes: list[_KeyClass] = [(keys, words, parts)]
        else:
            classes = self._key_classes(patterns, additional, s.get("_additional_except", []), named, finite, ptr)
        for witness in witnesses:  # keys the pattern matches, but neither those names nor patterns
            pattern, sub, except_names, except_patterns = witness
            regex = parse_search_pattern(pattern, flavor="ecma")
            if except_patterns:
                regex = rx.difference(regex, _matching_any(except_patterns))
            classes = [
                (
                    strings.subtract_words(rx.intersect(keys, regex), set(except_names)),
                    None if words is None else [w for w in words if witnessed(witness, w, ptr)],
                    [*parts, sub],
                )
                for keys, words, parts in classes
            ]
        entries = []
        for keys, words, parts in classes:
            if words is not None:
                keys = rx.words(words)
            keys = strings.subtract_words(keys, set(names)) if not rx.is_nothing(keys) else keys
            if rx.is_nothing(keys):
                continue
            schema = parts[0] if len(parts) == 1 else {"allOf": parts}
            value = self.value(schema, f"{ptr}/additionalProperties", depth + 1)
            if value != g.FAIL:
                entries.append(g.seq(g.lex(rx.concat(strings.string_literal(keys), self.ws.colon())), value))
        return g.alt(*entries) if entries else None

    @staticmethod
    def _key_classes(
        patterns: dict,
        additional: bool | dict,
        rules: list[_Rule],
        named: rx.RegexNode,
        finite: list[str] | None,
        ptr: str,
    ) -> list[_KeyClass]:
        """(keys, or the finite names, and the value's schemas) for each set of patterns a key may
        match exactly, the empty set included unless `additionalProperties` is false. A class's
        value also meets each `_additional_except` rule none of whose patterns is in its set."""
        regexes = [parse_search_pattern(p, flavor="ecma") for p in patterns]
        schemas = list(patterns.values())
        out: list[_KeyClass] = []
        for chosen in itertools.product((True, False), repeat=len(patterns)):
            if not any(chosen) and additional is False:
                continue
            matched = {p for p, c in zip(patterns, chosen, strict=True) if c}
            parts = [sub for sub, c in zip(schemas, chosen, strict=True) if c] or [additional]
            parts += [sub for rule_patterns, sub in rules if matched.isdisjoint(rule_patterns)]
            if any(part is False for part in parts):
                continue
            if finite is not None:
                pairs = list(zip(patterns, chosen, strict=True))
                words = [n for n in finite if all(pattern_matches(p, n, ptr) == c for p, c in pairs)]
                out.append((rx.NOTHING, words, parts))
                continue
            keys = functools.reduce(rx.intersect, [r for r, c in zip(regexes, chosen, strict=True) if c], named)
            others = [r for r, c in zip(regexes, chosen, strict=True) if not c]
            out.append((rx.difference(keys, rx.alt(*others)) if others else keys, None, parts))
        return out
