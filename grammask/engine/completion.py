"""The shortest text that completes a sentence from a parser state (for "safe end": a token
budget never cuts output short).

`shortest_completion(parser, config)` is a breadth-first search over bytes from a parser state. It
is exact (the fewest bytes that make the text a complete sentence) and cheap because:

- parser states are hash-consed, so a state reached twice is expanded once;
- bytes are grouped by what they do: two bytes that move every live lexer to the same states lead
  to the same parser state, so one representative per group is stepped (inside a JSON string the
  ~200 allowed bytes fall into a handful of groups);
- results are memoised per parser state in the grammar's bounded cache.

The search follows text only: a completion that needs a special token (a grammar `Token` item)
is not found, and the search gives up after `max_states` states; both return None.
"""

from __future__ import annotations

import numpy as np

from grammask.engine.parser import Config, Parser

__all__ = ["shortest_completion"]


def shortest_completion(parser: Parser, start: Config, *, max_states: int = 20_000) -> bytes | None:
    """The fewest bytes after which the text is complete (b"" if it already is), or None when no
    completion is found within `max_states` parser states or it needs a special token."""
    if start.accepting:
        return b""
    key = ("completion", start.number)
    cached: bytes | None | bool = parser.cache.get(key, False)
    if cached is not False:
        return cached  # type: ignore[return-value]
    parents: dict[Config, tuple[Config, int] | None] = {start: None}
    frontier = [start]
    found: Config | None = None
    while frontier and found is None and len(parents) < max_states:
        following = []
        for config in frontier:
            for byte in _representative_bytes(parser, config):
                after = parser.step_bytes(config, bytes((byte,)))
                if after is None or after in parents:
                    continue
                parents[after] = (config, byte)
                if after.accepting:
                    found = after
                    break
                following.append(after)
            if found is not None:
                break
        frontier = following
    result = None if found is None else _spell(found, parents)
    parser.cache.put(key, result, len(result or b""))
    return result


def _representative_bytes(parser: Parser, config: Config) -> list[int]:
    """One byte for each group of bytes that moves every live lexer of `config` the same way."""
    rows = [parser.lexer.row(state) for state in config.states]
    if not rows:
        return []
    moves = np.array(rows)  # [scans, 256]: the lexer state after each byte
    alive = moves.any(axis=0)
    _, first = np.unique(moves[:, alive].T, axis=0, return_index=True)
    return np.flatnonzero(alive)[np.sort(first)].tolist()


def _spell(config, parents: dict) -> bytes:
    out = bytearray()
    while parents[config] is not None:
        config, byte = parents[config]
        out.append(byte)
    return bytes(reversed(out))
