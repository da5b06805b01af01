"""`Lexer`: one lazily built deterministic byte automaton over all the lexemes of a grammar.

A lexer state is a set of `(terminal, DFA state)` pairs: the lexemes still alive after the bytes
read since the last lexeme boundary, each in its own DFA's state. The parser asks for the state
where the lexemes it expects start (`start`), and bytes move it (`row`, `step`, `gather`). Each
state's row of 256 successors is computed the first time it is needed and kept in one table, so
only the combinations a parse reaches are ever built — no product automaton per Earley set — and
everything cached per lexer state (token walks, above all) is shared by every Earley set, nesting
depth and rule that reaches it.

Rows are exact: bytes are grouped by their full column of component successors (`np.unique` on
columns), never by a hash. A start state is a state of its own even when its pairs equal a state
reached by bytes: the parser needs to know that a lexeme has not started yet (special tokens may
only come there).

State 0 is dead: no pair alive, its row all zeros.
"""

from __future__ import annotations

import mmap
import threading
from array import array
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import ClassVar

import numpy as np

from grammask.automata.dfa import NARROW_STATES, START, ByteDFA, state_type
from grammask.engine import kernels
from grammask.errors import GrammarError
from grammask.limits import Limits

__all__ = ["Lexer"]

Pairs = tuple[tuple[int, int], ...]

#: Above this many (byte, pair) transitions a product row is made with numpy rather than a dict.
_SPARSE_PAIRS = 96

#: Lexer states whose table rows are reserved when the lexer is made (512 bytes each, of address
#: space: the memory is used only as rows are filled); a larger `Limits.max_lexer_states` grows beyond.
_RESERVED_STATES = 1 << 16
#: States that 16-bit rows can number (`state_type`; the tests lower it). A lexer that needs more
#: switches to 32-bit rows then: the new table is reserved up to the limit (or `_WIDE_STATES`) at
#: once, and filled as it approaches. Half the bytes of 32-bit rows: a lexeme's block is laid into
#: half the pages (laying blocks was about 5% of MaskBench step time, most of it the first writes
#: into fresh pages), and a trie walk reads rows from half the cache lines.
_NARROW_STATES = NARROW_STATES
_WIDE_STATES = 1 << 18
#: Rows copied at a time into the 32-bit table while a lexer approaches `_NARROW_STATES` (256 KiB).
_COPY_ROWS = 256
#: Room in the per-state arrays (49 bytes a state) when the lexer is made; they double as states
#: come. Made at full size, their zeros cost more than half a millisecond of every compile.
_FIRST_STATES = 1 << 10

#: Bytes of one byte-stepping row (`Lexer.row`): 256 machine ints and the array object.
_ROW_BYTES = 4 * 256 + 80


