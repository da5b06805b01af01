"""Percentile summaries and the Markdown tables of the benchmark reports."""

from __future__ import annotations

import numpy as np
import pytest

from grammask.bench.stats import format_table, ratio, summarize


def test_summarize_percentiles_match_numpy() -> None:
    values = np.arange(1, 1001, dtype=np.float64)
    out = summarize(values, ["n", "avg", "p50", "p99.9", "max"])
    assert out == {
        "n": 1000.0,
        "avg": 500.5,
        "p50": 500.5,
        "p99.9": pytest.approx(np.percentile(values, 99.9)),
        "max": 1000.0,
    }


def test_summarize_empty_sample_gives_none() -> None:
    assert summarize([], ["n", "p50", "max"]) == {"n": 0.0, "p50": None, "max": None}


def test_summarize_rejects_unknown_statistic() -> None:
    with pytest.raises(ValueError, match="median"):
        summarize([1.0], ["median"])


@pytest.mark.parametrize(
    ("ours", "theirs", "expected"),
    [
        (3.0, 1.5, "2.00x"),
        (1.0, 4.0, "0.25x"),
        (1.0, 240.0, "0.0042x"),
        (None, 1.0, "-"),
        (1.0, None, "-"),
        (1.0, 0.0, "-"),
    ],
)
def test_ratio(ours: float | None, theirs: float | None, expected: str) -> None:
    assert ratio(ours, theirs) == expected


def test_format_table_aligns_numbers_right_and_text_left() -> None:
    table = format_table(["name", "µs"], [["a", 1.5], ["longer", 1234.0], ["none", None]])
    lines = table.splitlines()
    assert lines[0] == "| name   |   µs |"
    assert lines[1] == "|--------|-----:|"
    assert lines[2] == "| a      |  1.5 |"
    assert lines[3] == "| longer | 1234 |"
    assert lines[4] == "| none   |    - |"
