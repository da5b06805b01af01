"""How the JSON text is laid out: flexible, compact, or pretty-printed with a fixed indent."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from grammask.errors import GrammarError
from grammask.ir import regex as rx

__all__ = ["DEFAULT_MAX_RUN", "MAX_PRETTY_DEPTH", "Whitespace"]

#: Longest run of whitespace that flexible mode allows between two JSON tokens. Unbounded runs
#: let a model emit whitespace until the token limit, the most reported failure of constrained JSON.
DEFAULT_MAX_RUN = 20
#: Deepest nesting that pretty mode lays out (each depth needs its own rules).
MAX_PRETTY_DEPTH = 32

_WS = rx.char_class([(0x20, 0x20), (0x09, 0x0A), (0x0D, 0x0D)])


@dataclass(frozen=True)
class Whitespace:
    """A layout. `indent` None is flexible or compact (`max_run` 0); an int is `json.dumps(indent=...)`."""

    max_run: int = DEFAULT_MAX_RUN
    indent: int | None = None

    @classmethod
    def flexible(cls, max_run: int = DEFAULT_MAX_RUN) -> Whitespace:
        """Any JSON whitespace between tokens, at most `max_run` characters in a row."""
        return cls(max_run=max_run)

    @classmethod
    def compact(cls) -> Whitespace:
        """No whitespace at all, as `json.dumps(separators=(",", ":"))`."""
        return cls(max_run=0)

    @classmethod
    def pretty(cls, indent: int = 2) -> Whitespace:
        """One item per line, nested `indent` spaces deeper, as `json.dumps(indent=indent)`."""
        return cls(max_run=0, indent=indent)

    @classmethod
    def of(cls, spec: object) -> Whitespace:
        """Accept "flexible", "compact", an int indent or a `Whitespace`."""
        if isinstance(spec, Whitespace):
            return spec
        if spec == "flexible":
            return cls.flexible()
        if spec == "compact":
            return cls.compact()
        if isinstance(spec, int) and not isinstance(spec, bool) and spec >= 0:
            return cls.pretty(spec)
        raise GrammarError(f"whitespace must be 'flexible', 'compact', an indent >= 0 or a Whitespace, not {spec!r}")

    def _gap(self) -> rx.RegexNode:
        return _gap(self.max_run)

    def _newline(self, depth: int) -> rx.RegexNode:
        return rx.literal("\n" + " " * (self.indent * depth)) if self.indent is not None else self._gap()

    def open(self, bracket: str, depth: int) -> rx.RegexNode:
        """An opening bracket and the layout before the first item."""
        return rx.concat(rx.literal(bracket), self._newline(depth + 1))

    def close(self, bracket: str, depth: int) -> rx.RegexNode:
        """The layout after the last item and the closing bracket."""
        return rx.concat(self._newline(depth), rx.literal(bracket))

    def empty(self, brackets: str) -> rx.RegexNode:
        """An empty array or object."""
        inner = self._gap() if self.indent is None else rx.EMPTY
        return rx.concat(rx.literal(brackets[0]), inner, rx.literal(brackets[1]))

    def comma(self, depth: int) -> rx.RegexNode:
        """The separator between two items of a container at `depth`."""
        return rx.concat(self._gap(), rx.literal(","), self._newline(depth + 1))

    def colon(self) -> rx.RegexNode:
        if self.indent is not None:
            return rx.literal(": ")
        return rx.concat(self._gap(), rx.literal(":"), self._gap())


@lru_cache(maxsize=16)
def _gap(max_run: int) -> rx.RegexNode:
    """Whitespace between two tokens: asked for around every token of a schema's grammar."""
    return rx.repeat(_WS, 0, max_run)
