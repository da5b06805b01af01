"""Hash-once for the IR's immutable trees: deep trees are used as dictionary keys over and over
(interning lexemes, caching automata), and a dataclass would re-hash the whole tree every time."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, TypeVar

__all__ = ["cached_hash"]


_C = TypeVar("_C", bound=type)


def cached_hash(cls: _C) -> _C:
    """Class decorator, applied under `@dataclass(frozen=True, ...)`, for classes that declare
    `_hash: int = field(init=False, repr=False, compare=False, default=0)`. The hash is computed
    the first time it is asked for, then kept: most nodes a front-end makes are parts of bigger
    ones and are never hashed themselves (six in seven on MaskBench's schemas)."""
    fields: list[attrgetter] = []  # the compared fields, known once `dataclass` has run

    def __hash__(self: Any) -> int:
        found: int = self._hash
        if not found:  # not asked for before (or 0 by chance: computed again)
            if not fields:
                fields.append(attrgetter(*self.__match_args__))
            values = fields[0](self)
            found = hash((cls.__name__, *values) if len(self.__match_args__) > 1 else (cls.__name__, values))
            object.__setattr__(self, "_hash", found)
        return found

    target: Any = cls  # any dataclass: mypy cannot see that it takes this method
    target.__hash__ = __hash__
    return cls
