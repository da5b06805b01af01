"""Hash-once for the IR's immutable trees: deep trees are used as dictionary keys over and over
(interning lexemes, caching automata), and a dataclass would re-hash the whole tree every time."""

from __future__ import annotations

__all__ = ["cached_hash"]


def cached_hash(cls: type) -> type:
    """Class decorator, applied under `@dataclass(frozen=True, ...)`, for classes that declare
    `_hash: int = field(init=False, repr=False, compare=False)`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((cls.__name__, *(getattr(self, name) for name in self.__match_args__))))

    def __hash__(self) -> int:
        return self._hash

    cls.__post_init__ = __post_init__
    cls.__hash__ = __hash__
    return cls
