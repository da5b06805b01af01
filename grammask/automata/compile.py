"""`compile_regex`: regex syntax tree → minimal `ByteDFA`, with size limits and a cache.

Pipeline: Thompson NFA over characters, built backwards so that equal subtrees before equal
continuations are built once (`nfa`) → the alphabet of atoms its classes distinguish
(`alphabet`) → subset construction over atoms, with state sets and atom sets as int bitsets
(`determinise`) → Hopcroft minimisation (`minimise`) → UTF-8 byte tries, hash-consed (`expand`).
Working over characters rather than bytes keeps the automata that are determinised and minimised
small: a character class costs one column however many UTF-8 byte ranges it spans. Character
states are numbered breadth first from the start, each state's targets taken by lowest code
point, and byte states follow them: the result is the same for equal languages.

A difference `left − right` (`rx.Difference`: the keys an object may add, "any string but the
declared names") alone is the product of the two sides' cached DFAs (`subtract`): the string body
on the left is compiled once per process, not once per object. Where that product would be too
large, or inside a larger tree, it goes through the pipeline once, over an NFA of both sides whose
subset states accept where `left` ends and `right` does not, and a tree lays that minimal character
DFA into its own NFA as states.

Three more shortcuts skip that pipeline, since most lexemes of a JSON grammar are chains: a run of
ASCII classes is a chain of states built directly, a concatenation whose parts cannot run into
each other is joined from the parts' cached DFAs (`concat`), and a bounded repeat of a closed item
(one string character) is that many copies of the item's table in a row (`_chain`). Their results,
like a difference's product, are exact and trim, though a join is not always minimal.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from functools import lru_cache
from itertools import groupby

import numpy as np

from grammask.automata.alphabet import alphabet_of
from grammask.automata.concat import concat_dfas
from grammask.automata.determinise import determinise
from grammask.automata.dfa import START, ByteDFA
from grammask.automata.expand import expand_utf8
from grammask.automata.minimise import minimise
from grammask.automata.nfa import CharDFA, NFABuilder
from grammask.automata.subtract import subtract_dfas
from grammask.errors import GrammarError
from grammask.ir import regex as rx
from grammask.limits import DEFAULT_LIMITS, Limits, check_deadline, deadline
from grammask.lru import LRUCache

__all__ = ["compile_regex"]

#: Bytes of DFA tables the process-wide cache of compiled lexemes keeps.
_CACHE_BYTES = 64 * 2**20

#: The unminimised subset automaton may exceed the state limit by this factor before compilation
#: stops: minimisation often shrinks it back under the limit.
_SUBSET_SLACK = 2


def compile_regex(node: rx.RegexNode, *, limits: Limits = DEFAULT_LIMITS) -> ByteDFA:
    """A trim DFA (minimal but for joined concatenations and differences) accepting exactly the
    UTF-8 encodings of the strings `node` matches.

    Raises `GrammarError` when the tree (bounded repeats expanded) is over `limits.max_regex_size`,
    or the automaton needs more than `limits.max_dfa_states` states. Results are cached by node
    (least recently used out first, within 64 MiB of tables).
    """
    key = (node, limits)
    found = _cache.get(key)
    if found is None:
        found = _compile(node, limits)
        _cache.put(key, found, found.transitions.nbytes + found.accepting.nbytes)
    return found


#: Lexeme DFAs by regex, shared by every grammar in the process (one JSON string lexeme, say).
_cache = LRUCache(budget=_CACHE_BYTES)


def _compile(node: rx.RegexNode, limits: Limits) -> ByteDFA:
    # Compiling allocates many small containers and frees them all at the end; pausing the
    # cyclic collector meanwhile saves its passes over the whole heap (10-20% of the time).
    paused = gc.isenabled()
    gc.disable()
    try:
        with deadline(limits):
            return _build(node, limits)
    finally:
        if paused:
            gc.enable()


def _is_ascii(node: rx.RegexNode) -> bool:
    return isinstance(node, rx.CharClass) and bool(node.ranges) and node.ranges[-1][1] < 0x80


def _ascii_chain(classes: Sequence[rx.RegexNode]) -> ByteDFA:
    """One character of each ASCII class in turn: a chain of states, nothing to determinise."""
    transitions = np.zeros((len(classes) + 2, 256), dtype=np.int32)
    for i, node in enumerate(classes, start=START):
        assert isinstance(node, rx.CharClass)
        for lo, hi in node.ranges:
            transitions[i, lo : hi + 1] = i + 1
    accepting = np.zeros(len(transitions), dtype=bool)
    accepting[-1] = True
    return ByteDFA(transitions, accepting)


def _build(node: rx.RegexNode, limits: Limits) -> ByteDFA:
    if _is_ascii(node):
        return _ascii_chain([node])
    if isinstance(node, rx.Concat):
        parts: list[ByteDFA] = []
        for ascii, group in groupby(node.items, _is_ascii):
            if ascii:
                classes = list(group)  # one class (punctuation) is cached, a run (a name) is built
                parts.append(compile_regex(classes[0], limits=limits) if len(classes) == 1 else _ascii_chain(classes))
            else:
                parts.extend(compile_regex(item, limits=limits) for item in group)
        joined = concat_dfas(parts, limits.max_dfa_states)
        if joined is not None:
            return joined
    if node.size > limits.max_regex_size:
        raise GrammarError(
            "regex too large: its syntax tree has more than "
            f"limits.max_regex_size={limits.max_regex_size} nodes with repeats expanded"
        )
    check_deadline("building a lexeme's automaton")
    if isinstance(node, rx.Repeat) and node.max is not None and node.max >= max(node.min, 1):
        chained = _chain(compile_regex(node.item, limits=limits), node.min, node.max, limits.max_dfa_states)
        if chained is not None:
            return chained
    if isinstance(node, rx.Difference):
        subtracted = _subtract(node, limits)
        if subtracted is not None:
            return subtracted
        dfa = _difference(node, limits)
    else:
        dfa = _char_dfa(NFABuilder(node, differences=lambda d: _difference(d, limits)), limits)
    return expand_utf8(
        dfa.rows, dfa.accepting, dfa.atom_ranges, limits.max_dfa_states, lambda: _too_many_states(limits)
    )


def _chain(item: ByteDFA, lo: int, hi: int, max_states: int) -> ByteDFA | None:
    """`item` repeated `lo` to `hi` times, as `hi` copies of its table in a row, where the item is
    *closed*: one accepting state with no way on, a start that accepts nothing and is never
    re-entered (one JSON string character, say). Then where one copy ends is exactly where the
    next begins, and the chain is the minimal DFA, built with a few array operations where the
    character pipeline takes 40 to 200 ms for a string under a `maxLength` of 64. None where the
    item is not closed or the chain would have more than `max_states` states."""
    ends = item.accepting_states
    if item.accepting[START] or len(ends) != 1 or item.transitions[ends[0]].any() or item.start_reentered:
        return None
    end = int(ends[0])
    others = [s for s in range(START + 1, item.n_states) if s != end]
    width = 1 + len(others)  # states per copy: its start (the previous copy's end) and the rest
    n = 2 + hi * width  # the dead state, `hi` copies, the last copy's end
    if n > max_states:
        return None
    # Where each of the item's states lands in copy 0; copy i adds i * width to every live target.
    place = np.zeros(item.n_states, dtype=np.int32)
    place[START], place[end] = START, START + width
    place[others] = np.arange(START + 1, START + width, dtype=np.int32)
    rows = item.transitions[[START, *others]]
    table = np.zeros((n, 256), dtype=np.int32)
    copies = table[START : n - 1].reshape(hi, width, 256)  # written in place: no temporaries
    np.multiply(np.arange(0, hi * width, width, dtype=np.int32)[:, None, None], rows != 0, out=copies)
    copies += place[rows]
    accepting = np.zeros(n, dtype=bool)
    accepting[START + width * np.arange(lo, hi + 1)] = True  # where copies lo..hi end
    return ByteDFA(table, accepting)


def _subtract(node: rx.Difference, limits: Limits) -> ByteDFA | None:
    """`left − right` as a product of the two sides' DFAs (the left one, a string body, is usually
    cached already), or None where a side alone is over a limit or the product is too large; the
    one subset construction over both sides decides those cases."""
    try:
        left, right = compile_regex(node.left, limits=limits), compile_regex(node.right, limits=limits)
    except GrammarError:
        return None
    return subtract_dfas(left, right, limits.max_dfa_states)


def _too_many_states(limits: Limits) -> GrammarError:
    return GrammarError(f"regex needs a DFA with more than limits.max_dfa_states={limits.max_dfa_states} states")


def _char_dfa(builder: NFABuilder, limits: Limits) -> CharDFA:
    """The minimal DFA over code points of what `builder` builds."""
    nfa = builder.build()
    alphabet = alphabet_of(nfa.classes)
    rows, accepting = determinise(
        nfa, alphabet, _SUBSET_SLACK * limits.max_dfa_states + 2, lambda: _too_many_states(limits)
    )
    rows, accepting = minimise(rows, accepting)
    if len(rows) > limits.max_dfa_states:
        raise _too_many_states(limits)
    return CharDFA(rows, accepting, alphabet.atom_ranges)


@lru_cache(maxsize=64)
def _difference(node: rx.Difference, limits: Limits) -> CharDFA:
    """The DFA of `left − right`: one subset construction over both sides, accepting where
    `left` ends and `right` does not. Kept for the next lexemes: an object's key difference is
    laid into the lexeme of each member that may follow."""
    dfa = _char_dfa(NFABuilder(node.left, node.right, lambda d: _difference(d, limits)), limits)
    # Tuples of integers, which the garbage collector stops tracking: this cache is long-lived.
    return CharDFA(tuple(map(tuple, dfa.rows)), tuple(dfa.accepting), dfa.atom_ranges)
