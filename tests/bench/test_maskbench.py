"""The MaskBench runner over real MaskBench files: categories, pass/fail accounting, the report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from grammask import assets
from grammask.bench.engines import engine_available
from grammask.bench.maskbench import SchemaResult, category, list_files, report_maskbench, run_maskbench
from grammask.bench.tokenize import Llama3Tokenizer
from grammask.bench.workers import EngineWorker

MASKBENCH = Path(__file__).resolve().parents[3] / "shared" / "maskbench-dev"
#: for the tests that read MaskBench files (the report's tests build their results)
needs_maskbench = pytest.mark.skipif(not MASKBENCH.is_dir(), reason="no ../shared/maskbench-dev")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Github_easy---o17614.json", "Github_easy"),
        ("WashingtonPost---wp_99_Normalized.json", "WashingtonPost"),
        ("BFCL_java_13.json", "BFCL_java"),
        ("BFCL_parallel_multiple_7.json", "BFCL_parallel_multiple"),
    ],
)
def test_category(name: str, expected: str) -> None:
    assert category(name) == expected


@needs_maskbench
def test_list_files_filters_sorts_and_limits() -> None:
    files = list_files(MASKBENCH, prefix="BFCL_java_", limit=5)
    assert len(files) == 5
    assert [f.name for f in files] == sorted(f.name for f in files)
    assert all(f.name.startswith("BFCL_java_") for f in files)
    everything = list_files(MASKBENCH, prefix="BFCL_java_")
    assert len(everything) == 42
    assert list_files(MASKBENCH, prefix="BFCL_java_", stride=10) == everything[::10]


@pytest.fixture(scope="module")
def flipped(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two real files, plus a copy of the first whose valid instances are all marked invalid."""
    folder = tmp_path_factory.mktemp("maskbench")
    originals = list_files(MASKBENCH, prefix="BFCL_simple_", limit=2)
    for path in originals:
        shutil.copy(path, folder / path.name)
    spec = json.loads(originals[0].read_text(encoding="utf-8"))
    assert any(t["valid"] for t in spec["tests"])
    for test in spec["tests"]:
        test["valid"] = not test["valid"]
    (folder / "Flipped---x1.json").write_text(json.dumps(spec), encoding="utf-8")
    return list_files(folder)


@needs_maskbench
@pytest.mark.parametrize("name", ["llguidance", "grammask"])
def test_run_counts_invalidation_errors(name: str, flipped: list[Path]) -> None:
    if not engine_available(name):
        pytest.skip(f"{name} is not installed")
    tokenizer = Llama3Tokenizer(assets.vocab_gguf_path("llama-bpe"))
    with EngineWorker(name, assets.vocab_gguf_path("llama-bpe")) as worker:
        results = run_maskbench(flipped, [worker], tokenizer.encode, timeout=120)
    by_file = {r.file: r for r in results}
    flipped_result = by_file.pop("Flipped---x1.json")
    assert all(r.passed for r in by_file.values()), [r.error for r in by_file.values()]
    assert flipped_result.status == "ok" and not flipped_result.passed
    assert flipped_result.invalidation_errors >= 1
    # flipped[0] is the original of the flipped copy: an exact engine gets every flipped label wrong.
    n_tests = len(json.loads(flipped[0].read_text())["tests"])
    assert flipped_result.tests == n_tests
    assert flipped_result.wrong_tests == list(range(n_tests))
    assert len(flipped_result.tbm_us) > flipped_result.tests
    report = report_maskbench(results, [name])
    assert "| Flipped" in report and "| BFCL_simple" in report
    assert json.dumps([r.to_json() for r in results])


def test_report_counts_failures_and_ratios() -> None:
    results = [
        SchemaResult("A---1.json", "A", "grammask", "compile_error", "unsupported keyword 'if' at /a/0"),
        SchemaResult("A---1.json", "A", "llguidance", "ok", ttfm_ms=2.0, tests=1),
        SchemaResult("B---2.json", "B", "grammask", "timeout"),
        SchemaResult("B---2.json", "B", "llguidance", "ok", ttfm_ms=4.0, tests=1, validation_errors=1),
    ]
    report = report_maskbench(results, ["grammask", "llguidance"])

    def cells(label: str) -> list[str]:
        line = next(line for line in report.splitlines() if line.startswith(f"| {label} "))
        return [c.strip() for c in line.split("|")[2:4]]

    assert cells("passing") == ["0", "1"]
    assert cells("timeouts") == ["1", "0"]
    assert cells("compile errors") == ["1", "0"]
    assert cells("validation errors (schemas)") == ["0", "1"]
    assert "grammask / llguidance" in report
    # Failure reasons are grouped with names, numbers and pointers blanked.
    assert "| grammask | compile_error: unsupported keyword … " in report


def test_report_names_the_files_of_the_longest_steps() -> None:
    """Each file's longest step, longest first, five per engine, with its CPU time."""
    results = []
    for i, longest in enumerate([3.0, 90.0, 12.0, 7.0, 150.0, 40.0]):
        steps = np.array([1.0, longest * 1000, 2.0], dtype=np.float32)
        results.append(
            SchemaResult(f"A---{i}.json", "A", "grammask", "ok", ttfm_ms=1.0, tbm_us=steps, cpu_us=steps / 2)
        )
    report = report_maskbench(results, ["grammask"])
    section = report.split("### Longest steps")[1].split("###")[0]
    lines = [line for line in section.splitlines() if line.startswith("| grammask")]
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in lines]
    assert [r[1] for r in rows] == ["A---4.json", "A---1.json", "A---5.json", "A---2.json", "A---3.json"]
    assert rows[0][2:] == ["1", "150", "75"]
