"""GenerationContext checks its shape and reports progress."""

import numpy as np
import pytest

from grammask.processors import GenerationContext, LogitsProcessor, Stage, TopK


def test_start_and_generated():
    ctx = GenerationContext.start(np.zeros((2, 5), dtype=np.int64))
    assert (ctx.input_length, ctx.current_length, ctx.generated) == (5, 5, 0)
    assert GenerationContext(np.zeros((2, 8)), 5, 8).generated == 3


@pytest.mark.parametrize(
    ("columns", "input_length", "current_length", "message"),
    [
        (4, 5, 4, "input_length 5 must lie in"),
        (4, 2, 5, r"sequences of shape \(2, 4\) do not have current_length 5 columns"),
    ],
)
def test_inconsistent_context_is_rejected(columns, input_length, current_length, message):
    with pytest.raises(ValueError, match=message):
        GenerationContext(np.zeros((2, columns)), input_length, current_length)


def test_builtin_processors_follow_the_protocol():
    assert isinstance(TopK(3), LogitsProcessor)
    assert TopK.stage is Stage.TRUNCATION
