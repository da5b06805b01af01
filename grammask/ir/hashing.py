"""Hash-once for the IR's immutable trees: deep trees are used as dictionary keys over and over
(interning lexemes, caching automata), and a dataclass would re-hash the whole tree every time."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, TypeVar

__all__ = ["cached_hash"]


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
