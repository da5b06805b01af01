"""`$ref` resolution: `$id`/`id` bases, `$anchor`s, JSON Pointers, and the draft a schema declares.

`Document` indexes every resource and anchor of one schema document once; `resolve` then turns a
`$ref` met at a given pointer into the pointer of its target within the same document. Remote
documents are never fetched: a `$ref` outside the document is a dangling reference.

A `$dynamicRef` becomes a `$ref` wherever its target does not depend on the dynamic scope: a
fragment that is not a plain name, an initial target without the matching `$dynamicAnchor`, a name
the root resource defines as a `$dynamicAnchor` (the root is always the outermost resource in
scope), or a name only one resource defines. Otherwise it is left as written, and refused.
"""

from __future__ import annotations

from urllib.parse import unquote, urldefrag, urljoin

from grammask.errors import GrammarError

__all__ = ["Document", "draft_of", "escape_pointer"]

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SCHEMA_ONE = (
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
)


def draft_of(schema: object) -> int:
    """4, 6, 7, 2019 or 2020 from `$schema` (2020 when absent or unknown)."""
    uri = schema.get("$schema", "") if isinstance(schema, dict) else ""
    for mark, draft in (("draft-03", 4), ("draft-04", 4), ("draft-06", 6), ("draft-07", 7), ("2019-09", 2019)):
        if isinstance(uri, str) and mark in uri:
            return draft
    return 2020


def _join(base: str, ref: str) -> str:
    """`ref` resolved against `base` (RFC 3986; a bare fragment also against a URN base, which
    `urljoin` leaves alone)."""
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


def escape_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _children(schema: dict, ptr: str):
    """(subschema, pointer) for every subschema position of `schema`."""
    for key in _SCHEMA_ONE:
        if isinstance(schema.get(key), (dict, bool)):
            yield schema[key], f"{ptr}/{key}"
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                yield sub, f"{ptr}/{key}/{i}"
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                if isinstance(sub, (dict, bool)):
                    yield sub, f"{ptr}/{key}/{escape_pointer(name)}"


