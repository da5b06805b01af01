"""`compile_regex`: regex syntax tree → minimal `ByteDFA`, with size limits and a cache.

Pipeline: the alphabet of atoms the regex's classes distinguish (`alphabet`) → Thompson NFA over
characters (`nfa`) → subset construction over atoms (`determinise`) → Hopcroft minimisation and
canonical numbering (`minimise`) → UTF-8 byte tries, hash-consed (`expand`). Working over
characters rather than bytes keeps the automata that are determinised and minimised small: a
character class costs one column however many UTF-8 byte ranges it spans.
"""

from __future__ import annotations

from functools import lru_cache

from grammask.automata.alphabet import alphabet_of, classes_of
from grammask.automata.determinise import determinise
from grammask.automata.dfa import ByteDFA
from grammask.automata.expand import expand_utf8
from grammask.automata.minimise import minimise
from grammask.automata.nfa import build_nfa
from grammask.errors import GrammarError
from grammask.ir import regex as rx
from grammask.limits import DEFAULT_LIMITS, Limits

__all__ = ["compile_regex"]

#: The unminimised subset automaton may exceed the state limit by this factor before compilation
#: stops: minimisation often shrinks it back under the limit.
_SUBSET_SLACK = 2


def compile_regex(node: rx.RegexNode, *, limits: Limits = DEFAULT_LIMITS) -> ByteDFA:
    """The minimal DFA accepting exactly the UTF-8 encodings of the strings `node` matches.

    Raises `GrammarError` when the tree (bounded repeats expanded) is over `limits.max_regex_size`,
    or the automaton needs more than `limits.max_dfa_states` states. Results are cached by node.
    """
    return _compile(node, limits)


@lru_cache(maxsize=256)
def _compile(node: rx.RegexNode, limits: Limits) -> ByteDFA:
    tree_size = rx.size(node)
    if tree_size > limits.max_regex_size:
        raise GrammarError(
            f"regex too large: its syntax tree has {tree_size} nodes with repeats expanded, "
            f"over limits.max_regex_size={limits.max_regex_size}"
        )

    def too_many_states() -> GrammarError:
        return GrammarError(
            f"regex needs a DFA with more than limits.max_dfa_states={limits.max_dfa_states} states"
        )

    alphabet = alphabet_of(classes_of(node))
    table, accepting, start = determinise(
        build_nfa(node), alphabet, _SUBSET_SLACK * limits.max_dfa_states + 2, too_many_states
    )
    table, accepting = minimise(table, accepting, start)
    if len(table) > limits.max_dfa_states:
        raise too_many_states()
    return expand_utf8(table, accepting, alphabet.atom_ranges, limits.max_dfa_states, too_many_states)
