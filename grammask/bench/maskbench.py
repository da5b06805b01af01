"""`python -m grammask.bench jsonschema`: the MaskBench method over a folder of MaskBench files.

Each file holds a `schema` and `tests` (`{"valid", "data"}`). Per engine and schema: compile and
fill the first mask (TTFM), then for every test walk the Llama 3 tokens of `json.dumps(data)`
(`walk.walk`). A valid instance the engine rejects (or will not end) is a validation error; an
invalid one it takes whole and lets end (EOS allowed) is an invalidation error. A schema passes
when it compiles and has neither. Each engine runs in its own worker process under a per-schema
time limit, so timeouts and crashes are counted, not fatal.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from grammask.bench.engines import CompileError
from grammask.bench.stats import format_table, ratio, summarize
from grammask.bench.walk import first_mask, walk
from grammask.bench.workers import Context, EngineWorker

__all__ = ["SchemaResult", "category", "list_files", "report_maskbench", "run_maskbench"]

TBM_KEYS = ("avg", "p50", "p75", "p90", "p95", "p99", "p99.9", "max")
TTFM_KEYS = ("avg", "p50", "p75", "p90", "p99", "max")
CPU_KEYS = ("p99", "p99.9", "max")
_TRAILING_NUMBER = re.compile(r"_\d+$")


def category(file_name: str) -> str:
    """`Github_easy---o123.json` -> `Github_easy`; `BFCL_java_13.json` -> `BFCL_java`."""
    stem = Path(file_name).stem
    if "---" in stem:
        return stem.split("---", 1)[0]
    return _TRAILING_NUMBER.sub("", stem)


def list_files(folder: Path, *, prefix: str = "", stride: int = 1, limit: int | None = None) -> list[Path]:
    """The `*.json` files of `folder` whose names start with `prefix`, sorted; every `stride`-th
    of them (a sample that keeps each category's share), at most `limit`."""
    files = sorted(p for p in folder.glob("*.json") if p.name.startswith(prefix))[::stride]
    return files[:limit] if limit is not None else files


@dataclass
class SchemaResult:
    """One engine on one MaskBench file. `status`: ok, compile_error, exception, timeout, crash."""

    file: str
    category: str
    engine: str
    status: str
    error: str = ""
    ttfm_ms: float | None = None
    tests: int = 0
    validation_errors: int = 0
    invalidation_errors: int = 0
    #: Steps where the mask allowed the token but advancing refused it.
    inconsistent: int = 0
    tokens: int = 0
    #: Indices (into the file's `tests`) of the instances the engine got wrong.
    wrong_tests: list[int] = field(default_factory=list)
    tbm_us: np.ndarray = field(default_factory=lambda: np.empty(0, np.float32), repr=False)
    mask_us: np.ndarray = field(default_factory=lambda: np.empty(0, np.float32), repr=False)
    #: the thread's CPU time of each step (pauses of the machine are not in it)
    cpu_us: np.ndarray = field(default_factory=lambda: np.empty(0, np.float32), repr=False)

    @property
    def passed(self) -> bool:
        return self.status == "ok" and not self.validation_errors and not self.invalidation_errors

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("tbm_us", "mask_us", "cpu_us")}
        out["passed"] = self.passed
        out["tbm_us"] = summarize(self.tbm_us, TBM_KEYS)
        out["tbm_cpu_us"] = summarize(self.cpu_us, CPU_KEYS)
        return out


