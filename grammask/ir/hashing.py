"""Hash-once for the IR's immutable trees: deep trees are used as dictionary keys over and over
(interning lexemes, caching automata), and a dataclass would re-hash the whole tree every time."""

from __future__ import annotations

from operator import attrgetter

__all__ = ["cached_hash"]


def cached_hash(cls: type) -> type:
    """Class decorator, applied under `@dataclass(frozen=True, ...)`, for classes that declare
    `_hash: int = field(init=False, repr=False, compare=False)`. A `__post_init__` the class
    defines still runs (after the hash is set), to cache other derived fields."""
    derive = cls.__dict__.get("__post_init__")
    fields: list[attrgetter] = []  # the compared fields, known once `dataclass` has run

    def __post_init__(self) -> None:
        if not fields:
            fields.append(attrgetter(*self.__match_args__))
        values = fields[0](self)
        object.__setattr__(self, "_hash", hash((cls.__name__, *values) if len(self.__match_args__) > 1
                                               else (cls.__name__, values)))
        if derive is not None:
            derive(self)

    def __hash__(self) -> int:
        return self._hash

    cls.__post_init__ = __post_init__
    cls.__hash__ = __hash__
    return cls
