"""Exact token masks: which tokens may come next from a parser `Config`.

A token is allowed when its bytes can be consumed from the config. For one scan `(earley_set, q)`
the bytes first run through the lexer from state `q`; two things can happen:

- the lexer stays alive to the token's last byte: the token is allowed whatever the context. These
  tokens depend only on `q`; one walk down the token trie finds them all (`TokenWalk`), cached per
  lexer state and so shared by every Earley set, depth and rule that reaches `q`. Where several
  lexemes are alive in `q`, its walk is the union of each lexeme's own walk: no row of the combined
  state is built, and a lexeme's walk serves every combination it is part of.
- the lexer accepts after a proper prefix of the token: the lexeme may end there, the parser moves on
  (`Parser.complete`) and the rest of the token must be valid from the new Earley set. The same walk
  lists these *split candidates* (token, offset, lexer state); they are checked against the parser,
  all at once with numpy, recursing through as many lexemes as the token spans.

Split candidates are checked from the *abstract* Earley set (older origins replaced by a
placeholder, see `grammask.engine.parser`), so the result is shared by every nesting depth. A
candidate rejected only because the check reached the placeholder is *unsure*; those few are checked
again from the concrete set. Results live in the grammar's `LRUCache`: walks per lexer state,
abstract results per (abstract set, lexer state), masks per scan and per config, so a parse that
returns to a known state pays one array copy.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, NamedTuple

import numpy as np

from grammask.engine import kernels
from grammask.engine.parser import Config, EarleySet, Parser
from grammask.engine.tables import TrieIndex, tables_for
from grammask.ir.walk import Walk, run
from grammask.vocab import TokenTrie, Vocabulary

#: Pairs (slice state, lexer state) `MaskComputer._widest_slice` visits before it settles for
#: what it has proven (compiled, and in Python without numba).
_SLICE_PAIRS = 2048
#: Lexer rows `MaskComputer._widest_slice` may compute for its search (states of several lexemes
#: combined cost ~0.3 ms each); past them it settles for what it has proven.
_SLICE_ROWS = 64
_SLICE_PAIRS_NUMPY = 48
#: From this many lexemes into a token on, a split check of an abstract scan goes on from the
#: abstract sets of what it completes (see `MaskComputer._valid_after`).
_SHARED_LEVEL = 4
#: From this many tokens below split nodes on, their next lexeme is found by a trie walk below
#: the nodes rather than token by token (see `MaskComputer._cross_below`).
_MANY_BELOW = 2048
#: From `_SHARED_LEVEL` lexemes into the tokens on, at most this many tokens still going on are
#: checked one at a time, depth first, rather than a level at a time (see `MaskComputer._rest`).
_FEW_GOING = 64
#: Before `_SHARED_LEVEL`, from the second lexeme into the tokens on, at most this many: a level
#: costs about 60 µs of numpy calls and parser completions however few tokens go on, and most of
#: the levels past a JSON value's end carry one to a few tokens (`"},` crosses three lexemes). In
#: `_valid_after` on every third Kubernetes schema: 15% less time with 8 than with none, 11% with 32.
_FEW_SOON = 8

__all__ = ["MaskComputer", "Splits", "TokenWalk"]


# The results below are named tuples, and the grammar's cache keeps them as flat plain tuples:
# Python's garbage collector stops tracking a plain tuple of arrays and numbers the first time it
# meets one (a nested one, a level per collection of its generation), and never a named tuple or
# a dataclass object. A full collection costs about as much per tracked object, and these were a
# third of what a benchmark process's collections scanned.


class Splits(NamedTuple):
    """Trie nodes where a lexeme is complete and tokens go on below, with the lexer state there
    (only the lexemes it accepts matter: what follows a split depends on nothing else)."""

    trie: int  # the trie the nodes belong to: 0 the whole vocabulary's, i + 1 the rest of slice i
    nodes: np.ndarray
    states: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.nodes.nbytes + self.states.nbytes


def _flat(splits: tuple[Splits, ...]) -> tuple[int | np.ndarray, ...]:
    """The trie, nodes and states of each of `splits` in turn, in one plain tuple."""
    return tuple(item for s in splits for item in s)


def _splits_of(flat: tuple[Any, ...]) -> tuple[Splits, ...]:
    """The splits `_flat` gave `flat` of."""
    return tuple(Splits._make(flat[i : i + 3]) for i in range(0, len(flat), 3))


class TokenWalk(NamedTuple):
    """What one lexer state does to every text token, independent of the parser context."""

    alive: np.ndarray  # packed int32 mask: tokens that keep the lexer alive to their end
    splits: tuple[Splits, ...]

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """Its arrays, which other cache entries may hold too (a scan's mask is often `alive`, a
        union walk's splits are its lexemes' own)."""
        return (self.alive, *(a for s in self.splits for a in (s.nodes, s.states)))


class _Unsure(NamedTuple):
    """What a scan from an abstract set could not decide: split nodes (all tokens below) and
    single split candidates (token, offset of the split, lexer state there)."""

    splits: tuple[Splits, ...]
    tokens: np.ndarray
    offsets: np.ndarray
    states: np.ndarray

    @property
    def empty(self) -> bool:
        return not self.splits and not self.tokens.size

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.splits) + self.tokens.nbytes + self.offsets.nbytes + self.states.nbytes


class _Crossing(NamedTuple):
    """How tokens go through the next lexeme from a lexeme boundary: whether each ends inside
    it, whether every lexeme died on it, and where lexemes end before the token does (the
    token's position in the batch, the position after the lexeme, the lexer state there)."""

    ok: np.ndarray
    died: np.ndarray
    entry: np.ndarray
    after: np.ndarray
    ended: np.ndarray

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self)


