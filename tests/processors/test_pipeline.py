"""The pipeline: stage order, agreement with transformers' processor list, dead-row reports."""

import subprocess
import sys

import numpy as np
import pytest
import torch
from transformers import (
    LogitsProcessorList,
    MinPLogitsWarper,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from grammask.errors import GenerationError
from grammask.processors import (
    ForceTokens,
    GenerationContext,
    MinP,
    NoRepeatNGram,
    Pipeline,
    RepetitionPenalty,
    SuppressTokens,
    Temperature,
    TopK,
    TopP,
)

RNG = np.random.default_rng(9)
LOGITS = RNG.standard_normal((4, 50)) * 3
SEQUENCES = RNG.integers(0, 8, size=(4, 10))


def test_processors_run_in_stage_order():
    topk, temp, suppress, penalty = TopK(3), Temperature(0.5), SuppressTokens([1]), RepetitionPenalty(1.1)
    assert Pipeline([topk, temp, suppress, penalty]).processors == (suppress, penalty, temp, topk)


def test_matches_transformers_processor_list(xp):
    ours = Pipeline([Temperature(0.7), TopK(20), TopP(0.9), MinP(0.02), RepetitionPenalty(1.3), NoRepeatNGram(2)])
    theirs = LogitsProcessorList(
        [
            RepetitionPenaltyLogitsProcessor(1.3),
            NoRepeatNGramLogitsProcessor(2),
            TemperatureLogitsWarper(0.7),
            TopKLogitsWarper(20),
            TopPLogitsWarper(0.9),
            MinPLogitsWarper(0.02),
        ]
    )
    expected = theirs(torch.from_numpy(SEQUENCES), torch.from_numpy(LOGITS.copy())).numpy()
    ctx = GenerationContext(xp(SEQUENCES), 6, 10)
    got, state = ours.process(xp(LOGITS), ours.init(4), ctx)
    np.testing.assert_allclose(xp.host(got), expected)
    assert state == (None,) * 6


def test_empty_pipeline_passes_logits_through(xp):
    got, _ = Pipeline([]).process(xp(LOGITS), (), GenerationContext(xp(SEQUENCES), 10, 10))
    assert np.array_equal(xp.host(got), LOGITS)


def test_dead_row_names_the_processor(xp):
    pipeline = Pipeline([SuppressTokens([3]), ForceTokens({0: 3}), Temperature(2.0)])
    logits = LOGITS.copy()
    message = r"row 0: every token is masked at position 10; .* by ForceTokens\(\{0: \(3,\)\}\)"
    with pytest.raises(GenerationError, match=message):
        pipeline.process(xp(logits), pipeline.init(4), GenerationContext(xp(SEQUENCES), 10, 10))


def test_dead_row_from_the_model_is_reported(xp):
    logits = LOGITS.copy()
    logits[2] = -np.inf
    with pytest.raises(GenerationError, match=r"row 2: .* by the model's logits"):
        Pipeline([TopK(5)]).process(xp(logits), (None,), GenerationContext(xp(SEQUENCES), 10, 10))


def test_seeded_sampling_over_steps_is_reproducible(xp):
    pipeline = Pipeline([Temperature(1.5), SuppressTokens(range(0, 50, 2))])

    def run(seed):
        generator, state, sequences, drawn = xp.generator(seed), pipeline.init(4), SEQUENCES, []
        for _ in range(5):
            ctx = GenerationContext(xp(sequences), 10, sequences.shape[1])
            tokens, state = pipeline.sample(xp(LOGITS), state, ctx, generator)
            sequences = np.concatenate([sequences, xp.host(tokens)[:, None]], axis=1)
            drawn.append(xp.host(tokens))
        return np.stack(drawn)

    first = run(4)
    assert np.array_equal(first, run(4))
    assert (first % 2 == 1).all()
    assert len(np.unique(first)) > 3, "draws vary from step to step"


def test_greedy_selects_the_best_allowed_token(xp):
    tokens, _ = Pipeline([SuppressTokens(LOGITS.argmax(axis=1))]).greedy(
        xp(LOGITS), (None,), GenerationContext(xp(SEQUENCES), 10, 10)
    )
    second_best = np.argsort(LOGITS, axis=1)[:, -2]
    assert np.array_equal(xp.host(tokens), second_best)


def test_importing_processors_does_not_import_torch():
    code = (
        "import sys, numpy as np, grammask.processors as p; "
        "p.TopK(2).apply(np.zeros((1, 4)), None); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
