"""Canonical tokenization of forced text: only tokens the tokenizer itself would produce, and only
those that text following the forced run cannot change."""

import pytest

from grammask.generation.formats import logits_width, tokenizer_vocabulary
from grammask.generation.jump_forward import CanonicalTokenizer

pytestmark = pytest.mark.model

FORCED = ['{\n  "name": "', '", "age": ', "[get_user_info(user_id=", "Hello world"]
FOLLOWING = ["Alice", "30", " x", "\n", '"', "ing"]


@pytest.fixture(scope="module")
def canonical(smollm2):
    model, tok = smollm2
    return CanonicalTokenizer(tok, tokenizer_vocabulary(tok, logits_width(model)))


@pytest.mark.parametrize("forced", FORCED)
def test_forced_tokens_are_a_stable_prefix_of_the_canonical_split(canonical, forced):
    tokens = canonical.forced_tokens([], forced.encode(), final=False)
    assert tokens
    for following in FOLLOWING:
        assert canonical.encode(forced + following)[: len(tokens)] == tokens


def test_final_forced_text_keeps_every_token(canonical):
    assert canonical.forced_tokens([], b'"}\n', final=True) == canonical.encode('"}\n')


def test_context_token_spanning_the_boundary_gives_nothing(canonical):
    context = canonical.encode('"')
    assert len(canonical.encode('":')) == 1  # `":` is one token: it would undo the emitted `"`
    assert canonical.forced_tokens(context, b": 1, ", final=False) == []


def test_context_shapes_the_split(canonical):
    context = canonical.encode("{\n ")
    tokens = canonical.forced_tokens(context, b' "name": "', final=False)
    whole = canonical.encode('{\n  "name": "x')
    assert whole[len(context) : len(context) + len(tokens)] == tokens
