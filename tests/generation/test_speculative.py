"""Speculative decoding under a format: the prompt-lookup drafter, draft verification against a real
matcher with synthetic logits, KV-cache cropping, and `generate(speculative=k)` with the real SmolLM2
giving the tokens decoding without speculation gives."""

import json
from pathlib import Path

import numpy as np
import pytest

from grammask.bitmask import allocate_bitmask
from grammask.compiler import compile
from grammask.generation.speculative import NgramDrafter, crop_cache, verify_draft
from grammask.grammar import Grammar
from grammask.matcher import Matcher
from grammask.processors import apply_token_bitmask
from grammask.vocab import Vocabulary

# -- the drafter ----------------------------------------------------------------------------------


def test_drafter_continues_after_the_most_recent_occurrence_of_the_longest_suffix():
    drafter = NgramDrafter(n_max=3, k=3)
    assert drafter.propose([1, 2, 3, 9, 8, 7, 1, 2, 3]) == [9, 8, 7]
    # The 2-gram (1, 2) beats the more recent 1-gram (2).
    assert drafter.propose([1, 2, 9, 2, 4, 1, 2]) == [9, 2, 4]
    # Of equal matches, the most recent wins; the draft may run into the suffix itself.
    assert drafter.propose([5, 1, 6, 5, 1, 7, 5, 1]) == [7, 5, 1]
    assert drafter.propose([4, 4, 4]) == [4]
    assert NgramDrafter(k=2).propose([1, 2, 3, 4, 5, 1]) == [2, 3]


def test_drafter_proposes_nothing_without_a_match_of_n_min_tokens():
    assert NgramDrafter().propose([]) == []
    assert NgramDrafter().propose([1]) == []
    assert NgramDrafter().propose([1, 2, 3]) == []
    assert NgramDrafter(n_min=2).propose([1, 9, 2, 4, 1, 2]) == []
    assert NgramDrafter(n_min=2).propose([3, 2, 9, 3, 2]) == [9, 3, 2]
    for bad in ({"n_min": 0}, {"n_min": 3, "n_max": 2}, {"k": 0}):
        with pytest.raises(ValueError):
            NgramDrafter(**bad)


def test_drafter_matches_a_brute_force_search_on_long_contexts():
    rng = np.random.default_rng(0)
    drafter = NgramDrafter(n_max=4, n_min=2, k=5)
    for _ in range(50):
        context = rng.integers(0, 6, size=int(rng.integers(1, 3000))).tolist()
        expected: list[int] = []
        for n in range(4, 1, -1):
            ends = [e for e in range(n - 1, len(context) - 1) if context[e - n + 1 : e + 1] == context[-n:]]
            if ends and len(context) > n:
                expected = context[ends[-1] + 1 : ends[-1] + 6]
                break
        assert drafter.propose(context) == expected


# -- verification against a matcher ---------------------------------------------------------------

#: A tiny vocabulary: the end token, letters, a dash, digits and one two-letter token.
TOKENS = [b"</s>", b"a", b"b", b"c", b"-", b"0", b"1", b"2", b"ab"]
END, A, B, C, DASH, D0, D1, D2, AB = range(len(TOKENS))


@pytest.fixture(scope="module")
def compiled():
    vocab = Vocabulary(TOKENS, special_ids=[END], eos_ids=[END])
    return compile(Grammar.from_regex("a[bc]-[0-9]{1,3}"), vocab)


def greedy(logits: np.ndarray, matcher: Matcher | None) -> int:
    """Argmax under the mask of the matcher's current state (the loop's greedy pick)."""
    assert matcher is not None
    bitmask = allocate_bitmask(1, len(TOKENS))
    matcher.fill_bitmask(bitmask)
    return int(np.argmax(apply_token_bitmask(logits[None], bitmask)[0]))


def argmax(logits: np.ndarray, matcher: Matcher | None) -> int:
    """The unmasked greedy pick, for a row without a matcher."""
    return int(np.argmax(logits))


def favouring(*tokens: int) -> np.ndarray:
    """Logits at `len(tokens)` positions, position i preferring `tokens[i]` (then lower ids)."""
    logits = np.zeros((len(tokens), len(TOKENS)), dtype=np.float32)
    logits[np.arange(len(tokens)), tokens] = 10.0
    return logits


def advanced(compiled, tokens: list[int]) -> Matcher:
    matcher = compiled.matcher()
    assert all(matcher.advance(t) for t in tokens)
    return matcher


