"""`python -m grammask.bench`: both modes end to end on real data, with one engine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grammask.bench.batch import report_batch
from grammask.bench.cli import main
from grammask.bench.engines import engine_available

MASKBENCH = Path(__file__).resolve().parents[3] / "shared" / "maskbench-dev"
pytestmark = pytest.mark.skipif(not engine_available("llguidance"), reason="needs llguidance")


def test_grammars_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grammars", "--engines", "llguidance", "--only", "uuid", "chess"]) == 0
    out = capsys.readouterr().out
    assert "- llguidance: " in out and "| llguidance | " in out
    assert "| uuid " in out and "| chess " in out and "| ok " in out


@pytest.mark.skipif(not MASKBENCH.is_dir(), reason="no ../shared/maskbench-dev")
def test_jsonschema_mode_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "results.json"
    argv = ["jsonschema", str(MASKBENCH), "--engines", "llguidance", "--filter", "BFCL_sql", "--limit", "3"]
    assert main([*argv, "--json-out", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "| BFCL_sql " in out and "TTFM" in out and "p99.9" in out
    payload = json.loads(out_file.read_text())
    files = [r["file"] for r in payload["results"]]
    assert files == ["BFCL_sql_12.json", "BFCL_sql_13.json", "BFCL_sql_22.json"]
    assert all(r["engine"] == "llguidance" and r["passed"] for r in payload["results"])
    assert payload["environment"]["llguidance"]


@pytest.mark.skipif(not MASKBENCH.is_dir(), reason="no ../shared/maskbench-dev")
def test_batch_mode(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["batch", str(MASKBENCH), "--engines", "llguidance", "--sizes", "1,2", "--passes", "2", "--stride", "400"]
    assert main(argv) == 0
    out = capsys.readouterr().out.split("Time to fill one batch bitmask")[1]
    header = next(line for line in out.splitlines() if line.startswith("| engine "))
    table = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| llguidance ")]
    assert [cells[1].strip() for cells in table] == ["1", "2"]  # the rows of each batch
    # the second pass alone, in the last two columns
    assert [cell.strip() for cell in header.split("|")[-3:-1]] == ["later p50 µs", "later p99 µs"]
    assert all(float(cells[-1]) > 0 for cells in table)


def test_batch_report_reads_the_later_passes_apart() -> None:
    result = {"rows": 2, "steps_us": [900.0, 700.0, 500.0, 3.0, 5.0, 4.0], "first_pass": 3}
    report = report_batch({("grammask", 2): result}, ["grammask"])
    line = next(line for line in report.splitlines() if line.startswith("| grammask"))
    cells = [cell.strip() for cell in line.split("|")[1:-1]]
    assert cells[2] == "252" and cells[-2:] == ["4", "4.98"]  # all passes' p50; the later p50 and p99


@pytest.mark.parametrize("mode", ["jsonschema", "batch"])
def test_a_folder_without_maskbench_files_is_an_error(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([mode, str(tmp_path), "--engines", "llguidance"]) == 1
    assert f"no MaskBench files in {tmp_path}" in capsys.readouterr().err


def test_bad_arguments() -> None:
    assert main(["grammars", "--engines", "outlines"]) == 2
    with pytest.raises(SystemExit):
        main(["nonsense"])


def test_module_entry_point() -> None:
    done = subprocess.run([sys.executable, "-m", "grammask.bench", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "grammars" in done.stdout and "jsonschema" in done.stdout