class Document:
    """One schema document: its resources (by absolute URI) and the base URI of every subschema."""

    def __init__(self, root: object, *, assert_formats: bool = True) -> None:
        self.root = root
        self.draft = draft_of(root)
        #: whether `format` constrains strings (False: an annotation only, as draft 2020-12's default)
        self.assert_formats = assert_formats
        self.resources: dict[str, str] = {"": ""}  # URI without fragment → pointer
        self.anchors: dict[str, str] = {}  # URI with plain-name fragment → pointer
        self.bases: dict[str, str] = {}  # pointer → base URI
        self.dynamic: dict[str, set[str]] = {}  # $dynamicAnchor name → base URIs of the resources defining it
        self._index(root, "", "")
        self.root = self._absolute(root, "")

    def _absolute(self, schema: object, ptr: str) -> object:
        """A copy of `schema` whose every `$ref` is a plain JSON Pointer fragment into this document
        (on an explicit stack: schemas may nest as deep as their input)."""
        if not isinstance(schema, dict):
            return schema
        root = dict(schema)
        stack = [(root, ptr)]
        while stack:
            out, ptr = stack.pop()
            if isinstance(out.get("$ref"), str):
                out["$ref"] = "#" + self.resolve(out["$ref"], ptr)
            elif isinstance(out.get("$dynamicRef"), str):
                target = self._resolve_dynamic(out["$dynamicRef"], ptr)
                if target is not None:  # a $ref in its place (the written order decides merges)
                    written = list(out.items())
                    out.clear()
                    out.update(("$ref", "#" + target) if k == "$dynamicRef" else (k, v) for k, v in written)
            for key in _SCHEMA_ONE:
                if isinstance(out.get(key), dict):
                    out[key] = dict(out[key])
                    stack.append((out[key], f"{ptr}/{key}"))
            for key in _SCHEMA_LISTS:
                if isinstance(out.get(key), list):
                    out[key] = [dict(sub) if isinstance(sub, dict) else sub for sub in out[key]]
                    stack += [(sub, f"{ptr}/{key}/{i}") for i, sub in enumerate(out[key]) if isinstance(sub, dict)]
            for key in _SCHEMA_MAPS:
                if isinstance(out.get(key), dict):
                    out[key] = {n: dict(sub) if isinstance(sub, dict) else sub for n, sub in out[key].items()}
                    stack += [
                        (sub, f"{ptr}/{key}/{escape_pointer(n)}")
                        for n, sub in out[key].items()
                        if isinstance(sub, dict)
                    ]
        return root

    def _index(self, root: object, ptr: str, base: str) -> None:
        stack = [(root, ptr, base)]
        while stack:
            schema, ptr, base = stack.pop()
            if not isinstance(schema, dict):
                continue
            ident = schema.get("$id", schema.get("id") if self.draft <= 4 else None)
            if isinstance(ident, str) and (self.draft >= 2019 or "$ref" not in schema):
                uri, fragment = urldefrag(_join(base, ident))
                if uri:
                    base = uri
                    self.resources.setdefault(uri, ptr)
                if fragment and not fragment.startswith("/"):
                    self.anchors[f"{base}#{fragment}"] = ptr
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(schema.get(key), str):
                    self.anchors[f"{base}#{schema[key]}"] = ptr
            if isinstance(schema.get("$dynamicAnchor"), str):
                self.dynamic.setdefault(schema["$dynamicAnchor"], set()).add(base)
            self.bases[ptr] = base
            stack += [(sub, sub_ptr, base) for sub, sub_ptr in reversed(list(_children(schema, ptr)))]

    def _resolve_dynamic(self, ref: str, ptr: str) -> str | None:
        """The pointer a `$dynamicRef` met at `ptr` refers to whatever the dynamic scope (None when
        the scope decides)."""
        target = self.resolve(ref, ptr)
        fragment = urldefrag(ref)[1]
        if not fragment or fragment.startswith("/"):
            return target
        at = self.at(target)
        if not (isinstance(at, dict) and at.get("$dynamicAnchor") == fragment):
            return target  # no matching $dynamicAnchor: a plain $ref
        root = self.bases.get("", "")
        if root in self.dynamic[fragment]:
            return self.anchors[f"{root}#{fragment}"]
        return target if len(self.dynamic[fragment]) == 1 else None

    def resolve(self, ref: str, ptr: str) -> str:
        """The pointer of the schema that `ref`, met at `ptr`, refers to."""
        uri, fragment = urldefrag(_join(self.bases.get(ptr, ""), ref))
        if uri not in self.resources:
            raise GrammarError(
                f"$ref {ref!r} refers outside this schema document (remote refs are not fetched)", pointer=ptr
            )
        if fragment and not fragment.startswith("/"):
            if f"{uri}#{fragment}" not in self.anchors:
                raise GrammarError(f"$ref {ref!r}: no $anchor or $id named {fragment!r}", pointer=ptr)
            return self.anchors[f"{uri}#{fragment}"]
        target = self.resources[uri] + unquote(fragment)
        self.at(target, ref_ptr=ptr)
        return target

    def target(self, ref: object, ptr: str) -> str:
        """The pointer of an absolute `$ref` (as `Document` rewrites them) met at `ptr`."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise GrammarError(f"$ref must be a string, not {ref!r}", pointer=ptr)
        self.at(ref[1:], ref_ptr=ptr)
        return ref[1:]

    def at(self, pointer: str, *, ref_ptr: str | None = None) -> object:
        """The value at a JSON Pointer of the document."""
        node = self.root
        for raw in pointer.split("/")[1:] if pointer else []:
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise GrammarError(f"dangling $ref: {pointer or '/'} does not exist", pointer=ref_ptr or pointer)
        return node
