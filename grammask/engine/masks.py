"""Exact token masks: which tokens may come next from a parser `Config`.

A token is allowed when its bytes can be consumed from the config. For one scan `(earley_set, q)`
the bytes first run through the lexer from state `q`; two things can happen:

- the lexer stays alive to the token's last byte: the token is allowed whatever the context. These
  tokens depend only on `q`; one walk down the token trie finds them all (`TokenWalk`), cached per
  lexer state and so shared by every Earley set, depth and rule that reaches `q`.
- the lexer accepts after a proper prefix of the token: the lexeme may end there, the parser moves on
  (`Parser.complete`) and the rest of the token must be valid from the new Earley set. The same walk
  lists these *split candidates* (token, offset, lexer state); they are checked against the parser,
  all at once with numpy, recursing through as many lexemes as the token spans.

Split candidates are checked from the *abstract* Earley set (older origins replaced by a
placeholder, see `grammask.engine.parser`), so the result is shared by every nesting depth. A
candidate rejected only because the check reached the placeholder is *unsure*; those few are checked
again from the concrete set. Results live in the grammar's `EngineCache`: walks per lexer state,
abstract results per (abstract set, lexer state), masks per scan and per config, so a parse that
returns to a known state pays one array copy.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from grammask.engine.parser import Config, EarleySet, Parser
from grammask.vocab import TokenTrie, Vocabulary

__all__ = ["MaskComputer", "TokenWalk"]

@dataclass(frozen=True)
class TokenWalk:
    """What one lexer state does to every text token, independent of the parser context."""

    alive: np.ndarray  # packed int32 mask: tokens that keep the lexer alive to their end
    split_tokens: np.ndarray  # int32: tokens whose prefix is a complete lexeme...
    split_offsets: np.ndarray  # ... of this many bytes ...
    split_states: np.ndarray  # ... ending in this accepting lexer state

    @property
    def nbytes(self) -> int:
        return self.alive.nbytes + self.split_tokens.nbytes + self.split_offsets.nbytes + self.split_states.nbytes


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
        self.lexer = parser.lexer
        self.cache = parser.cache
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
        self.eos_mask.flags.writeable = False
        #: Trie walks done (not served from the cache), for tests and statistics.
        self.walks_computed = 0

    # -- public -----------------------------------------------------------------------------------

    def mask(self, config: Config) -> np.ndarray:
        """The packed int32 bitmask of `config` (cached; read-only)."""
        key = ("mask", config)
        found = self.cache.get(key)
        if found is None:
            scans = config.scans
            if len(scans) == 1 and not config.accepting:
                found = self._scan_mask(*scans[0])
            else:
                found = self.eos_mask.copy() if config.accepting else np.zeros(self.words, dtype=np.int32)
                for earley_set, state in scans:
                    found |= self._scan_mask(earley_set, state)
                found.flags.writeable = False
            self.cache.put(key, found, found.nbytes)
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
        """The packed mask of the tokens one scan allows (cached per scan; read-only)."""
        key = ("scan", earley_set, state)
        found = self.cache.get(key)
        if found is not None:
            return found
        abstract = self.parser.abstract(earley_set)
        packed, unsure = self._abstract_scan(abstract, state)
        if unsure.tokens.size:
            ok, _ = self._after_lexeme(earley_set, unsure.tokens, unsure.offsets, unsure.states)
            if ok.any():
                packed = packed.copy()
                _set_bits(packed, unsure.tokens[ok])
                packed.flags.writeable = False
        self.cache.put(key, packed, packed.nbytes)
        return packed

    def _abstract_scan(self, abstract: EarleySet, state: int) -> tuple[np.ndarray, _Splits]:
        """The mask of a scan from an abstract set, and the split candidates it is unsure of."""
        key = ("abstract", abstract, state)
        found = self.cache.get(key)
        if found is not None:
            return found
        walk = self.walk(state)
        packed = walk.alive.copy()
        unsure = _NO_SPLITS
        if walk.split_tokens.size:
            todo = ~_has_bits(packed, walk.split_tokens)
            tokens, offsets, states = walk.split_tokens[todo], walk.split_offsets[todo], walk.split_states[todo]
            ok, doubt = self._after_lexeme(abstract, tokens, offsets, states)
            _set_bits(packed, tokens[ok])
            doubt &= ~_has_bits(packed, tokens)
            if doubt.any():
                unsure = _Splits(tokens[doubt], offsets[doubt], states[doubt])
        if state == abstract.lex_start and abstract.tokens:
            _set_bits(packed, np.fromiter(abstract.tokens, dtype=np.int64))
        packed.flags.writeable = False
        found = (packed, unsure)
        self.cache.put(key, found, packed.nbytes + unsure.nbytes)
        return found

    def walk(self, state: int) -> TokenWalk:
        """What lexer state `state` does to every text token (cached)."""
        key = ("walk", state)
        found = self.cache.get(key)
        if found is None:
            found = self._walk(state)
            self.walks_computed += 1
            self.cache.put(key, found, found.nbytes)
        return found

    def _walk(self, start: int) -> TokenWalk:
        """Step every trie node's prefix through the lexer, one trie level at a time.

        A level is computed sparsely (only the children of live nodes) when few nodes are live,
        densely (one gather over the whole level) otherwise; the dead state maps to itself.
        """
        trie, lexer = self.trie, self.lexer
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
                states = lexer.gather(node_state[self._parent[level_lo:level_hi]], self._byte[level_lo:level_hi])
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
                states = lexer.gather(np.repeat(frontier_state, counts), self._byte[children])
                live = states != 0
                frontier, frontier_state = children[live], states[live]
                node_state[frontier] = frontier_state
            live_nodes.append(frontier)
        accepting = lexer.accepting
        if any(n is None for n in live_nodes):  # a large level was dense: read the whole trie
            alive = self.pack(node_state[self._token_node] != 0)
            nodes = np.flatnonzero(accepting[node_state[:-1]] & self._has_below)
        else:
            nodes = np.concatenate(live_nodes) if live_nodes else np.zeros(0, dtype=np.int64)
            alive = np.zeros(self.words, dtype=np.int32)
            _set_bits(alive, self._tokens_in(self._end_lo[nodes], self._end_hi[nodes]))
            nodes = nodes[accepting[node_state[nodes]] & self._has_below[nodes]]
        nodes = nodes[nodes > 0]
        node_states = node_state[nodes]
        # Split candidates: tokens strictly below a node where a lexeme is complete.
        lo, hi = self._below_lo[nodes], self._below_hi[nodes]
        tokens = self._tokens_in(lo, hi)
        offsets = np.repeat(trie.depth[nodes], hi - lo).astype(np.int64)
        states = np.repeat(node_states, hi - lo)
        alive.flags.writeable = False
        return TokenWalk(alive, tokens, offsets, states)

    def _tokens_in(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The tokens of `sorted_tokens[lo[i]:hi[i]]` for all i, concatenated."""
        counts = hi - lo
        positions = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        return self.trie.sorted_tokens[positions].astype(np.int64)

    # -- across lexeme boundaries -----------------------------------------------------------------

    def _after_lexeme(
        self, earley_set: EarleySet, tokens: np.ndarray, offsets: np.ndarray, states: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """For each token, whether its bytes from `offset` on can follow once the lexeme that
        started at `earley_set` ends in lexer state `state`; and, for the rejected ones, whether
        the rejection is unsure (it happened past a completion into the placeholder)."""
        ok = np.zeros(len(tokens), dtype=bool)
        unsure = np.zeros(len(tokens), dtype=bool)
        accepts = self.lexer.accepts
        for state in np.unique(states).tolist():
            chosen = np.flatnonzero(states == state)
            made = self.parser.complete(earley_set, accepts[state])
            ok[chosen], unsure[chosen] = self._suffix_valid(made, tokens[chosen], offsets[chosen])
        return ok, unsure

    def _suffix_valid(
        self, earley_set: EarleySet, tokens: np.ndarray, offsets: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Whether each token's bytes from its offset (non-empty) can start at the fresh lexeme
        boundary `earley_set`, and whether a rejection is unsure."""
        ok = np.zeros(len(tokens), dtype=bool)
        unsure = np.zeros(len(tokens), dtype=bool)
        if not len(tokens):
            return ok, unsure
        trie, lexer = self.trie, self.lexer
        tainted = earley_set.tainted
        index = np.arange(len(tokens))
        starts = trie.token_start[tokens]
        ends = trie.token_len[tokens].astype(np.int64)
        position = offsets.astype(np.int64)
        state = np.full(len(tokens), earley_set.lex_start, dtype=np.int32)
        while index.size:
            state = lexer.gather(state, trie.flat_bytes[starts[index] + position])
            live = state != 0
            if tainted:
                unsure[index[~live]] = True
            index, state, position = index[live], state[live], position[live] + 1
            finished = position == ends[index]
            ok[index[finished]] = True
            going = ~finished
            split = going & lexer.accepting[state]
            if split.any():
                chosen = np.flatnonzero(split)
                sub_ok, sub_unsure = self._after_lexeme(
                    earley_set, tokens[index[chosen]], position[chosen], state[chosen]
                )
                ok[index[chosen[sub_ok]]] = True
                unsure[index[chosen[sub_unsure]]] = True
                going &= ~ok[index]
            index, state, position = index[going], state[going], position[going]
        return ok, unsure


@dataclass(frozen=True)
class _Splits:
    """Split candidates: token, offset of the split, lexer state where the lexeme ends."""

    tokens: np.ndarray
    offsets: np.ndarray
    states: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.tokens.nbytes + self.offsets.nbytes + self.states.nbytes


_NO_SPLITS = _Splits(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32))
