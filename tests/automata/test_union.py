"""`union_dfas` and the alternations `compile_regex` builds from their branches: the union agrees
with `re` on the alternation, stays trim, and is refused where two branches can begin alike."""

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammask.automata import compile as compile_module
from grammask.automata import compile_regex
from grammask.automata.dfa import Either
from grammask.automata.repeat import chain_dfa
from grammask.automata.union import union_dfas
from grammask.frontends.regex_syntax import parse_regex
from grammask.ir import regex as rx
from grammask.limits import Limits
from tests.automata.test_compile_regex import _pipeline_runs, reachable_count
from tests.automata.test_concat import assert_names_alike_follow_alike
from tests.frontends.test_regex_syntax import PY_SHORTHANDS, TEXT, patterns

BRANCHES = st.lists(patterns(PY_SHORTHANDS, dot=True), min_size=2, max_size=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BRANCHES, st.lists(TEXT, max_size=8))
def test_union_matches_the_alternation_or_is_refused(branches: list[tuple[str, str | None]], texts) -> None:
    pieces = [p for p, _ in branches]
    parts = [compile_regex(parse_regex(p)) for p in pieces]
    union = union_dfas(parts, 10_000)
    live = [part for part in parts if not part.is_empty]
    overlap = any(a.first_bits & b.first_bits for i, a in enumerate(live) for b in live[i + 1 :])
    assert (union is None) == (overlap and len(live) > 1 or not live)
    if union is None:
        return
    pattern = "|".join(f"(?:{p})" for p in pieces)
    for text in texts + [e for _, e in branches if e is not None]:
        assert union.matches(text.encode()) == (re.fullmatch(pattern, text) is not None), (pattern, text)
    assert union.n_states == 2 or (union.live[1:].all() and reachable_count(union) == union.n_states)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(PY_SHORTHANDS, dot=True))
def test_first_bytes_of_a_tree_cover_its_dfa(case: tuple[str, str | None]) -> None:
    node = parse_regex(case[0])
    assert compile_regex(node).first_bits & ~compile_module._first_bytes(node, 48) == 0


def test_limits_and_degenerate_parts() -> None:
    letters = [compile_regex(parse_regex(p)) for p in ("a[0-9]{5}", "b[0-9]{5}")]
    assert union_dfas(letters, 12) is None and union_dfas(letters, 13) is not None
    assert union_dfas([compile_regex(parse_regex("[a-c]x")), compile_regex(parse_regex("cy"))], 100) is None
    nothing = compile_regex(parse_regex("[^\\s\\S]"))
    assert union_dfas([nothing, letters[0]], 100) is letters[0]
    assert union_dfas([nothing, nothing], 100) is None


def test_branches_share_one_end() -> None:
    """The ends of a character's branches are one state, so a string of such characters is a chain."""
    char = union_dfas([compile_regex(parse_regex(p)) for p in ('[^"\\\\]', "\\\\u[0-9a-f]{4}")], 100)
    assert char is not None and len(char.accepting_states) == 1
    assert chain_dfa(char, 0, 5, 1000) is not None


def test_objects_and_arrays_are_built_from_their_parts() -> None:
    """An empty object or one with members (`{ ws }` or `{ ws "`: the shared `{ ws` taken out
    first), and an array's further items before `ws ]` (`(ws , ws X)* ws`, rewritten as
    `ws (, ws X ws)*`), need no character pipeline; branches that begin alike still do."""
    ws, number = "[ \t]{0,3}", "-?[0-9]+"
    obj = f'\\{{{ws}\\}}|\\{{{ws}"a"{ws}:{ws}{number}{ws}\\}}'
    arr = f"\\[{ws}{number}(?:{ws},{ws}{number})*{ws}\\]"
    for pattern, texts in [
        (obj, ["{}", "{ }", '{"a":1}', '{ "a" : -2  }', '{"a":}', "{ ", '{"a":1,}']),
        (arr, ["[1]", "[ 1 , 2,3 ]", "[1,]", "[]", "[1 2]", "[ -0\t]"]),
    ]:
        node = parse_regex(pattern)
        assert _pipeline_runs(node) == [], pattern
        dfa = compile_module._compile(node, Limits())
        for text in texts:
            assert dfa.matches(text.encode()) == (re.fullmatch(pattern, text) is not None), (pattern, text)
    assert _pipeline_runs(parse_regex("ab|ac[0-9]*|a")) == []  # `a` taken out, then apart
    assert _pipeline_runs(parse_regex("a[0-9]|[a-c]x")) != []  # both may begin with `a`


ALTERNATIVES = st.sampled_from(
    ["(?:true|false|null)", '(?:\\{ *\\}|\\{ *"a" *: *[0-9]+ *\\})', '(?:[0-9]+|"[a-z]*")', "(?:[ab]c|d(?:e|fg)*)"]
    + ["x|y?", "(?:x(?:ab|[ab]cdef)|z)"]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ALTERNATIVES, min_size=1, max_size=3), ALTERNATIVES, st.sampled_from(["", ",", " *,"]))
def test_states_named_alike_have_the_same_residual(alternatives, other, separator) -> None:
    """`ByteDFA.residual` through unions: a branch's states keep the branch's names, so lexemes
    that share a branch or a tail share those names; where two states have the same name, the
    same strings follow them."""
    tail = [parse_regex(p) for p in alternatives]
    lexemes = [rx.concat(*tail), rx.concat(parse_regex(other), parse_regex(separator), *tail), parse_regex(other)]
    lexemes.append(rx.alt(*tail))
    lexemes += [branch for node in tail if isinstance(node, rx.Alt) for branch in node.items]  # (on their own)
    assert_names_alike_follow_alike(lexemes)


def test_a_union_names_its_branches_states_by_theirs() -> None:
    value = compile_regex(parse_regex('(?:null|"[a-z]*"|[0-9]+)'))
    assert isinstance(value.origin, Either)
    member = compile_regex(parse_regex('"a": *(?:null|"[a-z]*"|[0-9]+)'))
    names = {member.residual(s) for s in range(member.n_states)}
    assert all(value.residual(s) in names for s in range(2, value.n_states))  # (the start joins the ` *`)
