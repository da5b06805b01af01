"""`python -m grammask.bench grammars`: regexes and llama.cpp GBNF grammars, engine by engine.

For every format in `samples.cases()` and every engine: time-to-first-mask (compile, matcher,
first mask), then one walk through the Llama 3 tokens of the sample text (`walk.walk`). The masks
of every step come back, so the engines can be compared bit for bit afterwards: a mismatch is a
lead to follow (one engine is wrong, or the engines read the format differently), not a verdict.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import numpy as np

from grammask.bench.engines import CompileError
from grammask.bench.samples import Case, cases
from grammask.bench.stats import format_table, ratio, summarize
from grammask.bench.walk import first_mask, walk
from grammask.bench.workers import Context, EngineWorker

__all__ = ["CaseResult", "compare_masks", "report_grammars", "run_grammars"]

_STEP_KEYS = ("p50", "p99", "max")


@dataclass
class CaseResult:
    """One engine on one case; `status` is ok / rejected / unfinished / compile_error /
    exception / timeout / crash."""

    case: str
    fmt: str
    engine: str
    tokens: int
    status: str
    error: str = ""
    ttfm_ms: float | None = None
    accepted: int = 0
    mask_us: np.ndarray = field(default_factory=lambda: np.empty(0, np.float32))
    step_us: np.ndarray = field(default_factory=lambda: np.empty(0, np.float32))
    masks: list[bytes] = field(default_factory=list)


def _case_task(context: Context, fmt: str, source: str, tokens: list[int]) -> dict[str, Any]:
    """Runs in the engine's worker: TTFM, then the walk with every mask kept (compressed)."""
    bitmask = np.zeros((1, (context.vocab.size + 31) // 32), dtype=np.int32)
    t0 = perf_counter()
    try:
        compiled = context.engine.compile(fmt, source)
    except CompileError as exc:
        return {"status": "compile_error", "error": str(exc)}
    first_mask(compiled, bitmask)
    ttfm_ms = (perf_counter() - t0) * 1e3
    eos = sorted(int(t) for t in context.vocab.eos_ids)
    result = walk(compiled.session(), tokens, eos, bitmask, keep_masks=True)
    if result.accepted < len(tokens):
        status = "rejected"
    else:
        status = "ok" if result.finished else "unfinished"
    return {
        "status": status,
        "ttfm_ms": ttfm_ms,
        "accepted": result.accepted,
        "mask_us": result.mask_us,
        "step_us": result.step_us,
        "masks": zlib.compress(b"".join(result.masks), 1),
        "inconsistent": result.inconsistent,
    }


def run_grammars(
    workers: Sequence[EngineWorker], encode: Any, *, timeout: float, only: Sequence[str] = ()
) -> list[CaseResult]:
    """Every case (or those named in `only`) through every worker's engine."""
    selected = [c for c in cases() if not only or c.name in only]
    results = []
    for case in selected:
        tokens = encode(case.text)
        for worker in workers:
            results.append(_run_case(worker, case, tokens, timeout))
    return results


def _run_case(worker: EngineWorker, case: Case, tokens: list[int], timeout: float) -> CaseResult:
    out = worker.call(_case_task, case.fmt, case.source, tokens, timeout=timeout)
    result = CaseResult(case.name, case.fmt, worker.engine_name, len(tokens), out.status, out.error)
    if out.status != "ok":
        return result
    value = out.value
    result.status = value["status"]
    result.error = value.get("error", "")
    if result.status == "compile_error":
        return result
    if value["inconsistent"]:
        result.error = "mask allowed a token that advance refused"
    result.ttfm_ms = value["ttfm_ms"]
    result.accepted = value["accepted"]
    result.mask_us = value["mask_us"]
    result.step_us = value["step_us"]
    raw = zlib.decompress(value["masks"])
    width = len(raw) // max(1, len(result.mask_us))
    result.masks = [raw[i : i + width] for i in range(0, len(raw), width)]
    return result


def compare_masks(a: CaseResult, b: CaseResult, token_bytes: Sequence[bytes]) -> tuple[int, int, str]:
    """(steps compared, steps whose masks differ, the first difference in words)."""
    steps = min(len(a.masks), len(b.masks))
    differing = [i for i in range(steps) if a.masks[i] != b.masks[i]]
    if not differing:
        return steps, 0, ""
    i = differing[0]
    bits_a = np.unpackbits(np.frombuffer(a.masks[i], np.uint8), bitorder="little")
    bits_b = np.unpackbits(np.frombuffer(b.masks[i], np.uint8), bitorder="little")
    only_a = np.flatnonzero(bits_a & ~bits_b)
    only_b = np.flatnonzero(bits_b & ~bits_a)

    def show(ids: np.ndarray) -> str:
        if not len(ids):
            return "none"
        shown = ", ".join(repr(token_bytes[t]) if t < len(token_bytes) else str(t) for t in ids[:3])
        return f"{len(ids)} ({shown}{', ...' if len(ids) > 3 else ''})"

    return steps, len(differing), f"step {i}: only {a.engine} {show(only_a)}; only {b.engine} {show(only_b)}"


def _status_cell(r: CaseResult) -> str:
    if r.status == "rejected":
        return f"rejected token {r.accepted}/{r.tokens}"
    last_line = r.error.strip().splitlines()[-1] if r.error.strip() else ""
    return f"{r.status}: {last_line[:100]}" if last_line else r.status


#: Results by (case name, engine name).
_ByKey = dict[tuple[str, str], CaseResult]


def _stat(values: np.ndarray, key: str) -> float | None:
    """One statistic of `summarize` ("p50", "p99", ...)."""
    return summarize(values, [key])[key]


def _engine_table(engine: str, rows_in: Sequence[CaseResult]) -> str:
    header = ["format", "kind", "tokens", "TTFM ms"]
    header += [f"mask {k} µs" for k in _STEP_KEYS] + [f"step {k} µs" for k in _STEP_KEYS] + ["status"]
    rows: list[list[object]] = []
    for r in rows_in:
        mask, step = summarize(r.mask_us, _STEP_KEYS), summarize(r.step_us, _STEP_KEYS)
        rows.append([r.case, r.fmt, r.tokens, r.ttfm_ms, *mask.values(), *step.values(), _status_cell(r)])
    pooled_mask = summarize(np.concatenate([r.mask_us for r in rows_in]), _STEP_KEYS)
    pooled_step = summarize(np.concatenate([r.step_us for r in rows_in]), _STEP_KEYS)
    ttfm = summarize([r.ttfm_ms for r in rows_in if r.ttfm_ms is not None], ["p50"])["p50"]
    steps = sum(len(r.mask_us) for r in rows_in)
    pooled = [*pooled_mask.values(), *pooled_step.values()]
    rows.append(["all (pooled)", "", steps, ttfm, *pooled, "TTFM: median"])
    return f"### {engine}\n\n" + format_table(header, rows)


def _ratio_table(by_key: _ByKey, names: Sequence[str], peers: Sequence[str]) -> str:
    whats = ("TTFM", "mask p50", "step p50", "step p99")
    header = ["format"] + [f"{what} vs {p}" for p in peers for what in whats]
    rows = []
    for name in names:
        ours = by_key[(name, "grammask")]
        row: list[object] = [name]
        for p in peers:
            theirs = by_key[(name, p)]
            row += [
                ratio(ours.ttfm_ms, theirs.ttfm_ms),
                ratio(_stat(ours.mask_us, "p50"), _stat(theirs.mask_us, "p50")),
                ratio(_stat(ours.step_us, "p50"), _stat(theirs.step_us, "p50")),
                ratio(_stat(ours.step_us, "p99"), _stat(theirs.step_us, "p99")),
            ]
        rows.append(row)
    lines = [_p99_verdict(by_key, names, p) for p in peers]
    table = format_table(header, rows)
    return "### Ratios grammask / peer (below 1 = grammask faster)\n\n" + table + "\n\n" + "\n".join(lines)


def _p99_verdict(by_key: _ByKey, names: Sequence[str], peer: str) -> str:
    """How many formats have grammask's step p99 at or below `peer`'s (the target of the
    benchmark), and which are above, worst first. Only formats where both engines timed steps."""
    ratios = {}
    for name in names:
        ours = _stat(by_key[(name, "grammask")].step_us, "p99")
        theirs = _stat(by_key[(name, peer)].step_us, "p99")
        if ours is not None and theirs:
            ratios[name] = ours / theirs
    above = sorted((r, name) for name, r in ratios.items() if r > 1)[::-1]
    listed = ", ".join(f"{name} {r:.2f}x" for r, name in above) or "none"
    return f"- step p99 at or below {peer}'s: {len(ratios) - len(above)} of {len(ratios)} formats; above: {listed}"


def _crosscheck_table(
    by_key: _ByKey, names: Sequence[str], engines: Sequence[str], token_bytes: Sequence[bytes]
) -> str:
    pairs = [(a, b) for i, a in enumerate(engines) for b in engines[i + 1 :]]
    rows = []
    for name in names:
        for a, b in pairs:
            ra, rb = by_key[(name, a)], by_key[(name, b)]
            if ra.masks and rb.masks:
                steps, differ, first = compare_masks(ra, rb, token_bytes)
                rows.append([name, ra.fmt, f"{a} / {b}", steps, differ, first])
    if not rows:
        return ""
    header = ["format", "kind", "engines", "steps", "differ", "first difference"]
    return "### Mask cross-check (steps where two engines' bitmasks differ)\n\n" + format_table(header, rows)


def report_grammars(results: Sequence[CaseResult], engines: Sequence[str], token_bytes: Sequence[bytes]) -> str:
    """Per-engine tables, grammask/peer ratios, and the mask cross-check, as Markdown."""
    by_key = {(r.case, r.engine): r for r in results}
    names = list(dict.fromkeys(r.case for r in results))
    out = [_engine_table(e, [by_key[(n, e)] for n in names]) for e in engines]
    peers = [e for e in engines if e != "grammask"]
    if "grammask" in engines and peers:
        out.append(_ratio_table(by_key, names, peers))
    out.append(_crosscheck_table(by_key, names, engines, token_bytes))
    return "\n\n".join(part for part in out if part)