def _schema_task(context: Context, schema: Any, tests: list[tuple[bool, list[int]]]) -> dict[str, Any]:
    """Runs in the engine's worker: TTFM, then one walk per test instance."""
    bitmask = np.zeros((1, (context.vocab.size + 31) // 32), dtype=np.int32)
    t0 = perf_counter()
    try:
        compiled = context.engine.compile("json_schema", schema)
    except CompileError as exc:
        return {"status": "compile_error", "error": str(exc)}
    first_mask(compiled, bitmask)
    ttfm_ms = (perf_counter() - t0) * 1e3
    eos = sorted(int(t) for t in context.vocab.eos_ids)
    validation = invalidation = inconsistent = 0
    tbm, masks, cpu, wrong = [], [], [], []
    for index, (valid, tokens) in enumerate(tests):
        result = walk(compiled.session(), tokens, eos, bitmask)
        whole = result.accepted == len(tokens) and result.finished
        validation += valid and not whole
        invalidation += (not valid) and whole
        if valid != whole:
            wrong.append(index)
        inconsistent += result.inconsistent
        tbm.append(result.step_us)
        masks.append(result.mask_us)
        cpu.append(result.cpu_us)
    return {
        "status": "ok",
        "ttfm_ms": ttfm_ms,
        "validation_errors": validation,
        "invalidation_errors": invalidation,
        "inconsistent": inconsistent,
        "wrong_tests": wrong,
        "tbm_us": np.concatenate(tbm) if tbm else np.empty(0, np.float32),
        "mask_us": np.concatenate(masks) if masks else np.empty(0, np.float32),
        "cpu_us": np.concatenate(cpu) if cpu else np.empty(0, np.float32),
    }


def run_maskbench(
    files: Sequence[Path],
    workers: Sequence[EngineWorker],
    encode: Callable[[str], list[int]],
    *,
    timeout: float,
    progress: Callable[[int, int], None] | None = None,
) -> list[SchemaResult]:
    """Every file through every worker's engine, one schema at a time."""
    results = []
    for index, path in enumerate(files):
        spec = json.loads(path.read_text(encoding="utf-8"))
        tests = [(bool(t["valid"]), encode(json.dumps(t["data"]))) for t in spec.get("tests", [])]
        for worker in workers:
            results.append(_run_schema(worker, path.name, spec["schema"], tests, timeout))
        if progress is not None:
            progress(index + 1, len(files))
    return results


def _run_schema(
    worker: EngineWorker, name: str, schema: Any, tests: list[tuple[bool, list[int]]], timeout: float
) -> SchemaResult:
    out = worker.call(_schema_task, schema, tests, timeout=timeout)
    result = SchemaResult(name, category(name), worker.engine_name, out.status, out.error.strip()[-2000:])
    if out.status != "ok":
        return result
    value = out.value
    result.status = value["status"]
    result.error = value.get("error", "")
    if result.status == "ok":
        result.ttfm_ms = value["ttfm_ms"]
        result.tests = len(tests)
        result.validation_errors = value["validation_errors"]
        result.invalidation_errors = value["invalidation_errors"]
        result.inconsistent = value["inconsistent"]
        result.wrong_tests = value["wrong_tests"]
        result.tbm_us = value["tbm_us"]
        result.mask_us = value["mask_us"]
        result.cpu_us = value["cpu_us"]
        result.tokens = sum(len(t) for _, t in tests)
    return result


def _distribution_table(title: str, stats: dict[str, dict[str, float | None]], keys: Sequence[str]) -> str:
    """One row per statistic, one column per engine, then grammask/peer ratio columns."""
    engines = list(stats)
    peers = [e for e in engines if e != "grammask"] if "grammask" in stats else []
    header = ["", *engines, *(f"grammask / {p}" for p in peers)]
    rows: list[list[object]] = [
        [k, *(stats[e][k] for e in engines), *(ratio(stats["grammask"][k], stats[p][k]) for p in peers)] for k in keys
    ]
    return f"### {title}\n\n" + format_table(header, rows)


def _pooled(results: Sequence[SchemaResult], attr: str, keys: Sequence[str]) -> dict[str, float | None]:
    return summarize(np.concatenate([getattr(r, attr) for r in results] or [np.empty(0)]), keys)


def _failure_table(results: Sequence[SchemaResult], engines: Sequence[str], top: int) -> str:
    """The most frequent reasons a schema did not run, per engine (message heads, numbers and
    quoted names blanked so that one kind of failure counts once)."""
    rows: list[list[object]] = []
    for engine in engines:
        failed = [r for r in results if r.engine == engine and r.status != "ok"]
        reasons = Counter(f"{r.status}: {_reason(r.status, r.error)}" for r in failed)
        rows += [[engine, reason, count] for reason, count in reasons.most_common(top)]
    if not rows:
        return ""
    return "### Most frequent failures\n\n" + format_table(["engine", "reason", "schemas"], rows)


def _longest_table(per: dict[str, list[SchemaResult]], top: int) -> str:
    """Per engine, the `top` files with the longest step, each with that step: where a bound on
    one step is missed, and (CPU time beside the wall clock) whether the engine or a pause of the
    machine took the time. `step` counts from the file's first instance on."""
    rows: list[list[object]] = []
    for engine, results in per.items():
        longest = [(r, int(np.argmax(r.tbm_us))) for r in results if len(r.tbm_us)]
        longest.sort(key=lambda found: -float(found[0].tbm_us[found[1]]))
        for r, step in longest[:top]:
            cpu = float(r.cpu_us[step]) / 1e3 if step < len(r.cpu_us) else None
            rows.append([engine, r.file, step, float(r.tbm_us[step]) / 1e3, cpu])
    if not rows:
        return ""
    return "### Longest steps\n\n" + format_table(["engine", "file", "step", "ms", "CPU ms"], rows)


def _reason(status: str, error: str) -> str:
    """The line of `error` that says what went wrong (a traceback's last, a message's first)."""
    lines = error.strip().splitlines()
    head = (lines[-1] if status == "exception" else lines[0]) if lines else ""
    head = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "…", head)
    head = re.sub(r" at /\S*| at position .*", "", head)
    return re.sub(r"\d+", "N", head)[:110]


def report_maskbench(results: Sequence[SchemaResult], engines: Sequence[str]) -> str:
    """Counts, TBM and TTFM distributions, the longest steps, and the per-category pass table, as
    Markdown."""
    per = {e: [r for r in results if r.engine == e] for e in engines}
    count_rows: list[list[object]] = [
        ["schemas", *(len(per[e]) for e in engines)],
        ["passing", *(sum(r.passed for r in per[e]) for e in engines)],
        ["compile errors", *(sum(r.status == "compile_error" for r in per[e]) for e in engines)],
        ["validation errors (schemas)", *(sum(r.validation_errors > 0 for r in per[e]) for e in engines)],
        ["validation errors (instances)", *(sum(r.validation_errors for r in per[e]) for e in engines)],
        ["invalidation errors (schemas)", *(sum(r.invalidation_errors > 0 for r in per[e]) for e in engines)],
        ["invalidation errors (instances)", *(sum(r.invalidation_errors for r in per[e]) for e in engines)],
        ["mask/advance disagreements", *(sum(r.inconsistent for r in per[e]) for e in engines)],
        ["timeouts", *(sum(r.status == "timeout" for r in per[e]) for e in engines)],
        ["crashes", *(sum(r.status == "crash" for r in per[e]) for e in engines)],
        ["exceptions", *(sum(r.status == "exception" for r in per[e]) for e in engines)],
        ["tokens walked", *(sum(len(r.tbm_us) for r in per[e]) for e in engines)],
    ]
    out = ["### Results\n\n" + format_table(["", *engines], count_rows)]

    mask_keys = ("avg", "p50", "p99")
    tbm = {e: _pooled(per[e], "tbm_us", TBM_KEYS) for e in engines}
    mask = {e: _pooled(per[e], "mask_us", mask_keys) for e in engines}
    cpu = {e: _pooled(per[e], "cpu_us", CPU_KEYS) for e in engines}
    ttfm = {e: summarize([r.ttfm_ms for r in per[e] if r.ttfm_ms is not None], TTFM_KEYS) for e in engines}
    out.append(_distribution_table("TBM: time per token, mask + check + advance (µs)", tbm, TBM_KEYS))
    out.append(_distribution_table("TBM in the thread's CPU time, without the machine's pauses (µs)", cpu, CPU_KEYS))
    out.append(_distribution_table("Mask fill alone (µs)", mask, mask_keys))
    out.append(_distribution_table("TTFM: compile + first mask (ms)", ttfm, TTFM_KEYS))
    out.append(_longest_table(per, top=5))

    categories = sorted({r.category for r in results})
    cat_rows: list[list[object]] = []
    for cat in categories:
        row: list[object] = [cat, sum(1 for r in per[engines[0]] if r.category == cat)]
        row += [sum(r.passed for r in per[e] if r.category == cat) for e in engines]
        cat_rows.append(row)
    header = ["category", "schemas", *engines]
    out.append("### Passing schemas per category\n\n" + format_table(header, cat_rows))
    out.append(_failure_table(results, engines, top=8))
    return "\n\n".join(part for part in out if part)
