"""Exact token masks: which tokens may come next from a parser `Config`.

A token is allowed when its bytes can be consumed from the config. For one scan `(earley_set, q)`
the bytes first run through that set's lexer from state `q`; two things can happen:

- the lexer stays alive to the token's last byte: the token is allowed whatever the context. These
  tokens depend only on `(lexer, q)`; one walk down the token trie finds them all (`TokenWalk`).
- the lexer accepts after a proper prefix of the token: the lexeme may end there, the parser moves on
  (`Parser.complete`) and the rest of the token must be valid from the new Earley set. The same walk
  lists these *split candidates* (token, offset, lexer state); they are checked against the parser,
  all at once with numpy, recursing through as many lexemes as the token spans.

The walk is vectorised level by level over the trie and pruned at dead nodes. Results are cached per
`(lexer, q)` (context-free part) and per scan (with context), and the whole mask per `Config`, so a
parse that returns to a known state pays one array copy.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from grammask.engine.lexer import Lexer
from grammask.engine.parser import Config, EarleySet, Parser
from grammask.vocab import TokenTrie, Vocabulary

__all__ = ["MaskComputer", "TokenWalk"]

#: Below this many split candidates in one group, they are checked one by one in Python.
_FEW = 8


@dataclass(frozen=True)
class TokenWalk:
    """What one lexer state does to every text token, independent of the parser context."""

    alive: np.ndarray  # packed int32 mask: tokens that keep the lexer alive to their end
    split_tokens: np.ndarray  # int32: tokens whose prefix is a complete lexeme...
    split_offsets: np.ndarray  # ... of this many bytes ...
    split_states: np.ndarray  # ... ending in this accepting lexer state


def _has_bits(packed: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Whether each token's bit is set in a packed mask."""
    return (packed.view(np.uint32)[tokens >> 5] >> (tokens & 31).astype(np.uint32)) & 1 == 1


def _set_bits(packed: np.ndarray, tokens: np.ndarray) -> None:
    """Set the tokens' bits in a packed mask, in place."""
    np.bitwise_or.at(packed.view(np.uint32), tokens >> 5, np.left_shift(np.uint32(1), (tokens & 31).astype(np.uint32)))


@dataclass(frozen=True)
class _TrieIndex:
    """Arrays derived from a token trie that every mask computation over it uses (built once)."""

    first_child: np.ndarray  # children of node n: first_child[n]:child_end[n] (contiguous by layout)
    child_end: np.ndarray
    below_lo: np.ndarray  # sorted_tokens[below_lo[n]:below_hi[n]]: tokens strictly below n
    below_hi: np.ndarray
    end_lo: np.ndarray  # sorted_tokens[end_lo[n]:end_hi[n]]: tokens ending exactly at n
    end_hi: np.ndarray
    token_node: np.ndarray  # node of each token; n_nodes ("no node") for special and padding ids
    parent: np.ndarray
    byte: np.ndarray
    has_below: np.ndarray


_trie_indexes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _trie_index(trie: TokenTrie) -> _TrieIndex:
    found = _trie_indexes.get(trie)
    if found is None:
        counts = np.bincount(trie.parent[1:], minlength=trie.n_nodes)
        child_end = np.cumsum(counts) + 1
        end_lo = trie.node_lo.astype(np.int64)
        found = _TrieIndex(
            first_child=child_end - counts,
            child_end=child_end,
            below_lo=end_lo + trie.node_end_count,
            below_hi=trie.node_hi.astype(np.int64),
            end_lo=end_lo,
            end_hi=end_lo + trie.node_end_count,
            token_node=np.where(trie.token_node >= 0, trie.token_node, trie.n_nodes),
            parent=trie.parent.astype(np.int32),
            byte=trie.byte.astype(np.int32),
            has_below=trie.node_hi > trie.node_lo + trie.node_end_count,
        )
        _trie_indexes[trie] = found
    return found


