"""Percentile summaries and plain-text tables for the benchmark reports."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["format_table", "ratio", "summarize"]


def summarize(values: Sequence[float] | np.ndarray, keys: Sequence[str]) -> dict[str, float | None]:
    """`keys` drawn from "n", "avg", "max" and "pNN" / "pNN.N" (percentiles), for `values`.

    An empty sample gives None for everything but "n".
    """
    data = np.asarray(values, dtype=np.float64)
    out: dict[str, float | None] = {}
    for key in keys:
        if key == "n":
            out[key] = float(data.size)
        elif data.size == 0:
            out[key] = None
        elif key == "avg":
            out[key] = float(data.mean())
        elif key == "max":
            out[key] = float(data.max())
        elif key.startswith("p"):
            out[key] = float(np.percentile(data, float(key[1:])))
        else:
            raise ValueError(f"unknown statistic {key!r}")
    return out


def ratio(ours: float | None, theirs: float | None) -> str:
    """`ours / theirs` as "1.23x" (two significant digits below 0.1: "0.0042x"), or "-" when
    either side is missing or zero."""
    if ours is None or theirs is None or theirs == 0:
        return "-"
    value = ours / theirs
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e9:
            return str(int(value))
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (also readable as plain text); numbers right-aligned, None as "-"."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(header))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "| " + " | ".join(parts) + " |"

    rule = "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2)) for w, num in zip(widths, numeric, strict=True))
    rule = f"|{rule}|"
    return "\n".join([line(header), rule, *(line(r) for r in cells)])
