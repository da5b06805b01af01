"""Hashing the IR's immutable trees: hash-once for dictionary keys (deep trees are used as keys over
and over: interning lexemes, caching automata, and a dataclass would re-hash the whole tree every
time), and a content digest for keys that must not keep the tree alive (`digest`)."""

from __future__ import annotations

import hashlib
from operator import attrgetter
from typing import Any, TypeVar

__all__ = ["cached_hash", "digest"]


_C = TypeVar("_C", bound=type)


def cached_hash(cls: _C) -> _C:
    """Class decorator, applied under `@dataclass(frozen=True, ...)`, for classes that declare
    `_hash: int = field(init=False, repr=False, compare=False)`. A `__post_init__` the class
    defines still runs (after the hash is set), to cache other derived fields."""
    derive = cls.__dict__.get("__post_init__")
    fields: list[attrgetter] = []  # the compared fields, known once `dataclass` has run

    def __post_init__(self: Any) -> None:
        if not fields:
            fields.append(attrgetter(*self.__match_args__))
        values = fields[0](self)
        object.__setattr__(
            self, "_hash", hash((cls.__name__, *values) if len(self.__match_args__) > 1 else (cls.__name__, values))
        )
        if derive is not None:
            derive(self)

    def __hash__(self: Any) -> int:
        return self._hash

    target: Any = cls  # any dataclass: mypy cannot see that it takes these methods
    target.__post_init__ = __post_init__
    target.__hash__ = __hash__
    return cls


def digest(*values: Any) -> bytes:
    """A 16-byte digest of IR trees and the plain values around them, equal for equal inputs.

    A cache keyed by digests holds 16 bytes per key instead of the trees, which would otherwise
    stay alive (and be scanned by Python's garbage collector) as long as the entry. Iterative and
    memoised per node: trees as deep as their input, and DAGs of shared subtrees, cost one visit per
    distinct node. IR nodes are the dataclasses with `__match_args__`; tuples, lists and dicts are
    walked into; anything else is hashed by its `repr`."""
    done: dict[int, bytes] = {}
    keep: list[Any] = []  # what `done` is keyed by the id of, alive until the end
    stack: list[tuple[Any, list[Any] | None]] = [(value, None) for value in values if _is_container(value)]
    while stack:
        value, parts = stack.pop()
        if id(value) in done:
            continue
        if parts is None:  # first visit: its parts first
            parts = _parts(value)
            keep.append(parts)  # fresh tuples for a dict's items: keep their ids unique
            stack.append((value, parts))
            stack.extend((part, None) for part in parts if _is_container(part))
            continue
        h = hashlib.blake2b(type(value).__qualname__.encode(), digest_size=16)
        for part in parts:
            h.update(done[id(part)] if _is_container(part) else repr(part).encode())
            h.update(b"\0")
        done[id(value)] = h.digest()
        keep.append(value)
    out = hashlib.blake2b(digest_size=16)
    for value in values:
        out.update(done[id(value)] if _is_container(value) else repr(value).encode())
        out.update(b"\0")
    return out.digest()


def _is_container(value: Any) -> bool:
    return isinstance(value, (tuple, list, dict)) or hasattr(value, "__match_args__")


def _parts(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [tuple(item) for item in value.items()]
    if isinstance(value, (tuple, list)):
        return list(value)
    return [getattr(value, name) for name in value.__match_args__]
