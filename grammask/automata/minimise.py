"""DFA minimisation (Hopcroft's partition refinement) and canonical renumbering.

Works on character-level tables over alphabet atoms (`determinise`'s output). All states that
cannot reach an accepting state share the dead state's right language (the empty one), so they
end up merged into state 0 with no separate pass.
"""

from __future__ import annotations

import numpy as np

__all__ = ["minimise"]


def minimise(table: np.ndarray, accepting: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray]:
    """Minimal equivalent of a DFA whose state 0 is dead: (table, accepting), with dead = 0 and
    start = 1, other states numbered in order of first appearance in `table`.

    `table` is int [n, n_atoms]; the result keeps the columns.
    """
    block_of = _refine(table, accepting)
    dead, first = block_of[0], block_of[start]
    n_blocks = int(block_of.max()) + 1
    if first == dead:
        return np.zeros((2, table.shape[1]), dtype=np.int32), np.zeros(2, dtype=bool)
    # Canonical order: dead, start, then by the lowest-numbered member state.
    lowest = np.full(n_blocks, table.shape[0], dtype=np.int64)
    np.minimum.at(lowest, block_of, np.arange(table.shape[0]))
    lowest[dead], lowest[first] = -2, -1
    order = np.argsort(lowest, kind="stable")
    rank = np.empty(n_blocks, dtype=np.int32)
    rank[order] = np.arange(n_blocks, dtype=np.int32)
    members = lowest.copy()
    members[dead], members[first] = 0, start
    reps = members[order]
    return rank[block_of[table[reps]]], accepting[reps]


def _refine(table: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Hopcroft: int [n] block of each state in the coarsest partition compatible with `table`."""
    n, n_classes = table.shape
    # Inverse transitions per class in CSR form: predecessors of t are sources[ptr[t]:ptr[t + 1]].
    inverse = []
    for c in range(n_classes):
        col = table[:, c]
        order = np.argsort(col, kind="stable")
        ptr = np.searchsorted(col[order], np.arange(n + 1))
        inverse.append((order.tolist(), ptr.tolist()))
    block_of = accepting.astype(np.int64).tolist()
    blocks = [{s for s in range(n) if not block_of[s]}, {s for s in range(n) if block_of[s]}]
    if not blocks[1]:
        return np.zeros(n, dtype=np.int64)
    pending = {0 if len(blocks[0]) <= len(blocks[1]) else 1}
    while pending:
        splitter = list(blocks[pending.pop()])
        for sources, ptr in inverse:
            touched: dict[int, list[int]] = {}
            for t in splitter:
                for s in sources[ptr[t] : ptr[t + 1]]:
                    b = block_of[s]
                    if b in touched:
                        touched[b].append(s)
                    else:
                        touched[b] = [s]
            for b, inside in touched.items():
                block = blocks[b]
                if len(inside) == len(block):
                    continue
                new = len(blocks)
                block.difference_update(inside)
                blocks.append(set(inside))
                for s in inside:
                    block_of[s] = new
                if b in pending or len(inside) <= len(block):
                    pending.add(new)
                else:
                    pending.add(b)
    return np.asarray(block_of, dtype=np.int64)
