"""DFA minimisation (Hopcroft's partition refinement) and canonical renumbering.

Works on `determinise`'s sparse rows: per state, (target, atom set) pairs with atom sets held as
int bitmasks. States that cannot reach an accepting state all have the empty right language: they
start (and stay) in one block with the dead state and are never used as splitters, so the many
edges into the dead state cost nothing.

Refinement splits by a block B with all letters at once: a state's signature is the set of atoms
leading into B, and each block splits into its groups of equal signature (untouched states form
one more group). A block waiting to be used as a splitter puts all its new pieces on the stack;
any other block puts all pieces but its largest. The work per splitter is proportional to the
edges into it, whatever the number of atoms.
"""

from __future__ import annotations

from grammask.automata.determinise import SparseRow
from grammask.limits import check_deadline

__all__ = ["minimise"]


def minimise(rows: list[SparseRow], accepting: list[bool]) -> tuple[list[SparseRow], list[bool]]:
    """Minimal equivalent of a DFA with dead = 0 and start = 1 whose states are all reachable
    and numbered breadth first (targets of a state taken by lowest atom), as `determinise`
    numbers them: (rows, accepting), numbered the same way."""
    n = len(rows)
    preds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for s, row in enumerate(rows):
        for t, mask in row:
            preds[t].append((s, mask))
    # Live states: those from which an accepting state can be reached.
    live = list(accepting)
    stack = [s for s in range(n) if live[s]]
    while stack:
        for s, _ in preds[stack.pop()]:
            if not live[s]:
                live[s] = True
                stack.append(s)
    if not live[1]:
        return [[], []], [False, False]
    block_of = _refine(preds, accepting, live)
    return _quotient(rows, accepting, block_of)


def _refine(preds: list[list[tuple[int, int]]], accepting: list[bool], live: list[bool]) -> list[int]:
    """Block of each state in the coarsest partition compatible with the transitions."""
    n = len(preds)
    # Blocks: 0 = not live (the dead state's), 1 = accepting, 2 = live and not accepting.
    block_of = [(2 - accepting[s]) if live[s] else 0 for s in range(n)]
    blocks: list[set[int]] = [set(), set(), set()]
    for s in range(n):
        blocks[block_of[s]].add(s)
    # Edges between live states only: the not-live block never splits, and it need not serve as
    # a splitter (Hopcroft may leave out any one initial block: in a complete DFA the preimages
    # of the others determine its preimage).
    if len(blocks[0]) > 1:
        preds = [[(s, m) for s, m in p if live[s]] if live[t] else [] for t, p in enumerate(preds)]
    pending = [b for b in (1, 2) if blocks[b]]
    waiting = [False, bool(blocks[1]), bool(blocks[2])]
    rounds = 0
    while pending:
        rounds += 1
        if not rounds & 255:
            check_deadline("minimising a lexeme's automaton")
        splitter = pending.pop()
        waiting[splitter] = False
        signature: dict[int, int] = {}
        get = signature.get
        for t in blocks[splitter]:
            for s, mask in preds[t]:
                signature[s] = get(s, 0) | mask
        groups: dict[tuple[int, int], list[int]] = {}
        for s, sig in signature.items():
            key = (block_of[s], sig)
            group = groups.get(key)
            if group is None:
                groups[key] = [s]
            else:
                group.append(s)
        by_block: dict[int, list[list[int]]] = {}
        for (b, _), group in groups.items():
            found = by_block.get(b)
            if found is None:
                by_block[b] = [group]
            else:
                found.append(group)
        for b, pieces in by_block.items():
            block = blocks[b]
            if len(block) == sum(map(len, pieces)):
                if len(pieces) == 1:
                    continue
                # The largest piece keeps the block's number.
                pieces.sort(key=len)
                pieces.pop()
            for piece in pieces:
                block.difference_update(piece)
                new = len(blocks)
                blocks.append(set(piece))
                for s in piece:
                    block_of[s] = new
            if waiting[b]:
                pending.extend(range(len(blocks) - len(pieces), len(blocks)))
                waiting.extend([True] * len(pieces))
                continue
            # All pieces but the largest (the remainder counts as a piece).
            sizes = [len(block), *map(len, pieces)]
            skip = sizes.index(max(sizes))
            if skip:
                pending.append(b)
                waiting[b] = True
            first = len(blocks) - len(pieces)
            for k in range(len(pieces)):
                waiting.append(k + 1 != skip)
                if k + 1 != skip:
                    pending.append(first + k)
    return block_of


def _quotient(rows: list[SparseRow], accepting: list[bool], block_of: list[int]) -> tuple[list[SparseRow], list[bool]]:
    """The automaton of the blocks, each numbered as its lowest state. Numbering states breadth
    first numbers blocks breadth first too: a block's later states only lead to blocks that its
    first state already led to."""
    n = len(rows)
    dead = block_of[0]
    number: dict[int, int] = {dead: 0}
    reps: list[int] = [0]
    for s, b in enumerate(block_of):
        if b not in number:
            number[b] = len(reps)
            reps.append(s)
    if len(reps) == n:  # already minimal
        return rows, accepting
    out_rows: list[SparseRow] = [[]]
    for s in reps[1:]:
        row: SparseRow = []
        merged = False
        seen: dict[int, int] = {}
        for t, mask in rows[s]:
            b = block_of[t]
            if b == dead:
                continue
            k = seen.get(b)
            if k is None:
                seen[b] = len(row)
                row.append((number[b], mask))
            else:
                row[k] = (row[k][0], row[k][1] | mask)
                merged = True
        if merged:
            row.sort(key=_lowest_atom)
        out_rows.append(row)
    return out_rows, [accepting[s] for s in reps]


def _lowest_atom(edge: tuple[int, int]) -> int:
    return edge[1] & -edge[1]
