"""The `grammars` mode: sample texts are valid, runs produce comparable masks, the report."""

from __future__ import annotations

import numpy as np
import pytest
import regex

from grammask import assets
from grammask.bench.engines import engine_available
from grammask.bench.grammars import CaseResult, compare_masks, report_grammars, run_grammars
from grammask.bench.samples import GBNF_TEXTS, REGEX_CASES, cases
from grammask.bench.workers import EngineWorker
from grammask.engine.recognize import accepts
from grammask.grammar import Grammar
from grammask.vocab.vocabulary import Vocabulary


@pytest.mark.parametrize("case", REGEX_CASES, ids=lambda c: c.name)
def test_regex_samples_match(case) -> None:
    assert regex.fullmatch(case.source, case.text) is not None


def test_every_llama_cpp_grammar_has_a_sample() -> None:
    stems = {p.stem for p in (assets.llama_cpp_vendor_dir() / "grammars").glob("*.gbnf")}
    assert stems == set(GBNF_TEXTS)


@pytest.mark.parametrize("case", [c for c in cases() if c.fmt == "gbnf"], ids=lambda c: c.name)
def test_gbnf_samples_are_sentences(case) -> None:
    grammar = Grammar.from_ebnf(case.source)
    assert accepts(grammar, case.text)
    assert not accepts(grammar, case.text + "\x00")


@pytest.fixture(scope="module")
def peer_results(tokenizer):
    peers = [n for n in ("llguidance", "xgrammar") if engine_available(n)]
    if len(peers) < 2:
        pytest.skip("needs llguidance and xgrammar")
    with (
        EngineWorker(peers[0], assets.vocab_gguf_path("llama-bpe")) as a,
        EngineWorker(peers[1], assets.vocab_gguf_path("llama-bpe")) as b,
    ):
        return run_grammars([a, b], tokenizer.encode, timeout=120, only=["iso_date", "arithmetic"])


def test_peers_agree_on_regex_masks(peer_results, llama3: Vocabulary) -> None:
    llg, xgr = (r for r in peer_results if r.case == "iso_date")
    assert llg.status == xgr.status == "ok"
    steps, differ, first = compare_masks(llg, xgr, llama3.token_bytes)
    assert (steps, differ, first) == (llg.tokens + 1, 0, "")


def test_compare_masks_names_the_differing_tokens(peer_results, llama3: Vocabulary) -> None:
    llg, xgr = (r for r in peer_results if r.case == "iso_date")
    words = np.frombuffer(xgr.masks[0], np.int32).copy()
    words[0] ^= 1 << 15  # flip token 15 ("0") at the first step
    xgr.masks = [words.tobytes(), *xgr.masks[1:]]
    steps, differ, first = compare_masks(llg, xgr, llama3.token_bytes)
    assert differ == 1
    assert first.startswith("step 0:") and "b'0'" in first


def test_report_lists_every_case_and_the_lexer_difference(peer_results, llama3: Vocabulary) -> None:
    report = report_grammars(peer_results, ["llguidance", "xgrammar"], llama3.token_bytes)
    assert "### llguidance" in report and "### xgrammar" in report
    # llguidance lexes greedily: its `ws` swallows the newline the arithmetic grammar needs.
    arithmetic = [r for r in peer_results if r.case == "arithmetic"]
    assert {r.engine: r.status for r in arithmetic} == {"llguidance": "rejected", "xgrammar": "ok"}
    assert "rejected token" in report and "| arithmetic" in report


def test_report_counts_the_formats_whose_step_p99_is_at_or_below_the_peers() -> None:
    def result(case: str, engine: str, step_us: list[float]) -> CaseResult:
        steps = np.array(step_us, dtype=np.float32)
        return CaseResult(case, "regex", engine, len(steps), "ok", ttfm_ms=1.0, mask_us=steps, step_us=steps)

    results = [
        result("fast", "grammask", [10] * 100),
        result("fast", "llguidance", [20] * 100),
        result("even", "grammask", [30] * 100),
        result("even", "llguidance", [30] * 100),
        result("slow", "grammask", [90] * 100),
        result("slow", "llguidance", [30] * 100),
        result("broken", "grammask", []),  # no steps timed: left out of the count
        result("broken", "llguidance", [10] * 100),
    ]
    report = report_grammars(results, ["grammask", "llguidance"], [])
    assert "step p99 vs llguidance" in report
    assert "- step p99 at or below llguidance's: 2 of 3 formats; above: slow 3.00x" in report
