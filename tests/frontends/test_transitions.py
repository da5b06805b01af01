"""Token-automaton front-end: explicit (state, token id, next state) edges."""

from __future__ import annotations

import re

import pytest

import grammask
from grammask.errors import GrammarError
from grammask.frontends.transitions import grammar_from_transitions
from grammask.ir import grammar as g


def allowed(matcher) -> set[int]:
    return set(matcher.allowed_token_ids().tolist())


def test_ir_has_one_rule_per_live_state():
    grammar = grammar_from_transitions(0, [(0, 1, 1), (1, 2, 2), (2, 3, 0)], [0, 1, 2])
    assert grammar.start == "state_0"
    assert grammar.rules == {
        "state_0": g.alt(g.seq(g.token(1), g.ref("state_1")), g.seq()),
        "state_1": g.alt(g.seq(g.token(2), g.ref("state_2")), g.seq()),
        "state_2": g.alt(g.seq(g.token(3), g.ref("state_0")), g.seq()),
    }
    assert grammar == grammask.Grammar.from_transitions(0, [(0, 1, 1), (1, 2, 2), (2, 3, 0)], {0, 1, 2})


def test_cycle_allows_only_the_cycle(vocab_llama3):
    eos = set(vocab_llama3.eos_ids)
    grammar = grammar_from_transitions(0, [(0, 1, 1), (1, 2, 2), (2, 3, 0)], [0, 1, 2])
    matcher = grammask.compile(grammar, vocab_llama3).matcher()
    assert not matcher.advance(2)
    for token in [1, 2, 3, 1, 2, 3, 1]:
        assert allowed(matcher) == {token} | eos
        assert not matcher.advance(token % 3 + 1)  # the token after next is refused
        assert matcher.advance(token)
    assert allowed(matcher) == {2} | eos


def test_accepting_states_gate_the_end(vocab_llama3):
    eos = set(vocab_llama3.eos_ids)
    grammar = grammar_from_transitions(5, [(5, 100, 6), (6, 200, 7), (7, 100, 6)], [7])
    matcher = grammask.compile(grammar, vocab_llama3).matcher()
    assert allowed(matcher) == {100}
    assert matcher.advance(100)
    assert allowed(matcher) == {200}
    assert matcher.advance(200)
    assert allowed(matcher) == {100} | eos
    assert matcher.can_finish()


def test_nondeterminism_and_dead_ends(vocab_llama3):
    eos = set(vocab_llama3.eos_ids)
    edges = [(0, 5, 1), (0, 5, 2), (1, 6, 3), (2, 7, 3), (0, 8, 4), (99, 9, 0)]  # 4 is a dead end
    grammar = grammar_from_transitions(0, edges, [3])
    assert set(grammar.rules) == {"state_0", "state_1", "state_2", "state_3"}
    matcher = grammask.compile(grammar, vocab_llama3).matcher()
    assert allowed(matcher) == {5}
    assert matcher.advance(5)
    assert allowed(matcher) == {6, 7}
    assert matcher.advance(7)
    assert allowed(matcher) == eos


@pytest.mark.parametrize(
    "initial, edges, accepting, words",
    [
        (0, [(0, 1, 1)], [2], "no accepting state can be reached"),
        (0, [(0, 1, 1), (1, 2, 0)], [], "no accepting state can be reached"),
        (0, [(0, 1)], [0], "transition #0 is (0, 1)"),
        (0, [(0, 1, 1), (1, -2, 0)], [0], "transition #1 has a negative token id"),
        (0, [(0, True, 1)], [0], "token id of transition #0 must be an int"),
        ("0", [], [0], "initial state must be an int"),
        (0, [], ["0"], "accepting state must be an int"),
    ],
)
def test_errors(initial, edges, accepting, words):
    with pytest.raises(GrammarError, match=re.escape(words)):
        grammar_from_transitions(initial, edges, accepting)