def same_state(a: Matcher, b: Matcher) -> bool:
    return a.forced_bytes() == b.forced_bytes() and a.allowed_token_ids().tolist() == b.allowed_token_ids().tolist()


@pytest.mark.parametrize(
    "draft,model,accepted",
    [
        ([A, B, DASH], [A, B, DASH, D1], [A, B, DASH, D1]),  # all accepted, plus the pick after the draft
        ([A, B, DASH], [AB, DASH, D0, D0], [AB]),  # rejected at the first position
        ([A, B, DASH], [A, C, DASH, D0], [A, C]),  # in the middle
        ([A, B, DASH, D1], [A, B, DASH, D2, D0], [A, B, DASH, D2]),  # at the last
        ([], [A], [A]),  # no draft: one pick
    ],
)
def test_verify_accepts_the_prefix_the_model_agrees_with_and_one_pick_more(compiled, draft, model, accepted):
    matcher = compiled.matcher()
    assert verify_draft(matcher, draft, favouring(*model), greedy) == accepted
    assert same_state(matcher, advanced(compiled, accepted))


def test_a_drafted_token_the_grammar_forbids_is_never_accepted(compiled):
    # The model would pick the forbidden "a" again; the mask makes the pick "b" instead.
    logits = favouring(A, A, DASH, D0)
    logits[1, B] = 5.0
    matcher = compiled.matcher()
    assert verify_draft(matcher, [A, A, DASH], logits, greedy) == [A, B]
    assert same_state(matcher, advanced(compiled, [A, B]))
    # A forbidden end token in the draft (the text is not complete yet) is rejected too.
    matcher = compiled.matcher()
    assert verify_draft(matcher, [A, B, END], favouring(A, B, END, D0), greedy) == [A, B, DASH]


def test_verification_stops_at_the_end_token(compiled):
    matcher = compiled.matcher()
    draft = [A, B, DASH, D1, END, D1]
    assert verify_draft(matcher, draft, favouring(A, B, DASH, D1, END, D1, D1), greedy) == [A, B, DASH, D1, END]
    assert matcher.is_finished()
    # Without a matcher, `end_ids` says which tokens end the text.
    unmasked = verify_draft(None, [D1, END, D1], favouring(D1, END, D1, D1), argmax, end_ids={END})
    assert unmasked == [D1, END]


def test_on_accept_stops_verification_after_a_token(compiled):
    seen: list[int] = []

    def take(token: int) -> bool:
        seen.append(token)
        return token != B

    matcher = compiled.matcher()
    assert verify_draft(matcher, [A, B, DASH], favouring(A, B, DASH, D0), greedy, on_accept=take) == [A, B]
    assert seen == [A, B]
    assert same_state(matcher, advanced(compiled, [A, B]))


def test_verify_needs_logits_for_every_drafted_position(compiled):
    with pytest.raises(ValueError, match="needs 3 logits positions"):
        verify_draft(compiled.matcher(), [A, B], favouring(A, B), greedy)


# -- the KV cache ---------------------------------------------------------------------------------


def test_crop_cache_keeps_the_first_positions_of_dynamic_and_legacy_caches():
    torch = pytest.importorskip("torch")
    cache_utils = pytest.importorskip("transformers.cache_utils")
    layers = [(torch.randn(2, 3, 7, 4), torch.randn(2, 3, 7, 4)) for _ in range(2)]
    dynamic = cache_utils.DynamicCache()
    for i, (key, value) in enumerate(layers):
        dynamic.update(key.clone(), value.clone(), i)
    assert crop_cache(dynamic, 5) is dynamic and dynamic.get_seq_length() == 5
    assert torch.equal(dynamic.layers[1].keys, layers[1][0][:, :, :5])
    assert torch.equal(dynamic.layers[0].values, layers[0][1][:, :, :5])
    crop_cache(dynamic, 9)  # longer than the cache: nothing to do
    assert dynamic.get_seq_length() == 5
    legacy = crop_cache(tuple(layers), 2)
    assert [tuple(t.shape) for layer in legacy for t in layer] == [(2, 3, 2, 4)] * 4
    assert torch.equal(legacy[1][1], layers[1][1][:, :, :2])
    assert crop_cache(None, 3) is None


# -- generate with the real model -----------------------------------------------------------------
# The prompts are ones whose greedy path meets no bfloat16 tie: at a tie, which token wins can depend
# on how many positions a pass scores ("Say hi." has one; see docs/benchmarks.md).

