"""Ratchet on the JSON-Schema-Test-Suite: per file, no fewer groups compiled and no more false
accepts or false rejects than the committed baseline (`python -m tests.jsts.suite --update`
rewrites it after an improvement)."""

from __future__ import annotations

import json

import pytest

from .suite import BASELINE, run_suite, totals


@pytest.fixture(scope="module")
def figures() -> dict[str, dict[str, int]]:
    return run_suite()


def test_no_file_regresses(figures):
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    worse = []
    for name, row in figures.items():
        was = baseline.get(name, {"groups": row["groups"], "compiled": 0, "false_accepts": 0, "false_rejects": 0})
        if (
            row["compiled"] < was["compiled"]
            or row["false_accepts"] > was["false_accepts"]
            or row["false_rejects"] > was["false_rejects"]
        ):
            worse.append(f"{name}: {row} (baseline {was})")
    assert not worse, "JSON-Schema-Test-Suite regressions:\n" + "\n".join(worse)


def test_no_false_accepts(figures):
    assert totals(figures)["false_accepts"] == 0
