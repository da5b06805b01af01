"""`python -m grammask.bench batch`: one bitmask for a batch of rows with different grammars.

A serving engine fills the masks of all its rows at once, between two forward passes. Here each
row follows its own MaskBench schema through the tokens of one of its valid instances (a finished
row starts over). Per step, one call fills the whole `[rows, words]` bitmask: grammask's
`BatchMatcher.fill_bitmask`, llguidance's `fill_next_token_bitmask_par` on a one-thread executor.
The time per batch is reported for several batch sizes, so it shows whether the cost grows with
the number of rows (it should) and not with anything more. The first pass over each row's tokens
meets every position for the first time, as generation mostly does; the passes after it meet them
again, and show what the fill itself costs (the "later" columns).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from time import perf_counter_ns
from typing import Any

import numpy as np

from grammask.bench.stats import format_table, summarize
from grammask.bench.workers import Context, EngineWorker

__all__ = ["report_batch", "run_batch"]

KEYS = ("p50", "p90", "p99", "max")
#: Statistics of the passes after the first, where every row meets positions it has met before.
LATER = ("p50", "p99")


def _rows(files: Sequence[Path], encode: Callable[[str], list[int]], count: int) -> list[tuple[Any, list[int]]]:
    """(schema, tokens of its first valid instance) for `count` files that have one."""
    rows = []
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        valid = [t["data"] for t in data.get("tests", []) if t.get("valid")]
        if valid:
            rows.append((data["schema"], encode(json.dumps(valid[0]))))
        if len(rows) == count:
            break
    return rows


def _batch_task(context: Context, rows: list[tuple[Any, list[int]]], passes: int) -> dict[str, Any]:
    """In the worker: compile every row's schema, then time `passes` passes of batch fills."""
    engine = context.engine
    kept, sessions = [], []
    for schema, tokens in rows:
        try:
            compiled = engine.compile("json_schema", schema)
        except Exception:  # noqa: BLE001 - a schema this engine refuses leaves the batch
            continue
        kept.append((compiled, tokens))
        sessions.append(compiled.session())
    fill = engine.batch_filler(sessions)
    bitmask = np.zeros((len(sessions), (context.vocab.size + 31) // 32), dtype=np.int32)
    position = [0] * len(sessions)
    times = []
    # A pass: every row through its tokens and the position after its last one (then it starts over).
    first_pass = max(len(tokens) for _, tokens in kept) + 1 if kept else 0
    for _ in range(first_pass * passes):
        start = perf_counter_ns()
        fill(bitmask)
        times.append((perf_counter_ns() - start) / 1e3)
        for i, (compiled, tokens) in enumerate(kept):
            if position[i] == len(tokens) or not sessions[i].advance(tokens[position[i]]):
                sessions[i] = compiled.session()  # the row starts over
                position[i] = 0
                fill = engine.batch_filler(sessions)
            else:
                position[i] += 1
    return {"rows": len(sessions), "steps_us": times, "first_pass": first_pass}


def run_batch(
    workers: Sequence[EngineWorker],
    files: Sequence[Path],
    encode: Callable[[str], list[int]],
    *,
    sizes: Sequence[int],
    passes: int,
    timeout: float,
) -> dict[tuple[str, int], dict[str, Any]]:
    """Per (engine, batch size): the rows that compiled and the time of each batch fill."""
    results = {}
    for size in sizes:
        rows = _rows(files, encode, size)
        for worker in workers:
            outcome = worker.call(_batch_task, rows, passes, timeout=timeout)
            results[worker.engine_name, size] = outcome.value if outcome.status == "ok" else {"error": outcome.error}
    return results


def report_batch(results: dict[tuple[str, int], dict[str, Any]], engines: Sequence[str]) -> str:
    header = ["engine", "rows", *(f"batch {k} µs" for k in KEYS), "per row p50 µs", *(f"later {k} µs" for k in LATER)]
    table = []
    for (engine, _), result in sorted(results.items(), key=lambda item: (item[0][1], engines.index(item[0][0]))):
        if "error" in result:
            table.append([engine, None, *([None] * (len(KEYS) + len(LATER))), result["error"][:60]])
            continue
        steps = np.asarray(result["steps_us"], dtype=np.float64)
        stats = summarize(steps, KEYS)
        later = summarize(steps[result["first_pass"] :], LATER)
        rows, p50 = result["rows"], stats["p50"]
        per_row = None if p50 is None or not rows else p50 / rows  # (no row compiled: no batch)
        table.append([engine, rows, *(stats[k] for k in KEYS), per_row, *(later[k] for k in LATER)])
    return (
        "#### Time to fill one batch bitmask (all passes; later: the passes after the first, at positions met before)"
        "\n\n" + format_table(header, table)
    )