PERSON = json.loads((Path(__file__).parents[2] / "examples" / "person.json").read_text())
PEOPLE = {"type": "array", "items": PERSON, "minItems": 3, "maxItems": 3}


@pytest.mark.model
@pytest.mark.parametrize(
    "request_,grammar,max_tokens",
    [
        # Repeated keys and names from the prompt, with jump-forward over the forced layout.
        ("People as JSON: Alice is 30, Bob is 41, Carol is 52.", Grammar.from_json_schema(PEOPLE), 36),
        ("Give a US phone number like (555) 123-4567.", Grammar.from_regex(r"\(\d{3}\) \d{3}-\d{4}"), 14),
        ("Count from 1 to 20, separated by commas.", None, 24),
    ],
    ids=["json-schema", "regex", "free-text"],
)
def test_greedy_output_is_the_same_with_and_without_speculation(smollm2, request_, grammar, max_tokens):
    from grammask.generation import chat_prompt, generate

    model, tok = smollm2
    prompt = chat_prompt(tok, request_)
    plain = generate(model, tok, prompt, grammar, max_tokens=max_tokens)
    fast = generate(model, tok, prompt, grammar, max_tokens=max_tokens, speculative=4)
    assert fast.token_ids == plain.token_ids and fast.text == plain.text
    assert fast.finish_reason == plain.finish_reason
    assert plain.drafted == plain.accepted == 0
    assert 0 < fast.accepted <= fast.drafted
    assert fast.forward_passes < plain.forward_passes


@pytest.mark.model
def test_speculation_in_a_batch_streamed_and_with_stop_strings(smollm2):
    from grammask.generation import chat_prompt, generate

    model, tok = smollm2
    prompts = [
        chat_prompt(tok, "People as JSON: Dan is 20, Eve is 33, Fay is 47."),
        chat_prompt(tok, "Count from 1 to 20, separated by commas."),
        chat_prompt(tok, "Pick a number between 1 and 100."),
    ]
    formats = [Grammar.from_json_schema(PEOPLE), None, Grammar.from_regex("[0-9]+")]
    plain = [generate(model, tok, p, f, max_tokens=32) for p, f in zip(prompts, formats, strict=True)]
    batch = generate(model, tok, prompts, formats, max_tokens=32, speculative=3)
    assert [r.token_ids for r in batch] == [r.token_ids for r in plain]
    assert sum(r.accepted for r in batch) > 0
    stream = generate(model, tok, prompts[1], max_tokens=30, stop=["9"], stream=True, speculative=3)
    pieces = list(stream)
    assert stream.result is not None and stream.result.finish_reason == "stop"
    assert "".join(pieces) == stream.result.text == plain[1].text[: plain[1].text.index("9")]


@pytest.mark.model
def test_seeded_sampling_draws_the_same_tokens_with_and_without_speculation(smollm2):
    from grammask.generation import chat_prompt, generate

    model, tok = smollm2
    prompt = chat_prompt(tok, "People as JSON: Alice is 30, Bob is 41, Carol is 52.")
    runs = [
        generate(
            model, tok, prompt, Grammar.from_json_schema(PEOPLE), max_tokens=36, temperature=0.8, seed=7, speculative=k
        )
        for k in (0, 4)
    ]
    assert runs[0].token_ids == runs[1].token_ids
    assert runs[1].accepted > 0


class JunkDrafter:
    """Drafts the grammar could never take and ids past the vocabulary: the output must not change."""

    def propose(self, context):
        return [int(context[-1]), 0, 10**9, 5]


@pytest.mark.model
def test_junk_drafts_change_nothing(smollm2):
    from grammask.generation import chat_prompt, generate

    model, tok = smollm2
    for request, grammar in [
        ("Give a US phone number like (555) 123-4567.", Grammar.from_regex(r"\(\d{3}\) \d{3}-\d{4}")),
        ("Count from 1 to 20, separated by commas.", None),
    ]:
        prompt = chat_prompt(tok, request)
        plain = generate(model, tok, prompt, grammar, max_tokens=14)
        junk = generate(model, tok, prompt, grammar, max_tokens=14, speculative=JunkDrafter())
        assert junk.token_ids == plain.token_ids
    with pytest.raises(ValueError, match="speculative must be >= 0"):
        generate(model, tok, "Hi", max_tokens=2, speculative=-1)