class _Memory:
    """The memory under a lexer's table, and how many of its rows have been written (so are backed
    by pages). When its lexer is dropped, it goes to a small pool for the next lexer: the first
    write into a fresh page costs the kernel about 3 µs on the benchmark machine, most of the cost
    of laying a lexeme's block, and a grammar evicted from the compile cache leaves thousands of
    such pages behind. A new lexer writes every row before it reads it (`expanded`), so what an
    earlier lexer left in a row is never read."""

    __slots__ = ("mapping", "rows", "row_bytes")

    #: Tables of dropped lexers kept for the next lexers: at most `tables` of them, with at most
    #: `max_rows` rows written each and `pool_rows` in all (32 MiB of 16-bit rows); pages past what
    #: a table may keep are given back to the system first, so a lexer that takes a table holds at
    #: most 8 MiB more than it wrote. A grammar of many lexemes entering the compile cache evicts
    #: several at once: with four tables of up to 4,096 rows, half of those tables found the pool
    #: full, 60% of new lexers found it empty, and 42% of all rows were laid into fresh pages. (The
    #: median MaskBench lexer writes about 1,000 rows, the 90th percentile 7,000.) On the class, not
    #: the module: finalisers that run as the interpreter exits still find them.
    pool: ClassVar[deque[_Memory]] = deque()
    tables: ClassVar[int] = 16
    max_rows: ClassVar[int] = 1 << 14
    pool_rows: ClassVar[int] = 1 << 16
    #: bytes of one page of memory: 4 KiB on x86, 16 KiB on Apple silicon
    page_bytes: ClassVar[int] = mmap.PAGESIZE

    def __init__(self, mapping: mmap.mmap | None, rows: int, row_bytes: int) -> None:
        self.mapping = mapping
        self.rows = rows
        #: bytes of one row of the table: 512 for 16-bit states, 1 KiB for 32-bit ones
        self.row_bytes = row_bytes

    def __del__(self) -> None:
        mapping, rows = self.mapping, self.rows
        if mapping is None or len(self.pool) >= self.tables:
            return
        room = self.pool_rows - sum(memory.rows for memory in list(self.pool))  # a copy: atomic
        page_rows = max(1, self.page_bytes // self.row_bytes)
        keep = min(self.max_rows, room) // page_rows * page_rows  # madvise takes whole pages
        if rows > keep:
            if keep <= 0 or not hasattr(mmap, "MADV_DONTNEED"):
                return
            start = keep * self.row_bytes
            mapping.madvise(mmap.MADV_DONTNEED, start, len(mapping) - start)
            rows = keep
        self.pool.append(_Memory(mapping, rows, self.row_bytes))  # atomic: no lock in a finaliser


#: Anonymous memory of this process alone. Python maps anonymous memory shared by default, and
#: shared memory keeps its pages when advised `MADV_DONTNEED`: the pool's trimming gave nothing back.
_PRIVATE = {"flags": mmap.MAP_PRIVATE} if hasattr(mmap, "MAP_PRIVATE") else {}


def _zero_rows(n: int, dtype: type[np.unsignedinteger] | type[np.signedinteger]) -> tuple[np.ndarray, _Memory]:
    """An `(n, 256)` table of `dtype` whose rows are zero until written, in pages of its own, without
    the huge-page advice numpy gives large arrays: rows are written a lexeme's block at a time,
    scattered over tens of megabytes, and a first write into a huge page clears (and may first
    compact) 2 MiB, which cost twice as much per block as small pages on the benchmark machine.
    A pooled table (see `_Memory`) is taken first; its row 0, the dead state's, is zero."""
    row_bytes = 256 * np.dtype(dtype).itemsize
    mapping, rows = None, 0
    while mapping is None:
        try:
            found = _Memory.pool.popleft()
        except IndexError:
            mapping = mmap.mmap(-1, n * row_bytes, **_PRIVATE)
            break
        if found.mapping is not None and len(found.mapping) == n * row_bytes and found.row_bytes == row_bytes:
            mapping, rows = found.mapping, found.rows
        found.mapping = None  # taken (or of another size): not pooled again
    table = np.frombuffer(mapping, dtype=dtype).reshape(n, 256)
    table[0] = 0
    return table, _Memory(mapping, rows, row_bytes)


class Lexer:
    """The lexer of one grammar: `dfa(k)` gives the DFA of lexeme terminal `k` (compiled on demand),
    and `follows[k]` the lexemes that may come right after lexeme `k` (`following_lexemes`)."""

    def __init__(self, dfa: Callable[[int], ByteDFA], limits: Limits, follows: Sequence[tuple[int, ...]]) -> None:
        self._dfa = dfa
        self._follows = follows
        self._limit = limits.max_lexer_states
        #: held by whoever writes the lexer, and by readers that hand its arrays to a kernel
        self.lock = threading.RLock()
        self._n = 1
        #: pairs of the states outside terminal blocks (see `_single`)
        self._pairs: dict[int, Pairs] = {0: ()}
        self._ids: dict[tuple[Pairs, bool], int] = {((), False): 0}
        #: per terminal: the base of its block of single-lexeme states (see `_single`)
        self._bases: dict[int, int] = {}
        # Table rows for every state up to the limit (or `_RESERVED_STATES`) from the start: zeros
        # are only address space until a row is written, and growing (copying) a table of tens of
        # megabytes would stall the step that crossed a power of two. The per-state arrays below
        # are small, and grow (`_grow`).
        reserved = min(self._limit, _RESERVED_STATES)
        self.table, self._memory = _zero_rows(reserved, state_type(reserved, _NARROW_STATES))
        #: the 32-bit table that takes over from a 16-bit one, and how many of its rows are copied
        #: so far (`_copy_ahead`): rows below that are written into both
        self._wide: tuple[np.ndarray, _Memory] | None = None
        self._copied = 0
        capacity = min(len(self.table), _FIRST_STATES)
        self.expanded = np.zeros(capacity, dtype=bool)
        self.expanded[0] = True
        #: per state where a lexeme ends and text may go on: the row of `follows` that gives the
        #: bytes that can begin a next lexeme (0: no lexeme ends there, or none can come after it).
        #: Token masks look past a lexeme's end only where this says a next lexeme can begin.
        self.boundary = np.zeros(capacity, dtype=np.int32)
        #: per state: the bytes on which it steps to itself, as a 256-bit set (four uint64 words,
        #: `tables.Preorder.below_bytes`'s layout), once `loop_classes` is set. The trie walk
        #: computes them from the row when it first asks, and takes a whole subtree at once where
        #: its bytes are all among them (`kernels.walk_trie`).
        self.loops = np.zeros((capacity, 4), dtype=np.uint64)
        #: per state: 0 until `loops` is known, then bit 16 and, for each run of 16 byte values
        #: (`byte >> 4`), a bit set where the state loops on one of them. The walk's first test
        #: (`tables.Preorder.below_classes`): most subtrees fail it without reading `loops`.
        self.loop_classes = np.zeros(capacity, dtype=np.int32)
        self.follows = np.zeros((1, 256), dtype=bool)
        #: rows of `follows` by their bytes, and per terminal the bytes that can begin a lexeme
        #: after it: as 256-bit ints (`ByteDFA.first_bits`), which OR in a few nanoseconds
        self._follow_rows: dict[int, int] = {0: 0}
        self._follow_bits: dict[int, int] = {}
        #: per state: the terminal whose block holds it (-1: none, see `_single`)
        self._owner = np.full(capacity, -1, dtype=np.int32)
        #: per state: a number for the terminals whose lexeme is complete there (`accepts`);
        #: states that end the same lexemes share it, and class 0 ends none
        self.accept_class = np.zeros(capacity, dtype=np.int32)
        self._accept_classes: dict[tuple[int, ...], int] = {(): 0}
        #: per accept class: its terminals. (Not a list of them per state: a list as long as the
        #: lexer was a third of what a full garbage collection traversed on MaskBench.)
        self._class_terminals: list[tuple[int, ...]] = [()]
        #: per accept class: its row of `follows`
        self._class_boundary = [0]
        #: rows as machine-int arrays: indexed as fast as lists, and never scanned by Python's GC
        self._rows: dict[int, array[int]] = {0: array("i", bytes(4 * 256))}
        #: single transitions of states whose row is not made (`step`): `state << 8 | byte` -> target
        self._steps: dict[int, int] = {}
        #: start states by the terminals asked for, in the order asked (`start`)
        self._starts: dict[tuple[int, ...], int] = {}
        #: per start state of several lexemes: its lexemes' own start states by first byte
        self._starts_by_byte: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        #: per (terminal, DFA state) met in a product: its live bytes and their targets
        self._sparse_rows: dict[tuple[int, int], tuple[tuple[int, ...], tuple[int, ...]] | None] = {}
        #: the estimated bytes of the three maps above, kept as they grow (they never shrink):
        #: `nbytes` is read for every grammar in the compile cache at every compile
        self._map_bytes = 0

    @property
    def n_states(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        # The rows filled so far (the rest of the table is untouched address space), and per state a
        # flag, its owner, its accept class, its boundary row, its loop set and its loop classes.
        written = max(self._n, self._memory.rows)  # a pooled table comes with rows written before
        tables = written * self.table.itemsize * 256 + self._copied * 1024 + self._n * 49 + self.follows.nbytes
        steps = 100 * len(self._steps)
        return int(tables) + 200 * self.n_states + _ROW_BYTES * len(self._rows) + steps + self._map_bytes

    def pairs(self, state: int) -> Pairs:
        """The `(terminal, DFA state)` pairs alive in `state`."""
        terminal = int(self._owner[state])
        if terminal >= 0:
            return ((terminal, state - self._bases[terminal]),)
        return self._pairs[state]

    def accepts(self, state: int) -> tuple[int, ...]:
        """The terminals whose lexeme is complete in `state` (sorted; none in a start state)."""
        return self._class_terminals[self.accept_class[state]]

    # -- states -----------------------------------------------------------------------------------

    def start(self, terminals: tuple[int, ...]) -> int:
        """The state before the first byte of a lexeme that may be any of `terminals`."""
        found = self._starts.get(terminals)
        if found is None:
            with self.lock:
                found = self._starts[terminals] = self._intern(tuple((k, 1) for k in sorted(terminals)), True)
                self._map_bytes += 100 + 8 * len(terminals)
        return found

    def starts_by_byte(self, state: int) -> tuple[np.ndarray, np.ndarray]:
        """`(bounds, starts)`: the start states of `state`'s lexemes one by one, by the byte each
        can begin with (`starts[bounds[b] : bounds[b + 1]]` for byte `b`; none for a dead byte).

        Text that follows a lexeme boundary is valid when it is valid for one of the lexemes
        expected there (what follows each is a union too), so it can be stepped from these states
        one by one: no row of a state of several lexemes is needed, and after the first byte every
        lexeme steps in its own block."""
        found = self._starts_by_byte.get(state)
        if found is None:
            with self.lock:
                terminals = [k for k, _ in self.pairs(state)]
                ids = np.array([self._intern(((k, 1),), True) for k in terminals], dtype=np.int32)
            # Each lexeme's start row (non-zero: a byte it can begin with), read by byte, then lexeme.
            rows = np.array([self._dfa(k).transitions[START] for k in terminals]).reshape(len(terminals), 256)
            byte, which = np.nonzero(rows.T)
            bounds = np.zeros(257, dtype=np.int64)
            np.cumsum(np.bincount(byte, minlength=256), out=bounds[1:])
            found = (bounds, ids[which])
            with self.lock:
                if self._starts_by_byte.setdefault(state, found) is found:
                    self._map_bytes += 200 + bounds.nbytes + found[1].nbytes
                else:
                    found = self._starts_by_byte[state]
        return found

    def single(self, terminal: int, dfa_state: int) -> int:
        """The state where lexeme `terminal` alone is alive, in state `dfa_state` of its DFA."""
        with self.lock:
            return self._single(terminal) + dfa_state

    def _intern(self, pairs: Pairs, is_start: bool = False) -> int:
        key = (pairs, is_start)
        found = self._ids.get(key)
        if found is not None:
            return found
        if len(pairs) == 1 and not is_start:
            terminal, dfa_state = pairs[0]
            return self._single(terminal) + dfa_state
        state = self._n
        if state >= self._limit:
            raise self._too_many()
        if state == len(self.expanded):
            self._grow()
        self._n += 1
        self._memory.rows = max(self._memory.rows, self._n)
        self._copy_ahead()
        # A start state accepts nothing: lexemes are never empty (see `grammask.ir.normalise`),
        # and not asking spares compiling lexemes that are expected but never entered.
        done = () if is_start else tuple(k for k, s in pairs if self._dfa(k).accepting[s])
        self._pairs[state] = pairs
        self.accept_class[state] = found = self._accept_class(done)
        self.boundary[state] = self._class_boundary[found]
        self._ids[key] = state
        return state

    def _single(self, terminal: int) -> int:
        """The id of `(terminal, 0)`'s block: `(terminal, s)` alone is state `base + s` (s > 0).

        A lexeme alone is the common case (after a lexeme's first bytes, the others have died),
        so each DFA gets a block of ids whose rows are its own transitions, made in one step."""
        base = self._bases.get(terminal)
        if base is None:
            dfa = self._dfa(terminal)
            n = dfa.n_states
            base = self._n - 1  # state s of the DFA is base + s; its dead state is not used
            if base + n > self._limit:
                raise self._too_many()
            while base + n > len(self.expanded):
                self._grow()
            block = slice(base + 1, base + n)
            # Shifted: base where a target is live, plus the target (the dead state stays 0). The
            # kernel writes each row once; numpy needs three passes (which cost less than half of
            # one masked `np.add(..., where=)`).
            if kernels.AVAILABLE:
                kernels.lay_block(self.table, base, dfa.transitions)
            else:
                source, rows = dfa.transitions[1:], self.table[block]
                np.not_equal(source, 0, out=rows, casting="unsafe")
                rows *= base
                np.add(rows, source, out=rows, casting="unsafe")
            self._written(base + 1, base + n)
            self.expanded[block] = True
            self._owner[block] = terminal
            choice = ((), (terminal,))
            accept_class = self._accept_class(choice[1])
            self.accept_class[block] = np.where(dfa.accepting[1:], accept_class, 0)
            self.boundary[block] = np.where(dfa.accepting[1:], self._class_boundary[accept_class], 0)
            self._n += n - 1
            self._memory.rows = max(self._memory.rows, self._n)
            self._copy_ahead()
            self._bases[terminal] = base
        return base

    def _accept_class(self, terminals: tuple[int, ...]) -> int:
        found = self._accept_classes.get(terminals)
        if found is None:
            found = self._accept_classes[terminals] = len(self._accept_classes)
            self._class_terminals.append(terminals)
            self._class_boundary.append(self._boundary_row(terminals))
        return found

    def follow_bits(self, terminal: int) -> int:
        """The bytes that can begin a lexeme right after lexeme `terminal`, as a 256-bit set."""
        found = self._follow_bits.get(terminal)
        if found is None:
            found = 0
            for j in self._follows[terminal]:
                found |= self._dfa(j).first_bits
            self._follow_bits[terminal] = found
        return found

    def residual_key(self, terminal: int, dfa_state: int) -> tuple[Hashable, int]:
        """What state `dfa_state` of lexeme `terminal`'s DFA does to text, whatever the grammar
        and the lexeme: the strings that can follow it (`ByteDFA.residual`) and the bytes that may
        begin a next lexeme after it. States with the same key walk a vocabulary's trie alike: the
        string value in the lexeme of every member `"name": "…"` of every grammar, say."""
        return self._dfa(terminal).residual(dfa_state), self.follow_bits(terminal)

    def _boundary_row(self, terminals: tuple[int, ...]) -> int:
        """The row of `follows` for a state where lexemes `terminals` end (added if new)."""
        bits = 0
        for k in terminals:
            bits |= self.follow_bits(k)
        row = self._follow_rows.get(bits)
        if row is None:
            row = self._follow_rows[bits] = len(self._follow_rows)
            new = np.unpackbits(np.frombuffer(bits.to_bytes(32, "little"), dtype=np.uint8), bitorder="little")
            self.follows = np.concatenate([self.follows, new[None, :].astype(bool)])
        return row

    def _too_many(self) -> GrammarError:
        return GrammarError(
            f"lexer too large: more than {self._limit} states (Limits.max_lexer_states); "
            "the grammar's lexemes combine in too many ways"
        )

    def _grow(self) -> None:
        """Double the per-state arrays, up to the table's reserved rows; past them (a limit over
        `_RESERVED_STATES`) the table doubles too, and past `_NARROW_STATES` the 32-bit table
        (`_copy_ahead`) takes over, with what is left to copy.

        Kernels run without the GIL, on the arrays they were handed; `masks.MaskComputer` holds
        `lock` for each call, so no thread writes the lexer meanwhile. (Without it, a kernel would
        still read only rows flagged before it started, or flagged after their row was written:
        safe with x86's ordered stores, not with a weaker memory order.)"""
        capacity = 2 * len(self.expanded)
        if len(self.expanded) < len(self.table):
            capacity = min(capacity, len(self.table))
        elif state_type(capacity, _NARROW_STATES) == self.table.dtype:
            table, memory = _zero_rows(capacity, self.table.dtype.type)
            table[: len(self.table)] = self.table
            memory.rows = max(memory.rows, len(self.table))  # the copy wrote every row it had
            self.table, self._memory = table, memory
        else:
            table, memory = self._wide or self._wide_table(capacity)
            table[self._copied : len(self.table)] = self.table[self._copied :]
            memory.rows = max(memory.rows, len(self.table))
            self.table, self._memory, self._wide, self._copied = table, memory, None, 0
        self.expanded = np.concatenate([self.expanded, np.zeros(capacity - len(self.expanded), dtype=bool)])
        self.boundary = np.concatenate([self.boundary, np.zeros(capacity - len(self.boundary), dtype=np.int32)])
        self.loops = np.concatenate([self.loops, np.zeros((capacity - len(self.loops), 4), dtype=np.uint64)])
        self.loop_classes = np.concatenate([self.loop_classes, np.zeros(capacity - len(self.loop_classes), np.int32)])
        self._owner = np.concatenate([self._owner, np.full(capacity - len(self._owner), -1, dtype=np.int32)])
        self.accept_class = np.concatenate([self.accept_class, np.zeros(capacity - len(self.accept_class), np.int32)])

    def _wide_table(self, capacity: int) -> tuple[np.ndarray, _Memory]:
        """The 32-bit table that follows a full 16-bit one: reserved up to the limit at once."""
        return _zero_rows(max(capacity, min(self._limit, _WIDE_STATES)), np.int32)

    def _copy_ahead(self) -> None:
        """Copy the 16-bit table into the 32-bit one that will replace it, a few rows for each new
        state, from when three quarters of its rows are used: when it is full, the switch
        (`_grow`) has little left to copy. Copied at once, 65,536 rows took 46 to 139 ms on the
        benchmark machine (64 MiB of fresh pages), the longest step of a MaskBench run; spread
        over the last 16,384 states, it is a quarter of a millisecond per `_COPY_ROWS`."""
        rows = len(self.table)
        start = rows - rows // 4
        if self._n < start or rows >= self._limit or state_type(2 * rows, _NARROW_STATES) == self.table.dtype:
            return
        due = min(rows, (self._n - start) * rows // (rows - start))
        if due < min(self._copied + _COPY_ROWS, rows):
            return
        if self._wide is None:
            self._wide = self._wide_table(2 * rows)
        table, memory = self._wide
        table[self._copied : due] = self.table[self._copied : due]
        self._copied = due
        memory.rows = max(memory.rows, due)

    def _written(self, start: int, stop: int) -> None:
        """Rows `start:stop` of the table were written: where they are copied already, copy them again."""
        if start < self._copied and self._wide is not None:
            stop = min(stop, self._copied)
            self._wide[0][start:stop] = self.table[start:stop]

    # -- rows -------------------------------------------------------------------------------------

    def row(self, state: int) -> Sequence[int]:
        """The successor of `state` on each byte (for byte-at-a-time stepping)."""
        found = self._rows.get(state)
        if found is None:
            self.ensure(np.array([state]))
            found = self._rows[state] = array("i", self.table[state].astype(np.int32).tobytes())
        return found

    def step(self, state: int, byte: int) -> int:
        """The successor of `state` on `byte`. A state of several lexemes without a row gets this
        one transition only: a token's bytes need one column each, and a whole product row costs
        about 0.2 ms, for states that token masks (union walks) never ask a row of."""
        if self.expanded[state]:  # read in place: most states a token passes are met once
            return self.table.item(state, byte)
        pairs = self.pairs(state)
        if len(pairs) < 2:  # the start of one lexeme: its row is a copy
            self.ensure(np.array([state]))
            return self.table.item(state, byte)
        key = state << 8 | byte
        target = self._steps.get(key)
        if target is None:
            column = tuple((k, t) for k, s in pairs if (t := self._dfa(k).transitions.item(s, byte)))
            with self.lock:
                target = self._steps[key] = self._intern(column)
        return target

    def may_end_before(self, state: int, byte: int) -> bool:
        """Whether a lexeme that ends in `state` may be followed by one that begins with `byte`
        (by `follows`, over every context). Where not, text that goes on with `byte` can only stay
        in the lexemes alive in `state`."""
        return bool(self.follows.item(self.boundary.item(state), byte))

    def gather(self, states: np.ndarray, data: np.ndarray) -> np.ndarray:
        """The successors of `states[i]` on `data[i]`, all at once."""
        self.ensure(states)
        return self.table[states, data].astype(np.int32)

    def ensure(self, states: np.ndarray) -> None:
        """Compute the rows of the given states that are not computed yet."""
        if len(states) == 1 and self.expanded[states[0]] or self.expanded[states].all():
            return
        with self.lock:
            missing = np.unique(states[~self.expanded[states]])
            if missing.size:
                self._expand(missing)

    def _expand(self, states: np.ndarray) -> None:
        for state in states.tolist():
            pairs = self.pairs(state)
            if len(pairs) == 1:  # a start state of one lexeme: the row of its block's start
                first = self._single(pairs[0][0]) + 1
                row = self.table[first].copy()
            elif pairs:
                row = self._product_row(pairs)
            else:  # a start state that expects no lexeme: all dead (a pooled table's row is not)
                row = np.zeros(256, dtype=np.int32)
            self.table[state] = row  # after the row is made: making it may grow the table
            self._written(state, state + 1)
        self.expanded[states] = True

    def _product_row(self, pairs: Pairs) -> np.ndarray:
        """The row of a state with several pairs: bytes grouped by their exact column of targets."""
        sparse = [self._sparse(k, s) for k, s in pairs]
        if None in sparse or sum(len(row[0]) for row in sparse if row) > _SPARSE_PAIRS:
            return self._dense_row(pairs)
        columns: dict[int, list[tuple[int, int]]] = {}
        for (k, _), (bytes_, targets) in zip(pairs, sparse, strict=True):  # type: ignore[misc]
            for byte, target in zip(bytes_, targets, strict=True):
                columns.setdefault(byte, []).append((k, target))
        row = np.zeros(256, dtype=np.int32)
        ids: dict[Pairs, int] = {}
        for byte, column in columns.items():
            key = tuple(column)
            found = ids.get(key)
            if found is None:
                found = ids[key] = self._intern(key)
            row[byte] = found
        return row

    def _sparse(self, terminal: int, state: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The bytes that keep lexeme `terminal` alive from its DFA state `state`, and their targets
        (None when there are more than `_SPARSE_PAIRS`: the row is then made with numpy)."""
        key = (terminal, state)
        if key in self._sparse_rows:
            return self._sparse_rows[key]
        transitions = self._dfa(terminal).transitions[state]
        bytes_ = np.flatnonzero(transitions)
        found = (tuple(bytes_.tolist()), tuple(transitions[bytes_].tolist())) if len(bytes_) <= _SPARSE_PAIRS else None
        self._sparse_rows[key] = found
        if found:
            self._map_bytes += 150 + 16 * len(found[0])
        return found

    def _dense_row(self, pairs: Pairs) -> np.ndarray:
        """`_product_row` for many live bytes: columns numbered in mixed radix and grouped by
        `np.unique` (exact; as raw bytes when the radix would overflow)."""
        terminals = [k for k, _ in pairs]
        dfas = [self._dfa(k) for k in terminals]
        targets = np.stack([dfa.transitions[s] for dfa, (_, s) in zip(dfas, pairs, strict=True)])  # [m, 256]
        sizes = [dfa.n_states for dfa in dfas]
        key: np.ndarray
        if sum(size.bit_length() for size in sizes) < 63:
            key = np.zeros(256, dtype=np.int64)
            for row, size in zip(targets, sizes, strict=True):
                key = key * size + row
        else:
            key = np.ascontiguousarray(targets.T).view(np.dtype((np.void, 4 * len(pairs)))).reshape(-1)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        columns = targets[:, first].T  # [distinct columns, pairs]; mostly dead
        j, i = np.nonzero(columns)  # by column: only the live pairs become tuples
        live = list(zip(np.array(terminals)[i].tolist(), columns[j, i].tolist(), strict=True))
        ids = np.empty(len(first), dtype=np.int32)
        start = 0
        for c, end in enumerate(np.cumsum(np.bincount(j, minlength=len(first))).tolist()):
            ids[c] = self._intern(tuple(live[start:end]))
            start = end
        return ids[inverse.reshape(-1)]

    def next_bytes(self, state: int) -> list[int]:
        """The bytes that keep the lexer alive from `state`."""
        return [b for b, t in enumerate(self.row(state)) if t]
