"""`walk`: one timed pass of an engine through the tokens of a text."""

from __future__ import annotations

import numpy as np

from grammask.bench.engines import Engine
from grammask.bench.walk import first_mask, walk
from grammask.vocab.vocabulary import Vocabulary

DATE = r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"


def _bitmask(vocab: Vocabulary) -> np.ndarray:
    return np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)


def test_accepted_text_finishes(engine: Engine, llama3: Vocabulary, tokenizer) -> None:
    tokens = tokenizer.encode("2024-02-29")
    session = engine.compile("regex", DATE).session()
    result = walk(session, tokens, llama3.eos_ids, _bitmask(llama3), keep_masks=True)
    assert (result.accepted, result.finished, result.inconsistent) == (len(tokens), True, 0)
    # One timed step per token, plus the final mask that reads the EOS bits.
    assert len(result.mask_us) == len(result.step_us) == len(result.masks) == len(tokens) + 1
    assert (result.step_us >= result.mask_us).all() and (result.mask_us > 0).all()
    # The thread's CPU time per step, not since the walk began (that would sum to about four times
    # the wall clock's here). On a shared virtual machine the two clocks disagree by tens of percent
    # (a CI run saw 852 µs of CPU time in 638 µs of wall clock over these seven steps): half as much
    # again is allowed, and the cumulative time would still be caught.
    assert len(result.cpu_us) == len(tokens) + 1 and (result.cpu_us > 0).all()
    assert result.cpu_us.sum() <= 1.5 * result.step_us.sum() + 20 * len(result.cpu_us)


def test_prefix_is_accepted_but_not_finished(engine: Engine, llama3: Vocabulary, tokenizer) -> None:
    tokens = tokenizer.encode("2024-02")
    result = walk(engine.compile("regex", DATE).session(), tokens, llama3.eos_ids, _bitmask(llama3))
    assert (result.accepted, result.finished) == (len(tokens), False)


def test_walk_stops_at_first_rejected_token(engine: Engine, llama3: Vocabulary, tokenizer) -> None:
    tokens = tokenizer.encode("2024-13-01")
    good = len(tokenizer.encode("2024-"))
    assert tokenizer.encode("2024-")[:good] == tokens[:good]
    session = engine.compile("regex", DATE).session()
    result = walk(session, tokens, llama3.eos_ids, _bitmask(llama3), keep_masks=True)
    assert (result.accepted, result.finished, result.inconsistent) == (good, False, 0)
    assert len(result.mask_us) == len(result.masks) == good + 1


def test_first_mask_fills_the_bitmask(engine: Engine, llama3: Vocabulary, tokenizer) -> None:
    bitmask = _bitmask(llama3)
    first_mask(engine.compile("regex", DATE), bitmask)
    digit = tokenizer.encode("2024")[0]
    assert (bitmask[0, digit >> 5] >> (digit & 31)) & 1
    assert not (bitmask[0, tokenizer.encode("-")[0] >> 5] >> (tokenizer.encode("-")[0] & 31)) & 1