class _Below(NamedTuple):
    """The tokens below some split nodes that can go on at a lexer start state (with the offset
    after the split), whether every child byte could, and how their next lexeme goes."""

    tokens: np.ndarray
    offsets: np.ndarray
    all_live: bool
    crossing: _Crossing

    @property
    def nbytes(self) -> int:
        return self.tokens.nbytes + self.offsets.nbytes + self.crossing.nbytes


_EMPTY = np.zeros(0, np.int64)
_SURE = _Unsure((), _EMPTY, _EMPTY, _EMPTY)


class _WalkSpace(threading.local):
    """Per thread, the arrays a compiled trie walk writes into (`kernels.walk_space`), as long as
    the largest trie walked so far: five arrays of a large vocabulary's trie (8 MB) made for
    each walk cost more than most walks do (a walk inside a key or a number reads a few dozen
    nodes). Results are copied out of them."""

    def __init__(self) -> None:
        self.arrays: tuple[np.ndarray, ...] = kernels.walk_space(0)

    def get(self, n: int) -> tuple[np.ndarray, ...]:
        if len(self.arrays[0]) < n:
            self.arrays = kernels.walk_space(n)
        return self.arrays


_walk_space = _WalkSpace()


#: Up to this many labels, `_groups` numbers them with a dict: `np.unique` costs about 20 µs
#: whatever the size, four times as much as the dict on the ten labels a split check has.
_FEW_LABELS = 64


def _groups(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The position of each distinct label's first occurrence, and each label's group number."""
    if len(labels) > _FEW_LABELS:
        if (labels == labels[0]).all():  # the common case: no sort
            return np.zeros(1, dtype=np.int64), np.zeros(len(labels), dtype=np.int64)
        _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
        return first, inverse.reshape(-1)
    values = labels.tolist()
    numbers: dict[int, int] = {}
    group = [numbers.setdefault(label, len(numbers)) for label in values]
    if len(numbers) == 1:
        return np.zeros(1, dtype=np.int64), np.zeros(len(values), dtype=np.int64)
    return np.array([values.index(label) for label in numbers], dtype=np.int64), np.array(group, dtype=np.int64)


def _spans(lo: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The integers of `[lo[i], lo[i] + counts[i])` for all i, concatenated in order (the children
    of trie nodes, the tokens below them, a token's start states)."""
    return np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))