class MaskComputer:
    """Token masks for the configs of one parser over one vocabulary."""

    def __init__(self, parser: Parser, vocab: Vocabulary) -> None:
        self.parser = parser
        self.vocab = vocab
        self.trie = vocab.trie
        self.size = vocab.size
        self.words = (vocab.size + 31) // 32
        index = _trie_index(self.trie)
        self._first_child, self._child_end = index.first_child, index.child_end
        self._below_lo, self._below_hi, self._has_below = index.below_lo, index.below_hi, index.has_below
        self._end_lo, self._end_hi, self._token_node = index.end_lo, index.end_hi, index.token_node
        self._parent, self._byte = index.parent, index.byte
        self._eos = np.array(vocab.eos_ids, dtype=np.int64)
        eos_only = np.zeros(self.size, dtype=bool)
        eos_only[self._eos] = True
        #: The mask after an end-of-sequence token: only end-of-sequence tokens (padding).
        self.eos_mask = self.pack(eos_only)
        self._walks: dict[tuple[int, int], TokenWalk] = {}
        self._scan_masks: dict[tuple[int, int], np.ndarray] = {}

    # -- public -----------------------------------------------------------------------------------

    def mask(self, config: Config) -> np.ndarray:
        """The packed int32 bitmask of `config` (cached on it; do not modify)."""
        found = config.mask
        if found is None:
            found = self.eos_mask.copy() if config.accepting else np.zeros(self.words, dtype=np.int32)
            for earley_set, state in config.scans:
                found |= self._scan_mask(earley_set, state)
            config.mask = found
        return found

    def pack(self, allowed: np.ndarray) -> np.ndarray:
        packed = np.packbits(allowed, bitorder="little")
        out = np.zeros(self.words * 4, dtype=np.uint8)
        out[: len(packed)] = packed
        return out.view(np.int32)

    def longest_token_at(self, data: bytes, start: int) -> tuple[int, int]:
        """The longest text token that `data[start:]` begins with, and its length ((-1, 0) if none)."""
        trie = self.trie
        node, best = 0, (-1, 0)
        for length, byte in enumerate(data[start:], 1):
            lo, hi = int(self._first_child[node]), int(self._child_end[node])
            i = lo + int(np.searchsorted(trie.byte[lo:hi], byte))
            if i >= hi or trie.byte[i] != byte:
                break
            node = i
            if trie.node_end_count[node]:
                best = (int(trie.sorted_tokens[trie.node_lo[node]]), length)
        return best

    # -- per scan ---------------------------------------------------------------------------------

    def _scan_mask(self, earley_set: EarleySet, state: int) -> np.ndarray:
        """The packed mask of the tokens one scan allows (cached per scan)."""
        key = (id(earley_set), state)
        cache = self._scan_masks
        found = cache.get(key)
        if found is not None and found[0] is earley_set:
            return found[1]
        lexer = earley_set.lexer
        if lexer is None:
            packed = np.zeros(self.words, dtype=np.int32)
        else:
            walk = self.walk(lexer, state)
            packed = walk.alive.copy()
            if walk.split_tokens.size:
                todo = ~_has_bits(packed, walk.split_tokens)
                ok = self._after_lexeme(
                    earley_set, lexer, walk.split_tokens[todo], walk.split_offsets[todo], walk.split_states[todo]
                )
                _set_bits(packed, walk.split_tokens[todo][ok])
        if state == 1 and earley_set.tokens:
            _set_bits(packed, np.fromiter(earley_set.tokens, dtype=np.int64))
        if len(cache) >= self.parser.limits.max_cached_masks:
            cache.clear()
        cache[key] = (earley_set, packed)
        return packed

    def walk(self, lexer: Lexer, state: int) -> TokenWalk:
        key = (id(lexer), state)
        found = self._walks.get(key)
        if found is None:
            found = self._walk(lexer, state)
            self._walks[key] = found
        return found

    def _walk(self, lexer: Lexer, start: int) -> TokenWalk:
        """Step every trie node's prefix through the lexer, one trie level at a time.

        A level is computed sparsely (only the children of live nodes) when few nodes are live,
        densely (one gather over the whole level) otherwise; the dead state maps to itself.
        """
        trie = self.trie
        table = lexer.transitions.ravel()
        bounds = trie.depth_start
        node_state = np.zeros(trie.n_nodes + 1, dtype=np.int32)  # the extra node: "no node", always dead
        node_state[0] = start
        frontier = np.zeros(1, dtype=np.int64)
        frontier_state = node_state[:1]
        live_nodes: list[np.ndarray | None] = []
        dense = False
        for depth in range(1, len(bounds) - 1):
            level_lo, level_hi = int(bounds[depth]), int(bounds[depth + 1])
            if not dense:
                lo, hi = self._first_child[frontier], self._child_end[frontier]
                counts = hi - lo
                total = int(counts.sum())
                if total == 0:
                    break
                dense = 3 * total > level_hi - level_lo
            if dense:
                states = table[node_state[self._parent[level_lo:level_hi]] * 256 + self._byte[level_lo:level_hi]]
                node_state[level_lo:level_hi] = states
                live_count = int(np.count_nonzero(states))
                if live_count == 0:
                    break
                # A level much sparser than the trie: go on with its live nodes only.
                dense = 8 * live_count >= level_hi - level_lo
                if dense and level_hi - level_lo > 4096:
                    live_nodes.append(None)  # too large to list cheaply: read the whole trie at the end
                    continue
                frontier = np.flatnonzero(states) + level_lo
                frontier_state = states[frontier - level_lo]
            else:
                children = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(total)
                states = table[np.repeat(frontier_state, counts) * 256 + self._byte[children]]
                live = states != 0
                frontier, frontier_state = children[live], states[live]
                node_state[frontier] = frontier_state
            live_nodes.append(frontier)
        if any(n is None for n in live_nodes):  # a large level was dense: read the whole trie
            alive = self.pack(node_state[self._token_node] != 0)
            nodes = np.flatnonzero(lexer.accepting[node_state[:-1]] & self._has_below)
        else:
            nodes = np.concatenate(live_nodes) if live_nodes else np.zeros(0, dtype=np.int64)
            alive = np.zeros(self.words, dtype=np.int32)
            _set_bits(alive, self._tokens_in(self._end_lo[nodes], self._end_hi[nodes]))
            nodes = nodes[lexer.accepting[node_state[nodes]] & self._has_below[nodes]]
        nodes = nodes[nodes > 0]
        node_states = node_state[nodes]
        # Split candidates: tokens strictly below a node where a lexeme is complete.
        lo, hi = self._below_lo[nodes], self._below_hi[nodes]
        tokens = self._tokens_in(lo, hi)
        offsets = np.repeat(trie.depth[nodes], hi - lo).astype(np.int64)
        states = np.repeat(node_states, hi - lo)
        return TokenWalk(alive, tokens, offsets, states)

    def _tokens_in(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The tokens of `sorted_tokens[lo[i]:hi[i]]` for all i, concatenated."""
        counts = hi - lo
        positions = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        return self.trie.sorted_tokens[positions].astype(np.int64)

    # -- across lexeme boundaries -----------------------------------------------------------------

    def _after_lexeme(
        self, earley_set: EarleySet, lexer: Lexer, tokens: np.ndarray, offsets: np.ndarray, states: np.ndarray
    ) -> np.ndarray:
        """For each token, whether its bytes from `offset` on can follow once the lexeme that
        started at `earley_set` ends in lexer state `state`."""
        ok = np.zeros(len(tokens), dtype=bool)
        for state in np.unique(states).tolist():
            chosen = np.flatnonzero(states == state)
            made = self.parser.complete(earley_set, lexer.accepts[state])
            if len(chosen) <= _FEW:
                ok[chosen] = self._suffix_valid_few(made, tokens[chosen], offsets[chosen])
            else:
                ok[chosen] = self._suffix_valid(made, tokens[chosen], offsets[chosen])
        return ok

    def _suffix_valid_few(self, earley_set: EarleySet, tokens: np.ndarray, offsets: np.ndarray) -> list[bool]:
        """`_suffix_valid` for a handful of tokens: stepping the parser byte by byte is cheaper
        than a round of array operations."""
        parser, token_bytes = self.parser, self.vocab.token_bytes
        config = parser.config_after_set(earley_set)
        return [parser.step_bytes(config, token_bytes[t][o:]) is not None for t, o in zip(tokens.tolist(), offsets.tolist())]

    def _suffix_valid(self, earley_set: EarleySet, tokens: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Whether each token's bytes from its offset (non-empty) can start at the fresh lexeme
        boundary `earley_set`."""
        ok = np.zeros(len(tokens), dtype=bool)
        lexer = earley_set.lexer
        if lexer is None or not len(tokens):
            return ok
        trie = self.trie
        table, accepting = lexer.transitions, lexer.accepting
        index = np.arange(len(tokens))
        starts = trie.token_start[tokens]
        ends = trie.token_len[tokens].astype(np.int64)
        position = offsets.astype(np.int64)
        state = np.ones(len(tokens), dtype=np.int32)
        while index.size:
            state = table[state, trie.flat_bytes[starts[index] + position]]
            live = state != 0
            index, state, position = index[live], state[live], position[live] + 1
            finished = position == ends[index]
            ok[index[finished]] = True
            going = ~finished
            split = going & accepting[state]
            if split.any():
                chosen = np.flatnonzero(split)
                sub = self._after_lexeme(earley_set, lexer, tokens[index[chosen]], position[chosen], state[chosen])
                ok[index[chosen[sub]]] = True
                going &= ~ok[index]
            index, state, position = index[going], state[going], position[going]
        return ok
