"""`compile_regex`: regex syntax tree → trim `ByteDFA`, with size limits and a cache.

Pipeline: Thompson NFA over characters, built backwards so that equal subtrees before equal
continuations are built once (`nfa`) → the alphabet of atoms its classes distinguish
(`alphabet`) → subset construction over atoms, with state sets and atom sets as int bitsets
(`determinise`) → Hopcroft minimisation (`minimise`), where the subset automaton may not be trim
→ UTF-8 byte tries, hash-consed (`expand`). Working over characters rather than bytes keeps the
automata that are determinised and minimised small: a character class costs one column however
many UTF-8 byte ranges it spans. Character states are numbered breadth first from the start, each
state's targets taken by lowest code point, and byte states follow them.

A difference `left − right` (`rx.Difference`: the keys an object may add, "any string but the
declared names") alone is the product of the two sides' cached DFAs (`subtract`): the string body
on the left is compiled once per process, not once per object, and a right side of a few words
(the declared names) is paired as their trie (`subtract_words`). Where that product would be too
large, or inside a larger tree, it goes through the pipeline once, over an NFA of both sides whose
subset states accept where `left` ends and `right` does not, and a tree lays that minimal character
DFA into its own NFA as states.

More shortcuts skip that pipeline, since most lexemes of a JSON grammar are chains: a run of
ASCII classes is a chain of states built directly, a concatenation whose parts cannot run into
each other is joined from the parts' cached DFAs (`concat`), once `(ws X)? ws` is rewritten as
`ws (X ws)?` (an optional member before `ws }`; likewise `(ws X)* ws`, the further items before
`ws ]`), repeats are built from the item's DFA (`repeat`): a closed item (one string character)
as copies of its table in a row, `X?` and `X+` from `X`'s table, and an alternation whose branches
begin with different bytes (once a beginning they all share is taken out: `{ ws` of an empty
object or one with members) from the branches' tables side by side (`union`). Their results, like
a difference's product, are exact and trim, though a join, an optional or a union is not always
minimal. Where a shortcut fails on a piece it made that is too large
for the pipeline, it gives up, and the pipeline builds the whole lexeme once.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from functools import lru_cache
from itertools import groupby

import numpy as np

from grammask.automata.alphabet import alphabet_of
from grammask.automata.concat import concat_dfas
from grammask.automata.determinise import determinise
from grammask.automata.dfa import START, ByteDFA, Chain, state_type
from grammask.automata.expand import expand_utf8
from grammask.automata.minimise import minimise
from grammask.automata.nfa import CharDFA, NFABuilder
from grammask.automata.repeat import chain_dfa, optional_dfa, plus_dfa
from grammask.automata.subtract import subtract_dfas, subtract_words
from grammask.automata.union import union_dfas
from grammask.automata.utf8 import utf8_sequences
from grammask.collector import paused
from grammask.errors import GrammarError
from grammask.ir import regex as rx
from grammask.limits import DEFAULT_LIMITS, Limits, check_deadline, deadline
from grammask.lru import LRUCache

__all__ = ["compile_regex"]

#: Bytes of DFA tables the process-wide cache of compiled lexemes keeps. The median lexeme's
#: table is about 50 KiB (16-bit states), and a string of up to 128 characters takes 1.5 MiB: over
#: every 5th MaskBench file, with tables twice as large, building DFAs again after they were
#: evicted took 5.4 s of 69 s of compiles with 64 MiB, 2.8 s of 65 s with 128 MiB.
_CACHE_BYTES = 128 * 2**20

#: The unminimised subset automaton may exceed the state limit by this factor before compilation
#: stops: minimisation often shrinks it back under the limit.
_SUBSET_SLACK = 2


def compile_regex(node: rx.RegexNode, *, limits: Limits = DEFAULT_LIMITS) -> ByteDFA:
    """A trim DFA accepting exactly the UTF-8 encodings of the strings `node` matches: minimal
    for a difference, close to minimal otherwise (see `_char_dfa` and the shortcuts).

    Raises `GrammarError` when the tree (bounded repeats expanded) is over `limits.max_regex_size`,
    or the automaton needs more than `limits.max_dfa_states` states. Results are cached by the
    tree's number (`rx.ident`: the trees themselves would stay alive for every full garbage
    collection to scan), least recently used out first, within 128 MiB of tables.
    """
    key = (rx.ident(node), limits.max_regex_size, limits.max_dfa_states)
    found = _cache.get(key)
    if found is None:
        found = _compile(node, limits)
        _cache.put(key, found, found.nbytes)
    return found


#: Lexeme DFAs by regex, shared by every grammar in the process (one JSON string lexeme, say).
_cache = LRUCache(budget=_CACHE_BYTES)


def _compile(node: rx.RegexNode, limits: Limits) -> ByteDFA:
    # Compiling allocates many small containers and frees them all at the end: the collector's
    # passes over the heap meanwhile were 10-20% of the time (`paused`).
    with paused(), deadline(limits):
        return _build(node, limits)


def _is_ascii(node: rx.RegexNode) -> bool:
    return isinstance(node, rx.CharClass) and bool(node.ranges) and node.ranges[-1][1] < 0x80


def _ascii_chain(classes: Sequence[rx.RegexNode]) -> ByteDFA:
    """One character of each ASCII class in turn: a chain of states, nothing to determinise."""
    transitions = np.zeros((len(classes) + 2, 256), dtype=state_type(len(classes) + 2))
    for i, node in enumerate(classes, start=START):
        assert isinstance(node, rx.CharClass)
        for lo, hi in node.ranges:
            transitions[i, lo : hi + 1] = i + 1
    accepting = np.zeros(len(transitions), dtype=bool)
    accepting[-1] = True
    return ByteDFA(transitions, accepting, Chain(tuple(map(rx.ident, classes))))


def _build(node: rx.RegexNode, limits: Limits, made: bool = False) -> ByteDFA:
    """`node`'s DFA, by a shortcut where one applies, else by the pipeline. `made`: the node is
    no part of the lexeme's tree but one a shortcut made (`_hoist`), and where it is
    large and needs the pipeline, the shortcut gives up (`_Abandoned`) and the whole lexeme goes
    through the pipeline once instead."""
    if _is_ascii(node):
        return _ascii_chain([node])
    if _nesting.depth < _MAX_NESTING:
        _nesting.depth += 1
        try:
            built = _from_parts(node, limits, made)
        except _Abandoned:
            built = None
        finally:
            _nesting.depth -= 1
        if built is not None:
            return built
    if made and node.size > _LARGEST_PIPELINED_PART:
        raise _Abandoned
    if node.size > limits.max_regex_size:
        raise GrammarError(
            "regex too large: its syntax tree has more than "
            f"limits.max_regex_size={limits.max_regex_size} nodes with repeats expanded"
        )
    check_deadline("building a lexeme's automaton")
    if isinstance(node, rx.Difference):
        subtracted = _subtract(node, limits)
        if subtracted is not None:
            return subtracted
        dfa = _difference(node, limits)
    else:
        dfa = _char_dfa(NFABuilder(node, differences=lambda d: _difference(d, limits)), limits)
    return _expand(dfa, limits)


def _expand(dfa: CharDFA, limits: Limits) -> ByteDFA:
    """The byte DFA of `dfa`; one not minimised yet whose byte states are over the limit is
    minimised and expanded again (the subset automaton of a search, `.*x.*`, may be many times
    its minimal size)."""
    try:
        return expand_utf8(
            dfa.rows, dfa.accepting, dfa.atom_ranges, limits.max_dfa_states, lambda: _too_many_states(limits)
        )
    except GrammarError:
        if dfa.minimal:
            raise
    rows, accepting = minimise([list(row) for row in dfa.rows], list(dfa.accepting))
    return expand_utf8(rows, accepting, dfa.atom_ranges, limits.max_dfa_states, lambda: _too_many_states(limits))


#: How deeply the shortcuts may nest (a concatenation's part is an alternative whose branch is a
#: concatenation ...): each level is a few Python frames, and a tree as deep as its input must not
#: reach the interpreter's recursion limit. Deeper subtrees go through the (iterative) pipeline.
_MAX_NESTING = 48


#: The largest node (by `rx.RegexNode.size`) that a shortcut makes and then puts through the
#: pipeline. A larger one fails the shortcut: the pipeline builds the lexeme (of about the same
#: size) once, rather than each of the pieces made from it in turn.
_LARGEST_PIPELINED_PART = 256


class _Nesting(threading.local):
    depth = 0


_nesting = _Nesting()


class _Abandoned(Exception):
    """A shortcut made a piece too large to put through the pipeline on its own."""


def _from_parts(node: rx.RegexNode, limits: Limits, made: bool) -> ByteDFA | None:
    """`node`'s DFA built from its children's DFAs, or None where no shortcut applies: a
    concatenation joined (`concat_dfas`, after `_hoist`), a repeat as a chain, a loop or an
    optional (`grammask.automata.repeat`), an alternation from its branches (`_alternation`)."""
    max_states = limits.max_dfa_states
    if isinstance(node, rx.Concat):
        # Parts of the tree are cached (shared pieces are compiled once per process); the parts
        # `_hoist` makes are built each time, lest they crowd the lexemes out of the cache.
        own = {id(item) for item in node.items}
        parts: list[ByteDFA] = []
        texts: list[tuple[rx.RegexNode, ...]] = []  # the items of each part
        for ascii, group in groupby(_hoist(node.items), _is_ascii):
            if ascii:
                classes = list(group)  # one class (punctuation) is cached, a run (a name) is built
                parts.append(compile_regex(classes[0], limits=limits) if len(classes) == 1 else _ascii_chain(classes))
                texts.append(tuple(classes))
            else:
                for member in group:
                    parts.append(_part(member, limits, id(member) not in own))
                    texts.append((member,))
        # What follows each part, named by the items' numbers: equal names, equal text.
        after: list[Hashable] = [None]
        for items in reversed(texts[1:]):
            after.append((tuple(map(rx.ident, items)), after[-1]))
        return concat_dfas(parts, max_states, after[::-1])
    if isinstance(node, rx.Alt):
        return _alternation(node, limits, made)
    if not isinstance(node, rx.Repeat) or node.size > limits.max_regex_size:
        return None
    check_deadline("building a lexeme's automaton")
    if node.max is not None and node.max < max(node.min, 1):
        return None
    item = _part(node.item, limits, made)
    chained = chain_dfa(item, node.min, node.max, max_states)
    if chained is not None or node.item.nullable or node.max not in (1, None) or node.min > 1:
        return chained  # (longer runs of joins are left to the pipeline)
    once_or_more = plus_dfa(item, max_states) if node.max is None else item
    if once_or_more is None or node.min:
        return once_or_more
    return optional_dfa(once_or_more, max_states)


def _alternation(node: rx.Alt, limits: Limits, made: bool) -> ByteDFA | None:
    """An alternation's DFA from its branches' (None where two branches can begin with the same
    byte): a beginning all the branches share is taken out first (`{ ws` of an empty object or
    one with members), and an empty branch makes the rest optional."""
    branches = [item for item in node.items if not rx.is_empty(item)]
    sequences = [item.items if isinstance(item, rx.Concat) else (item,) for item in branches]
    shared = 0
    while all(len(items) > shared and items[shared] == sequences[0][shared] for items in sequences):
        shared += 1
    if shared:
        rests = rx.alt(*(rx.concat(*items[shared:]) for items in sequences))
        either: ByteDFA | None = _build(rx.concat(*sequences[0][:shared], rests), limits, made=True)
    elif len(branches) == 1:
        either = _part(branches[0], limits, made)
    elif _apart(branches):
        either = union_dfas([_part(item, limits, made) for item in branches], limits.max_dfa_states)
    else:
        return None  # (the pipeline builds it whole, once, rather than each branch first)
    if either is None or len(branches) == len(node.items):
        return either
    return optional_dfa(either, limits.max_dfa_states)


def _apart(branches: Sequence[rx.RegexNode]) -> bool:
    """Whether no byte can begin two of `branches`, as far as `_first_bytes` can tell."""
    seen = 0
    for branch in branches:
        first = _first_bytes(branch, _MAX_NESTING)
        if seen & first:
            return False
        seen |= first
    return True


#: Every byte, as a 256-bit set.
_ANY_BYTE = (1 << 256) - 1


def _first_bytes(node: rx.RegexNode, depth: int) -> int:
    """The bytes the UTF-8 text of `node` can begin with, or more (as a 256-bit set): a class
    gives the lead bytes of its encodings (`utf8_sequences`), a nullable item lets the next one
    begin too. Every byte below `depth` levels of the tree."""
    if depth <= 0:
        return _ANY_BYTE
    if isinstance(node, rx.CharClass):
        bits = 0
        for (first, last), *_ in utf8_sequences(node.ranges):
            bits |= (1 << (last + 1)) - (1 << first)
        return bits
    if isinstance(node, rx.Alt):
        bits = 0
        for item in node.items:
            bits |= _first_bytes(item, depth - 1)
        return bits
    if isinstance(node, rx.Concat):
        bits = 0
        for item in node.items:
            bits |= _first_bytes(item, depth - 1)
            if not item.nullable:
                break
        return bits
    if isinstance(node, rx.Repeat):
        return _first_bytes(node.item, depth - 1)
    if isinstance(node, rx.Difference):
        return _first_bytes(node.left, depth - 1)
    return _ANY_BYTE


def _part(node: rx.RegexNode, limits: Limits, made: bool) -> ByteDFA:
    """The DFA of a part of a node being built: cached where the part is in the lexeme's tree,
    built each time where a shortcut made it (see `_build`)."""
    return _build(node, limits, made=True) if made else compile_regex(node, limits=limits)


def _hoist(items: Sequence[rx.RegexNode]) -> Sequence[rx.RegexNode]:
    """The same concatenation with each `(W X){a,b} W` rewritten as `W (X W){a,b}` (exact for any
    W, X, a, b): an optional member before an object's closing `ws }` starts with that `ws`, which
    the parts cannot be joined across, and after the rewrite the optional part starts with its
    `,` (likewise an array's further items, `(ws , ws X)*`, before `ws ]`).
    Done right to left, so that a run of optional members moves one `ws` all the way to the front."""
    out = list(items)
    for i in range(len(out) - 2, -1, -1):
        moved = _moved_behind(out[i], out[i + 1])
        if moved is not None:
            out[i : i + 2] = [out[i + 1], moved]
    return out


def _moved_behind(repeated: rx.RegexNode, w: rx.RegexNode) -> rx.RegexNode | None:
    """`(X W){a,b}` where `repeated` is `(W X){a,b}` (an optional: `{0,1}`), else None."""
    branch = _optional_branch(repeated)
    hi: int | None
    if branch is not None:
        item, lo, hi = branch, 0, 1
    elif isinstance(repeated, rx.Repeat):
        item, lo, hi = repeated.item, repeated.min, repeated.max
    else:
        return None
    if item == w:
        return rx.repeat(w, lo, hi)
    if isinstance(item, rx.Concat) and item.items[0] == w:
        return rx.repeat(rx.concat(*item.items[1:], w), lo, hi)
    return None


def _optional_branch(node: rx.RegexNode) -> rx.RegexNode | None:
    """`X` where `node` is `X | ε` or `X?`, else None."""
    if isinstance(node, rx.Alt) and len(node.items) == 2 and any(map(rx.is_empty, node.items)):
        return node.items[1] if rx.is_empty(node.items[0]) else node.items[0]
    if isinstance(node, rx.Repeat) and node.min == 0 and node.max == 1:
        return node.item
    return None


#: Up to this many strings (and characters in them all), the right side of a difference is
#: subtracted as a set of words (`subtract_words`): the declared names of an object, spelled out.
_FEW_WORDS = 4096


def _subtract(node: rx.Difference, limits: Limits) -> ByteDFA | None:
    """`left − right` as a product of the two sides' DFAs (the left one, a string body, is usually
    cached already), or of the left one and the right side's words where they are few; None where
    a side alone is over a limit or the product is too large: the one subset construction over
    both sides decides those cases."""
    try:
        left = compile_regex(node.left, limits=limits)
        words = rx.strings(node.right, _FEW_WORDS)
        if words is not None:
            return subtract_words(left, (word.encode() for word in words), limits.max_dfa_states)
        right = compile_regex(node.right, limits=limits)
    except GrammarError:
        return None
    return subtract_dfas(left, right, limits.max_dfa_states)


def _too_many_states(limits: Limits) -> GrammarError:
    return GrammarError(f"regex needs a DFA with more than limits.max_dfa_states={limits.max_dfa_states} states")


def _char_dfa(builder: NFABuilder, limits: Limits) -> CharDFA:
    """A trim DFA over code points of what `builder` builds: the subset automaton, minimised
    where it may not be trim or is over the state limit. It may not be trim where some set may
    never accept: a difference (its rejecting end, a laid-in DFA's states) or a class that reads
    no character (surrogates only). Otherwise every NFA state can reach the end, so every set
    can, and the automaton is trim as built; over an NFA that shares its equal continuations it
    is also close to minimal (3.9% more states than minimal over every 11th MaskBench file), and
    minimising it took a ninth of a typical compile."""
    nfa = builder.build()
    alphabet = alphabet_of(nfa.classes)
    rows, accepting = determinise(
        nfa, alphabet, _SUBSET_SLACK * limits.max_dfa_states + 2, lambda: _too_many_states(limits)
    )
    minimal = (
        nfa.reject >= 0 or builder.has_differences or not all(alphabet.class_masks) or len(rows) > limits.max_dfa_states
    )
    if minimal:
        rows, accepting = minimise(rows, accepting)
    if len(rows) > limits.max_dfa_states:
        raise _too_many_states(limits)
    return CharDFA(rows, accepting, alphabet.atom_ranges, minimal)


@lru_cache(maxsize=64)
def _difference(node: rx.Difference, limits: Limits) -> CharDFA:
    """The DFA of `left − right`: one subset construction over both sides, accepting where
    `left` ends and `right` does not. Kept for the next lexemes: an object's key difference is
    laid into the lexeme of each member that may follow."""
    dfa = _char_dfa(NFABuilder(node.left, node.right, lambda d: _difference(d, limits)), limits)
    # Tuples of integers, which the garbage collector stops tracking: this cache is long-lived.
    return CharDFA(tuple(map(tuple, dfa.rows)), tuple(dfa.accepting), dfa.atom_ranges)