def _has_bits(packed: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Whether each token's bit is set in a packed mask."""
    return (packed.view(np.uint32)[tokens >> 5] >> (tokens & 31).astype(np.uint32)) & 1 == 1


def _set_bits(packed: np.ndarray, tokens: np.ndarray) -> None:
    """Set the tokens' bits in a packed mask, in place (`np.bitwise_or.at` costs about 9 µs even
    for no tokens, and most calls set none or a few)."""
    if not tokens.size:
        return
    if kernels.AVAILABLE:
        kernels.set_bits(packed.view(np.uint32), tokens)
        return
    np.bitwise_or.at(packed.view(np.uint32), tokens >> 5, np.left_shift(np.uint32(1), (tokens & 31).astype(np.uint32)))


def _merge(parts: list[_Unsure], packed: np.ndarray) -> _Unsure:
    """One `_Unsure` of several, without the single tokens `packed` has allowed meanwhile."""
    parts = [p for p in parts if not p.empty]
    if not parts:
        return _SURE
    tokens = np.concatenate([p.tokens for p in parts])
    keep = ~_has_bits(packed, tokens)  # allowed by another split point after all
    return _Unsure(
        tuple(s for p in parts for s in p.splits),
        tokens[keep],
        np.concatenate([p.offsets for p in parts])[keep],
        np.concatenate([p.states for p in parts])[keep],
    )


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
        self.tables = tables_for(vocab)
        self._index = self.tables.index
        #: the tries walks go over, by the number `Splits.trie` gives: the whole vocabulary's,
        #: then the rest of each JSON-string slice (`VocabTables.json_string`) in order
        self._tries = (self._index, *(s.rest for s in self.tables.json_string))
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
        """The packed int32 bitmask of `config` (cached; read-only). A config of one scan that
        does not accept, as most are, has its scan's mask: no entry of its own."""
        sets = config.sets
        if len(sets) == 1 and not config.accepting:
            return self._scan_mask(sets[0], config.states[0])
        key = ("mask", config.number)
        found = self.cache.get(key)
        if found is None:
            found = self.eos_mask.copy() if config.accepting else np.zeros(self.words, dtype=np.int32)
            for earley_set, state in zip(sets, config.states, strict=True):
                found |= self._scan_mask(earley_set, state)
            found.flags.writeable = False
            self.cache.put(key, found, 0, (found,))
        return found

    def pack(self, allowed: np.ndarray) -> np.ndarray:
        packed = np.packbits(allowed, bitorder="little")
        out = np.zeros(self.words * 4, dtype=np.uint8)
        out[: len(packed)] = packed
        return out.view(np.int32)

    def longest_token_at(self, data: bytes, start: int) -> tuple[int, int]:
        """The longest text token that `data[start:]` begins with, and its length ((-1, 0) if none)."""
        trie, index = self.trie, self._index
        node, best = 0, (-1, 0)
        for length, byte in enumerate(data[start:], 1):
            lo, hi = int(index.first_child[node]), int(index.child_end[node])
            i = lo + int(np.searchsorted(trie.byte[lo:hi], byte))
            if i >= hi or trie.byte[i] != byte:
                break
            node = i
            if trie.node_end_count[node]:
                best = (int(trie.sorted_tokens[trie.node_lo[node]]), length)
        return best

    # -- per scan ---------------------------------------------------------------------------------

    def _scan_mask(self, earley_set: EarleySet, state: int) -> np.ndarray:
        """The packed mask of the tokens one scan allows (cached per scan; read-only). Inside a
        lexeme (no split node, no token terminal), as most scans are, it is the walk's mask
        whatever the set: no abstract set is looked for, and no second entry made."""
        key = ("scan", earley_set.number, state)
        found = self.cache.get(key)
        if found is not None:
            return found
        walk = self.walk(state)
        if not walk.splits and not (state == earley_set.lex_start and earley_set.tokens):
            self.cache.put(key, walk.alive, 0, (walk.alive,))
            return walk.alive
        found, unsure = self._abstract_scan(self._shared_form(earley_set), state, walk)
        if not unsure.empty:  # decide what the abstract set could not, from the concrete one
            found = found.copy()
            for splits in unsure.splits:
                self._check_splits(earley_set, splits, found, shared=False)
            if unsure.tokens.size:
                ok, _ = self._after_lexeme(earley_set, unsure.tokens, unsure.offsets, unsure.states)
                _set_bits(found, unsure.tokens[ok])
            found.flags.writeable = False
        self.cache.put(key, found, 0, (found,))
        return found

    def _shared_form(self, earley_set: EarleySet) -> EarleySet:
        """The set to compute a scan from: its abstract set once a second concrete set has the
        same one (a deeper level of the same structure), the set itself before. The abstract set
        is shared by every depth, but what it cannot see is checked again from the concrete set:
        work wasted at a position reached only once, as most positions of a document are."""
        items = self.parser.abstract_items(earley_set)
        if items is None:
            return earley_set
        key = ("first", hash((items, earley_set.tainted)))  # a collision only shares sooner
        first = self.cache.get(key)
        if first is None:
            self.cache.put(key, earley_set.number)
            return earley_set
        return earley_set if first == earley_set.number else self.parser.abstract(earley_set, items)

    def _abstract_scan(self, abstract: EarleySet, state: int, walk: TokenWalk) -> tuple[np.ndarray, _Unsure]:
        """The mask of a scan from an abstract set, and what it is unsure of (`walk` is `state`'s)."""
        key = ("abstract", abstract.number, state)
        found = self.cache.get(key)
        if found is not None:  # a mask alone when nothing is unsure, as most are (see below)
            if isinstance(found, np.ndarray):
                return found, _SURE
            return found[0], _Unsure(_splits_of(found[4:]), found[1], found[2], found[3])
        packed = walk.alive.copy()  # (a walk with a split node or a token terminal: see `_scan_mask`)
        unsure = _merge([self._check_splits(abstract, splits, packed, shared=True) for splits in walk.splits], packed)
        if state == abstract.lex_start and abstract.tokens:
            _set_bits(packed, np.fromiter(abstract.tokens, dtype=np.int64))
        packed.flags.writeable = False
        # The array alone when nothing is unsure, as most are; else the mask, the unsure tokens,
        # offsets and states, and the unsure splits, flat (see `Splits`).
        stored = packed if unsure is _SURE else (packed, *unsure[1:], *_flat(unsure.splits))
        self.cache.put(key, stored, unsure.nbytes, (packed,))
        return packed, unsure

    def _check_splits(self, earley_set: EarleySet, splits: Splits, packed: np.ndarray, *, shared: bool) -> _Unsure:
        """Set in `packed` the tokens below split nodes whose remaining bytes can follow at
        `earley_set`; return what is unsure (from a concrete set without `shared`: nothing)."""
        unsure_nodes, unsure_tokens = [], []
        for state, group in self._by_accepted(splits):
            allowed, node_doubt, tokens, offsets = self._split_group(earley_set, splits.trie, state, group, shared)
            _set_bits(packed, allowed)
            if node_doubt:
                unsure_nodes.append((group, state))
            if tokens.size:
                unsure_tokens.append((tokens, offsets, state))
        if not unsure_nodes and not unsure_tokens:
            return _SURE
        doubted: tuple[Splits, ...] = ()
        if unsure_nodes:
            nodes = np.concatenate([g for g, _ in unsure_nodes])
            states = np.concatenate([np.full(len(g), s) for g, s in unsure_nodes])
            doubted = (Splits(splits.trie, nodes, states),)
        if not unsure_tokens:
            return _Unsure(doubted, _EMPTY, _EMPTY, _EMPTY)
        return _Unsure(
            doubted,
            np.concatenate([t for t, _, _ in unsure_tokens]),
            np.concatenate([o for _, o, _ in unsure_tokens]),
            np.concatenate([np.full(len(t), s) for t, _, s in unsure_tokens]),
        )

    def _split_group(
        self, earley_set: EarleySet, trie: int, state: int, group: np.ndarray, shared: bool
    ) -> tuple[np.ndarray, bool, np.ndarray, np.ndarray]:
        """For split nodes `group`, all where `state`'s lexemes end: the tokens below them that can
        follow at `earley_set`, whether the concrete set may allow more below the nodes, and the
        single tokens (with their split offsets) rejected only past the placeholder.

        Cached by the nodes themselves, not by the lexer state that reached them: every position
        inside a long lexeme (a string under `maxLength`, say) reaches the same split nodes, and
        what follows a split depends only on the bytes below it. Children of a split node whose
        byte cannot start a lexeme after the split are dropped with their subtree first."""
        made = self.parser.complete(earley_set, self.lexer.accepts(state))
        digest = hashlib.blake2b(group.tobytes(), digest_size=16).digest()
        key = ("splits", made.number, trie, digest, shared)
        found = self.cache.get(key)
        if found is not None:
            return found
        below = self._below_splits(made.lex_start, trie, group, digest)
        tokens, offsets = below.tokens, below.offsets
        ok, unsure = self._valid_after(
            [made], np.zeros(len(tokens), dtype=np.int64), tokens, offsets, below.crossing, shared
        )
        doubt = unsure & ~ok
        found = (tokens[ok], made.tainted and not below.all_live, tokens[doubt], offsets[doubt])
        self.cache.put(key, found, sum(a.nbytes for a in (found[0], found[2], found[3])))
        return found

    def _below_splits(self, start: int, trie: int, group: np.ndarray, digest: bytes) -> _Below:
        """The tokens below split nodes `group` whose next byte can begin a lexeme at lexer start
        state `start`, and how their next lexeme goes (cached: this depends on the lexer only, so
        every Earley set that expects the same lexemes after the same split nodes shares it, as
        the string values of different properties do)."""
        key = ("below", start, trie, digest)
        found = self.cache.get(key)
        if found is not None:
            return _Below(found[0], found[1], found[2], _Crossing._make(found[3:]))
        index = self._tries[trie]
        bounds, _ = self.lexer.starts_by_byte(start)
        if kernels.AVAILABLE:
            tokens, offsets, all_live = kernels.tokens_below(
                group, index.first_child, index.child_end, index.byte, index.end_lo, index.below_hi,
                index.trie.depth, index.trie.sorted_tokens, bounds,
            )  # fmt: skip
            if len(tokens) >= _MANY_BELOW:
                crossing = self._cross_below(start, index, group, tokens)
                if crossing is not None:
                    found = _Below(tokens, offsets, all_live, crossing)
                    self.cache.put(key, (*found[:3], *crossing), found.nbytes)  # flat (see `Splits`)
                    return found
        else:
            lo = index.first_child[group]
            children = _spans(lo, index.child_end[group] - lo)
            first = index.byte[children].astype(np.int64)
            live = bounds[first + 1] > bounds[first]
            kept = children[live]
            lo, hi = index.end_lo[kept], index.below_hi[kept]
            tokens = self._tokens_in(index.trie, lo, hi)
            offsets = np.repeat(index.trie.depth[kept].astype(np.int64) - 1, hi - lo)
            all_live = bool(live.all())
        found = _Below(tokens, offsets, all_live, self._cross(start, tokens, offsets))
        self.cache.put(key, (*found[:3], *found.crossing), found.nbytes)  # flat (see `Splits`)
        return found

    def _cross_below(self, start: int, index: TrieIndex, group: np.ndarray, tokens: np.ndarray) -> _Crossing | None:
        """`_cross` for `tokens`, all the tokens below split nodes `group` whose next byte can
        begin a lexeme at lexer start state `start`, by walking the trie below the nodes from
        each of those lexemes' start states: tokens share the steps of their common prefixes, and
        a subtree inside a lexeme is taken whole. Below a space, most of a vocabulary's tokens go
        on into the next lexeme (a C identifier), and stepping each of them on its own took
        milliseconds. None where the nodes are nested (some tokens are then below two of them)."""
        lexer, trie, pre = self.lexer, index.trie, index.preorder
        lo = index.first_child[group]
        children = _spans(lo, index.child_end[group] - lo)
        bounds, starts = lexer.starts_by_byte(start)
        first = index.byte[children].astype(np.int64)
        children = children[bounds[first + 1] > bounds[first]]  # in `tokens`' order
        first_rank, last_rank = index.end_lo[children], index.below_hi[children]
        order = np.argsort(first_rank, kind="stable")
        if (first_rank[order[1:]] < last_rank[order[:-1]]).any():
            return None
        sizes = last_rank - first_rank
        at_rank = np.cumsum(sizes) - sizes  # where each child's tokens begin in `tokens`
        singles = np.unique(starts)
        frontier = np.repeat(pre.position[group].astype(np.int64), len(singles))
        alive, nodes, ended = self._walk_below(index, frontier, np.tile(singles, len(group)).astype(np.int32))
        ok = _has_bits(alive.view(np.int32), tokens)
        # Where a lexeme ends at node m and a child's byte can begin a next one, every token from
        # that child on goes on after m (as `_cross` finds it token by token).
        lo = index.first_child[nodes]
        counts = index.child_end[nodes] - lo
        below = _spans(lo, counts)
        owner = np.repeat(np.arange(len(nodes)), counts)
        can = lexer.follows[lexer.boundary[ended[owner]], index.byte[below]]
        below, owner = below[can], owner[can]
        spans = index.below_hi[below] - index.end_lo[below]
        ranks = _spans(index.end_lo[below], spans)
        owner = np.repeat(owner, spans)
        child = order[np.searchsorted(first_rank[order], ranks, side="right") - 1]
        entry = at_rank[child] + ranks - first_rank[child]
        after = trie.depth[nodes[owner]].astype(np.int64)
        return _Crossing(ok, ~ok, entry, after, ended[owner])

    def _by_accepted(self, splits: Splits) -> list[tuple[int, np.ndarray]]:
        """Split nodes grouped by the lexemes their states accept: one state of each group and the
        group's nodes. What follows the end of a lexeme depends only on which lexemes ended, and
        many lexer states (every count inside a bounded repeat) end the same ones."""
        states = splits.states
        if len(states) > 1:
            first, inverse = _groups(self.lexer.accept_class[states])
            if len(first) > 1:
                return [(int(states[i]), splits.nodes[inverse == j]) for j, i in enumerate(first.tolist())]
        return [(int(states[0]), splits.nodes)]  # one group, as most are: no copy

    def walk(self, state: int) -> TokenWalk:
        """What lexer state `state` does to every text token (cached).

        When every text of a JSON-string slice keeps the lexer alive from `state`, the slice's
        tokens are all alive: their mask is OR-ed in and only the other tokens are walked."""
        key = ("walk", state)
        found = self.cache.get(key)
        if isinstance(found, np.ndarray):
            return TokenWalk(found, ())
        if found is not None:
            return TokenWalk(found[0], _splits_of(found[1:]))
        pairs = self.lexer.pairs(state)
        if len(pairs) > 1:
            walk = self._union_walk(pairs)
        elif pairs:
            walk = self._lexeme_walk(state, *pairs[0])
        else:  # the dead state
            walk = self._computed_walk(state)
        # A walk without splits (inside a lexeme, most of them) is kept as its mask alone.
        self.cache.put(key, (walk.alive, *_flat(walk.splits)) if walk.splits else walk.alive, 0, walk.arrays)
        return walk

    def _lexeme_walk(self, state: int, terminal: int, dfa_state: int) -> TokenWalk:
        """The walk of `state`, where lexeme `terminal` alone is alive, in state `dfa_state` of its
        DFA. It depends on the strings that can follow that state and the bytes that may follow
        the lexeme, not on the grammar nor the lexeme: the vocabulary's tables keep it for every
        state with the same residual (`Lexer.residual_key`), in every grammar.

        They keep the split nodes alone. What a split does next depends only on the lexemes that
        end there (see `Splits`), here lexeme `terminal` alone, in any of its accepting states."""
        base = self.lexer.single(terminal, 0)  # (lays the block, which the walk would do anyway)
        key = (*self.lexer.residual_key(terminal, dfa_state), state != base + dfa_state)
        shared = self.tables.walks
        found = shared.get(key)
        if found is not None:  # the alive mask, then each split's trie and nodes
            if len(found) == 1:  # no split (a lexeme that accepts nothing has none)
                return TokenWalk(found[0], ())
            ended = base + int(self.parser.dfa(terminal).accepting_states[0])
            splits = tuple(
                Splits(found[i], found[i + 1], np.full(len(found[i + 1]), ended, dtype=np.int32))
                for i in range(1, len(found), 2)
            )
            return TokenWalk(found[0], splits)
        walk = self._computed_walk(state)
        local = tuple(item for s in walk.splits for item in (s.trie, s.nodes))
        shared.put(key, (walk.alive, *local), walk.alive.nbytes + sum(s.nodes.nbytes for s in walk.splits))
        return walk

    def _computed_walk(self, state: int) -> TokenWalk:
        """The walk of `state` over the trie, or over the rest of the widest JSON-string slice
        whose every text keeps the lexer alive from it (the slice's mask OR-ed in)."""
        widest = self._widest_slice(state)
        if widest is not None:
            walk = self._walk(state, widest + 1)
            walk = TokenWalk(walk.alive | self.tables.json_string[widest].mask, walk.splits)
            walk.alive.flags.writeable = False
        else:
            walk = self._walk(state, 0)
        self.walks_computed += 1
        return walk

    def _union_walk(self, pairs: tuple[tuple[int, int], ...]) -> TokenWalk:
        """The walk of a state where several lexemes are alive, from each lexeme's own walk: a
        token keeps the union alive when it keeps one lexeme alive, and a lexeme that ends inside
        a token is a split whatever the others do. No row of the combined state is needed, and
        each lexeme's walk is shared by every combination it takes part in."""
        parts = [self.walk(self.lexer.single(k, s)) for k, s in pairs]
        alive = parts[0].alive.copy()
        for part in parts[1:]:
            alive |= part.alive
        alive.flags.writeable = False
        return TokenWalk(alive, tuple(splits for part in parts for splits in part.splits))

    def _widest_slice(self, state: int) -> int | None:
        """The widest JSON-string slice whose every text keeps the lexer alive from `state` (its
        position in `VocabTables.json_string`)."""
        slices = self.tables.json_string
        step = self.lexer.step  # in place: a row copied out for a few bytes costs more than them
        if not all(step(state, b) for b in slices[0].probe):  # most states fail on a common byte
            return None
        limit = slices[1].max_len or 0
        table = slices[0].dfa.transitions
        if kernels.AVAILABLE:
            missing = np.empty(_SLICE_ROWS, dtype=np.int64)
            rows = _SLICE_ROWS  # lexer rows the search may have computed: it proves less without them
            while True:
                lexer = self.lexer
                with lexer.lock:  # no thread writes the lexer while the kernel reads it (`Lexer._grow`)
                    depth, n = kernels.slice_depth(
                        state, limit, table, lexer.table, lexer.expanded, _SLICE_PAIRS, missing
                    )
                if not n or rows <= 0:
                    break
                lexer.ensure(missing[:n])
                rows -= n
        else:
            depth = self._slice_depth_numpy(state, limit)
        if depth > limit:
            return 0
        return next((i for i in range(1, len(slices)) if (slices[i].max_len or 0) <= depth), None)

    def _slice_depth_numpy(self, state: int, limit: int) -> int:
        """`kernels.slice_depth` with the lexer's rows, one gather per pair (fewer pairs allowed)."""
        token_slice, lexer = self.tables.json_string[0], self.lexer
        transitions = token_slice.dfa.transitions
        seen = {(1, state)}
        level = [(1, state)]
        for depth in range(limit):
            following = []
            for p, q in level:
                data = token_slice.next_bytes[p]
                after = lexer.gather(np.full(len(data), q, dtype=np.int32), data)
                if not after.all():
                    return depth
                for pair in set(zip(transitions[p, data].tolist(), after.tolist(), strict=True)):
                    if pair not in seen:
                        if len(seen) >= _SLICE_PAIRS_NUMPY:
                            return depth
                        seen.add(pair)
                        following.append(pair)
            if not following:
                return limit + 1
            level = following
        return limit

    def _walk(self, start: int, trie: int) -> TokenWalk:
        """Step every node's prefix of trie number `trie` (see `Splits`) through the lexer
        (compiled when numba is installed, with numpy otherwise)."""
        if kernels.AVAILABLE:
            return self._walk_compiled(start, trie)
        return self._walk_numpy(start, trie)

    def _walk_compiled(self, start: int, trie: int) -> TokenWalk:
        index = self._tries[trie]
        alive, nodes, states = self._walk_below(index, np.zeros(1, dtype=np.int64), np.array([start], dtype=np.int32))
        packed = alive.view(np.int32)
        packed.flags.writeable = False
        return TokenWalk(packed, (Splits(trie, nodes, states),) if len(nodes) else ())

    def _walk_below(
        self, index: TrieIndex, frontier: np.ndarray, frontier_state: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The compiled walk of `index`'s trie below preorder positions `frontier`, whose prefixes
        left the lexer in `frontier_state`: the packed (uint32) mask of the tokens alive to their
        end, and the split nodes with their lexer states (`kernels.walk_trie`)."""
        lexer, trie, pre = self.lexer, index.trie, index.preorder
        split_nodes, split_states, pending, pending_state, stack = _walk_space.get(trie.n_nodes)
        alive = np.zeros(self.words, dtype=np.uint32)
        count = 0
        while True:
            lexer.ensure(frontier_state)  # rows the walk needs: compute them, walk on from there
            with lexer.lock:  # no thread writes the lexer while the kernel reads it (`Lexer._grow`)
                count, n_pending = kernels.walk_trie(
                    frontier, frontier_state, lexer.table, lexer.expanded, lexer.boundary, lexer.follows,
                    lexer.loops, lexer.loop_classes, pre.node, pre.record, pre.token, pre.end_lo, pre.end_hi,
                    pre.below_hi, pre.below_bytes, pre.root_children, pre.root_bytes, trie.sorted_tokens, alive,
                    split_nodes, split_states, count, pending, pending_state, stack,
                )  # fmt: skip
            if not n_pending:
                break
            frontier, frontier_state = pending[:n_pending].copy(), pending_state[:n_pending].copy()
        return alive, split_nodes[:count].copy(), split_states[:count].copy()

    def _walk_numpy(self, start: int, trie: int) -> TokenWalk:
        """Step every node's prefix of a trie through the lexer, one level at a time.

        A level is computed sparsely (only the children of live nodes) when few nodes are live,
        densely (one gather over the whole level) otherwise; the dead state maps to itself.
        """
        index, lexer = self._tries[trie], self.lexer
        bounds = index.trie.depth_start
        node_state = np.zeros(index.trie.n_nodes + 1, dtype=np.int32)  # the extra node: "no node", always dead
        node_state[0] = start
        frontier = np.zeros(1, dtype=np.int64)
        frontier_state = node_state[:1]
        live_nodes: list[np.ndarray | None] = []
        dense = False
        for depth in range(1, len(bounds) - 1):
            level_lo, level_hi = int(bounds[depth]), int(bounds[depth + 1])
            if depth == index.tail_depth:
                above = int(bounds[depth - 1])
                frontier = np.flatnonzero(node_state[above:level_lo]) + above
                live_nodes.append(self._walk_tail(index, frontier, node_state))
                break
            if not dense:
                lo, hi = index.first_child[frontier], index.child_end[frontier]
                counts = hi - lo
                total = int(counts.sum())
                if total == 0:
                    break
                dense = 3 * total > level_hi - level_lo
            if dense:
                states = lexer.gather(node_state[index.parent[level_lo:level_hi]], index.byte[level_lo:level_hi])
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
                children = _spans(lo, counts)
                states = lexer.gather(np.repeat(frontier_state, counts), index.byte[children])
                live = states != 0
                frontier, frontier_state = children[live], states[live]
                node_state[frontier] = frontier_state
            live_nodes.append(frontier)
        boundary = lexer.boundary
        listed = [n for n in live_nodes if n is not None]
        if len(listed) < len(live_nodes):  # a large level was dense: read the whole trie
            alive = self.pack(node_state[index.token_node] != 0)
            nodes = np.flatnonzero((boundary[node_state[:-1]] != 0) & index.has_below)
        else:
            nodes = np.concatenate(listed) if listed else np.zeros(0, dtype=np.int64)
            alive = np.zeros(self.words, dtype=np.int32)
            _set_bits(alive, self._tokens_in(index.trie, index.end_lo[nodes], index.end_hi[nodes]))
            nodes = nodes[(boundary[node_state[nodes]] != 0) & index.has_below[nodes]]
        nodes = nodes[nodes > 0]
        if nodes.size:  # a split only where a child's byte can begin a next lexeme
            lo = index.first_child[nodes]
            counts = index.child_end[nodes] - lo  # at least one: the nodes have tokens below
            children = _spans(lo, counts)
            can = lexer.follows[np.repeat(boundary[node_state[nodes]], counts), index.byte[children]]
            nodes = nodes[np.logical_or.reduceat(can, np.cumsum(counts) - counts)]
        alive.flags.writeable = False
        return TokenWalk(alive, (Splits(trie, nodes, node_state[nodes]),) if nodes.size else ())

    def _walk_tail(self, index: TrieIndex, frontier: np.ndarray, node_state: np.ndarray) -> np.ndarray:
        """Walk the subtrees below `frontier` depth first in Python (they are small); fill in
        `node_state` and return their live nodes."""
        row = self.lexer.row
        base = index.tail_base
        first_child, child_end, edge = index.tail_first_child, index.tail_child_end, index.tail_byte
        nodes: list[int] = []
        states: list[int] = []
        stack = list(zip(frontier.tolist(), node_state[frontier].tolist(), strict=True))
        while stack:
            node, state = stack.pop()
            successors = row(state)
            for child in range(first_child[node - base], child_end[node - base]):
                after = successors[edge[child - base]]
                if after:
                    nodes.append(child)
                    states.append(after)
                    stack.append((child, after))
        live = np.array(nodes, dtype=np.int64)
        node_state[live] = states
        return live

    @staticmethod
    def _tokens_in(trie: TokenTrie, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The tokens of `trie.sorted_tokens[lo[i]:hi[i]]` for all i, concatenated."""
        return trie.sorted_tokens[_spans(lo, hi - lo)].astype(np.int64)

    # -- across lexeme boundaries -----------------------------------------------------------------

    def _after_lexeme(
        self, earley_set: EarleySet, tokens: np.ndarray, offsets: np.ndarray, states: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """For each token, whether its bytes from `offset` on can follow once the lexeme that
        started at `earley_set` ends in lexer state `state`; and, for the rejected ones, whether
        the rejection is unsure (it happened past a completion into the placeholder)."""
        sets, which = self._complete_each([earley_set], np.zeros(len(tokens), dtype=np.int64), states)
        return self._valid_after(sets, which, tokens, offsets)

    def _complete_each(
        self, sets: list[EarleySet], which: np.ndarray, states: np.ndarray
    ) -> tuple[list[EarleySet], np.ndarray]:
        """The sets made where lexemes that started at `sets[which[i]]` end in lexer state
        `states[i]`: as distinct sets, and the index of each i's. What follows depends only on
        which lexemes ended, and many lexer states end the same ones."""
        first, inverse = _groups(which << 32 | self.lexer.accept_class[states])
        accepts = self.lexer.accepts
        made = [self.parser.complete(sets[int(which[i])], accepts(int(states[i]))) for i in first.tolist()]
        return made, inverse

    def _valid_after(
        self,
        sets: list[EarleySet],
        which: np.ndarray,
        tokens: np.ndarray,
        offsets: np.ndarray,
        crossing: _Crossing | None = None,
        shared: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Whether each token's bytes from its offset can follow at the fresh lexeme boundary
        `sets[which[i]]`, and whether a rejection is unsure.

        Level by level, every token at once: its next lexeme is stepped from each expected lexeme
        its next byte can begin (`Lexer.starts_by_byte`: text is valid after a boundary when it is
        valid for one of the lexemes expected there, so the steps stay in single-lexeme blocks and
        no row of several lexemes is built); where a lexeme ends before the token does, the parser
        completes it and the rest goes on to the next level. One step pass per level, however
        many Earley sets the tokens have reached. `crossing` is the first level's, when known.

        `shared`: from `_SHARED_LEVEL` lexemes into the tokens on, go on from the abstract sets of
        the sets completed. A token made of one character repeated (a run of `-` where each is a
        unary minus) reaches a new depth with every lexeme, and every depth would be a new set; the
        abstract sets of those depths are one, so its completions are cached after the first. A
        rejection past the placeholder is unsure, as for any abstract set: a caller that cannot
        check the unsure ones again (from the concrete set) passes False."""
        if crossing is not None and len(sets) == 1 and not crossing.entry.size:  # one level, as most are
            return crossing.ok, crossing.died & sets[0].tainted
        n = len(tokens)
        ok = np.zeros(n, dtype=bool)
        unsure = np.zeros(n, dtype=bool)
        root = np.arange(n)  # each entry's token, as a position in `tokens`
        level = 1
        while root.size:
            if crossing is None:
                crossing = self._cross_from(sets, which, tokens[root], offsets)
            ok[root[crossing.ok]] = True
            tainted = np.array([s.tainted for s in sets])[which]
            unsure[root[crossing.died & tainted]] = True  # every lexeme died past the placeholder
            going = ~ok[root[crossing.entry]]  # a token already allowed needs no other way through
            if not going.any():
                break
            sets, which = self._complete_each(sets, which[crossing.entry[going]], crossing.ended[going])
            level += 1
            if shared and level >= _SHARED_LEVEL:
                sets = [self.parser.abstract(s) for s in sets]
            root, offsets = root[crossing.entry[going]], crossing.after[going]
            crossing = None
            if len(root) <= (_FEW_GOING if level >= _SHARED_LEVEL else _FEW_SOON):
                token_bytes = self.vocab.token_bytes
                rests = zip(root.tolist(), which.tolist(), offsets.tolist(), strict=True)
                for j, i, offset in rests:
                    if not ok[j]:
                        rest = token_bytes[int(tokens[j])][offset:]
                        ok[j], doubt = run(self._rest(sets[i], rest, min(level, _SHARED_LEVEL) if shared else 0))
                        unsure[j] |= doubt
                break
        return ok, unsure

    def _rest(self, earley_set: EarleySet, data: bytes, level: int) -> Walk[tuple[bool, bool]]:
        """Whether `data` can follow at the fresh lexeme boundary `earley_set`, and whether a
        rejection is unsure: `_valid_after` for one token's rest, lexeme by lexeme, depth first
        (from `level` on, counted as in `_valid_after`, with the abstract sets of what it
        completes once it reaches `_SHARED_LEVEL`; 0: never).

        A token far into a run of lexemes (64 `-`, each a unary minus, in C) makes a level of
        `_valid_after` per lexeme, each a dozen numpy calls for a few tokens; here a lexeme costs a
        few byte steps. Each (set, rest) is decided once and cached, and the tokens of a run share
        their rests: `-` × 64 from the abstract set of a unary minus is decided once for every
        longer run that reaches it."""
        key = ("rest", earley_set.number, data, level)
        found = self.cache.get(key)
        if found is not None:
            return found
        lexer, parser = self.lexer, self.parser
        bounds, starts = lexer.starts_by_byte(earley_set.lex_start)
        ok = unsure = False
        died = 0
        for start in starts[bounds[data[0]] : bounds[data[0] + 1]].tolist():
            state = start
            for i, byte in enumerate(data, 1):
                state = lexer.step(state, byte)
                if not state:
                    died += 1
                    break
                if i == len(data):
                    ok = True
                    break
                if lexer.may_end_before(state, data[i]):
                    made = parser.complete(earley_set, lexer.accepts(state))
                    deeper = min(level + 1, _SHARED_LEVEL) if level else 0
                    made = parser.abstract(made) if deeper >= _SHARED_LEVEL else made
                    ok, doubt = yield self._rest(made, data[i:], deeper)
                    unsure |= doubt
                    if ok:
                        break
            if ok:
                break
        # every lexeme died past the placeholder (there may be none that could start)
        unsure = not ok and (unsure or (earley_set.tainted and died == bounds[data[0] + 1] - bounds[data[0]]))
        return self.cache.put(key, (ok, unsure), len(data))

    def _cross(self, start: int, tokens: np.ndarray, offsets: np.ndarray) -> _Crossing:
        """`_cross_from` for entries that all start at lexer start state `start`."""
        bounds, starts = self.lexer.starts_by_byte(start)
        return self._cross_starts(np.zeros(len(tokens), dtype=np.int64), bounds[None, :], starts, tokens, offsets)

    def _cross_from(
        self, sets: list[EarleySet], which: np.ndarray, tokens: np.ndarray, offsets: np.ndarray
    ) -> _Crossing:
        """How each token's next lexeme goes from its offset, at the lexeme boundary
        `sets[which[i]]`: stepped from each expected lexeme its next byte can begin."""
        if len(sets) == 1:
            return self._cross(sets[0].lex_start, tokens, offsets)
        parts = [self.lexer.starts_by_byte(s.lex_start) for s in sets]
        base = np.cumsum([0] + [len(starts) for _, starts in parts[:-1]])
        bounds = np.stack([bounds for bounds, _ in parts]) + base[:, None]
        return self._cross_starts(which, bounds, np.concatenate([starts for _, starts in parts]), tokens, offsets)

    def _cross_starts(
        self, which: np.ndarray, bounds: np.ndarray, starts: np.ndarray, tokens: np.ndarray, offsets: np.ndarray
    ) -> _Crossing:
        """Step each token from the start states of the lexemes its next byte `b` can begin, one
        by one: `starts[bounds[which[i], b] : bounds[which[i], b + 1]]` (compiled when numba is
        installed, with numpy otherwise)."""
        trie, lexer = self.trie, self.lexer
        if kernels.AVAILABLE:
            while True:
                with lexer.lock:  # no thread writes the lexer while the kernel reads it (`Lexer._grow`)
                    *found, missing = kernels.cross_tokens(
                        tokens, offsets, which, bounds, starts, lexer.table, lexer.expanded, lexer.boundary,
                        lexer.follows, trie.flat_bytes, trie.token_start, trie.token_len,
                    )  # fmt: skip
                if not missing.size:
                    return _Crossing(*found)
                lexer.ensure(missing)  # rows the steps need: compute them and step again
        first = trie.flat_bytes[trie.token_start[tokens] + offsets].astype(np.int64)
        lo = bounds[which, first]
        counts = bounds[which, first + 1] - lo
        owner = np.repeat(np.arange(len(tokens)), counts)
        states = starts[_spans(lo, counts)]
        ok_each, died_each, (index, after, ended) = self._step_numpy(tokens[owner], offsets[owner], states)
        ok = np.zeros(len(tokens), dtype=bool)
        ok[owner[ok_each]] = True
        died = np.bincount(owner[died_each], minlength=len(tokens)) == counts
        return _Crossing(ok, died, owner[index], after, ended)

    def _step_numpy(
        self, tokens: np.ndarray, offsets: np.ndarray, states: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Step each token's bytes from its offset through the lexer from `states[i]`: whether the
        lexer stays alive to its end, whether it dies on the way, and every position before the
        end where a lexeme is complete, as (entry, position after the lexeme, lexer state there)."""
        trie, lexer = self.trie, self.lexer
        ok = np.zeros(len(tokens), dtype=bool)
        died = np.zeros(len(tokens), dtype=bool)
        splits: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        index = np.arange(len(tokens))
        starts = trie.token_start[tokens]
        ends = trie.token_len[tokens].astype(np.int64)
        position = offsets.astype(np.int64)
        state = states
        while index.size:
            state = lexer.gather(state, trie.flat_bytes[starts[index] + position])
            live = state != 0
            died[index[~live]] = True
            index, state, position = index[live], state[live], position[live] + 1
            finished = position == ends[index]
            ok[index[finished]] = True
            rows = lexer.boundary[state]
            split = ~finished & (rows != 0)
            split[split] = lexer.follows[rows[split], trie.flat_bytes[starts[index[split]] + position[split]]]
            if split.any():
                splits.append((index[split], position[split], state[split]))
            index, state, position = index[~finished], state[~finished], position[~finished]
        if not splits:
            return ok, died, (_EMPTY, _EMPTY, np.zeros(0, dtype=np.int32))
        entries, after, ended = (np.concatenate(parts) for parts in zip(*splits, strict=True))
        return ok, died, (entries, after, ended)
