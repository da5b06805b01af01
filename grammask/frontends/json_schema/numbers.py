"""JSON numbers and integers within bounds, as exact digit automata.

A bound splits the number line by sign; each side is a range of magnitudes, written as an integer
part in a digit range followed by the fraction that range allows (any, none-or-zero, or nonzero).
Bounds are exact decimals (a non-integer bound compares fraction digits one by one); exponent
notation is only produced for unbounded numbers and numbers bounded by 0 alone, where the sign
decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from grammask.errors import GrammarError
from grammask.frontends.json_schema import strings
from grammask.ir import regex as rx

__all__ = [
    "Bounds",
    "digit_range",
    "integer_regex",
    "listed_multiples",
    "multiples_regex",
    "number_regex",
    "signed_multiples",
]

_DIGIT = rx.char_class([(0x30, 0x39)])
_NONZERO = rx.char_class([(0x31, 0x39)])
_INT = rx.alt(rx.literal("0"), rx.concat(_NONZERO, rx.star(_DIGIT)))
_EXP = rx.concat(
    rx.char_class([(0x45, 0x45), (0x65, 0x65)]),
    rx.optional(rx.char_class([(0x2B, 0x2B), (0x2D, 0x2D)])),
    rx.plus(_DIGIT),
)
_MINUS = rx.literal("-")


def _digits(lo: int, hi: int) -> rx.RegexNode:
    return rx.char_class([(0x30 + lo, 0x30 + hi)])


def _fixed_width(lo: str, hi: str) -> rx.RegexNode:
    """Digit strings of len(lo) == len(hi) digits between lo and hi (inclusive)."""
    if not lo:
        return rx.EMPTY
    a, b = int(lo[0]), int(hi[0])
    rest_lo, rest_hi = lo[1:], hi[1:]
    if a == b:
        return rx.concat(_digits(a, a), _fixed_width(rest_lo, rest_hi))
    full_lo, full_hi = "0" * len(rest_lo), "9" * len(rest_lo)
    if rest_lo == full_lo and rest_hi == full_hi:
        return rx.concat(_digits(a, b), rx.repeat(_DIGIT, len(rest_lo), len(rest_lo)))
    parts = [rx.concat(_digits(a, a), _fixed_width(rest_lo, full_hi))]
    if b - a > 1:
        parts.append(rx.concat(_digits(a + 1, b - 1), rx.repeat(_DIGIT, len(rest_lo), len(rest_lo))))
    parts.append(rx.concat(_digits(b, b), _fixed_width(full_lo, rest_hi)))
    return rx.alt(*parts)


def digit_range(lo: int, hi: int | None) -> rx.RegexNode:
    """Canonical decimals (no leading zeros) of the integers lo..hi, both >= 0 (hi None: unbounded)."""
    if hi is not None and hi < lo:
        return rx.NOTHING
    parts = []
    width = len(str(lo))
    top = width if hi is None else len(str(hi))
    for w in range(width, top + 1):
        a = max(lo, 10 ** (w - 1) if w > 1 else 0)
        b = 10**w - 1 if hi is None else min(hi, 10**w - 1)
        if a <= b:
            parts.append(_fixed_width(str(a).zfill(w), str(b).zfill(w)))
    if hi is None:
        parts.append(rx.concat(_NONZERO, rx.repeat(_DIGIT, width, None)))
    return rx.alt(*parts)


@dataclass(frozen=True)
class Bounds:
    """An interval of the number line; None ends are unbounded."""

    lo: Fraction | None = None
    lo_strict: bool = False
    hi: Fraction | None = None
    hi_strict: bool = False

    def is_empty(self, integer: bool) -> bool:
        lo, hi = self.int_bounds() if integer else (self.lo, self.hi)
        if lo is None or hi is None:
            return False
        if integer:
            return lo > hi
        return lo > hi or (lo == hi and (self.lo_strict or self.hi_strict))

    def int_bounds(self) -> tuple[int | None, int | None]:
        """The closed integer interval this contains."""
        lo = hi = None
        if self.lo is not None:
            lo = int(self.lo) + 1 if self.lo_strict and self.lo == int(self.lo) else -(-self.lo // 1)
            lo = int(lo)
        if self.hi is not None:
            hi = int(self.hi) - 1 if self.hi_strict and self.hi == int(self.hi) else int(self.hi // 1)
        return lo, hi


_FRAC_ANY = rx.optional(rx.concat(rx.literal("."), rx.plus(_DIGIT)))
_FRAC_ZERO = rx.optional(rx.concat(rx.literal("."), rx.plus(rx.literal("0"))))
_FRAC_NONZERO = rx.concat(rx.literal("."), rx.star(_DIGIT), _NONZERO, rx.star(_DIGIT))


def _ne_any(k: int | None) -> rx.RegexNode:
    """Non-empty fraction digits, only zeros after the first k (k None: any)."""
    if k is None:
        return rx.plus(_DIGIT)
    if k == 0:
        return rx.plus(rx.literal("0"))
    return rx.concat(rx.repeat(_DIGIT, 1, k), rx.star(rx.literal("0")))


def _any_tail(k: int | None) -> rx.RegexNode:
    return rx.optional(_ne_any(k))


def _zero_ok(f: str, op: str) -> bool:
    """Whether 0 `op` 0.f."""
    return op in ("le", "lt") and bool(f) or op in ("ge", "le") and not f


def _frac_cmp(f: str, op: str, k: int | None) -> tuple[bool, rx.RegexNode]:
    """Fraction digits F with 0.F `op` 0.f (f without trailing zeros; op ge/gt/le/lt), at most k
    significant: whether F may be empty, and the non-empty ones."""
    if k == 0:
        ok = _zero_ok(f, op)
        return ok, rx.plus(rx.literal("0")) if ok else rx.NOTHING
    nk = None if k is None else k - 1
    if not f:
        if op == "ge":
            return True, _ne_any(k)
        if op == "le":
            return True, rx.plus(rx.literal("0"))
        if op == "lt":
            return False, rx.NOTHING
        if k is None:
            return False, rx.concat(rx.star(_DIGIT), _NONZERO, rx.star(_DIGIT))
        return False, rx.alt(rx.concat(_NONZERO, _any_tail(nk)), rx.concat(rx.literal("0"), _frac_cmp("", "gt", nk)[1]))
    c = int(f[0])
    e_rest, ne_rest = _frac_cmp(f[1:], op, nk)
    same = rx.concat(_digits(c, c), rx.alt(rx.EMPTY, ne_rest) if e_rest else ne_rest)
    if op in ("ge", "gt"):
        return False, rx.alt(rx.concat(_digits(c + 1, 9), _any_tail(nk)) if c < 9 else rx.NOTHING, same)
    return True, rx.alt(rx.concat(_digits(0, c - 1), _any_tail(nk)) if c > 0 else rx.NOTHING, same)


def _frac_between(fa: str, opa: str, fb: str, opb: str, k: int | None) -> tuple[bool, rx.RegexNode]:
    """Fraction digits F with 0.fa `opa` 0.F `opb` 0.fb (opa ge/gt, opb le/lt), as `_frac_cmp`."""
    if not fa and opa == "ge":
        return _frac_cmp(fb, opb, k)
    empty_ok = _zero_ok(fa, opa) and _zero_ok(fb, opb)
    if (not fa and not fb) or k == 0:
        return empty_ok, rx.plus(rx.literal("0")) if empty_ok else rx.NOTHING
    nk = None if k is None else k - 1
    ca, ra = (int(fa[0]), fa[1:]) if fa else (0, "")
    cb, rb = (int(fb[0]), fb[1:]) if fb else (0, "")
    parts = []
    if cb - ca > 1:
        parts.append(rx.concat(_digits(ca + 1, cb - 1), _any_tail(nk)))
    tails = []
    if ca == cb:
        tails.append((ca, _frac_between(ra, opa, rb, opb, nk)))
    elif ca < cb:
        tails += [(ca, _frac_cmp(ra, opa, nk)), (cb, _frac_cmp(rb, opb, nk))]
    for d, (e, ne) in tails:
        parts.append(rx.concat(_digits(d, d), rx.alt(rx.EMPTY, ne) if e else ne))
    return empty_ok, rx.alt(*parts)


def _fraction(empty_ok: bool, nonempty: rx.RegexNode) -> rx.RegexNode:
    dotted = rx.concat(rx.literal("."), nonempty)
    return rx.alt(rx.EMPTY, dotted) if empty_ok else dotted


def _split(x: Fraction, pointer: str) -> tuple[int, str]:
    """Integer part and fraction digits (no trailing zeros) of a non-negative decimal."""
    whole = x.numerator // x.denominator
    frac, k = x - whole, 0
    while (frac * 10**k).denominator != 1:
        k += 1
        if k > 400:
            raise GrammarError(f"the bound {float(x)} is not a short finite decimal", pointer=pointer)
    return whole, str(int(frac * 10**k)).zfill(k) if k else ""


def _magnitudes(
    a: Fraction,
    a_strict: bool,
    b: Fraction | None,
    b_strict: bool,
    integer: bool,
    decimals: int | None = None,
    pointer: str = "",
    fractional: bool = False,
) -> rx.RegexNode:
    """Unsigned decimals with value in the interval from a to b (>= 0; b None: unbounded); numbers
    with at most `decimals` significant fraction digits when it is set; with `fractional`, only
    non-integers (a fraction with a nonzero digit)."""
    if integer:
        lo = int(a) + 1 if a_strict else int(a)
        hi = None if b is None else (int(b) - 1 if b_strict else int(b))
        return digit_range(lo, hi)
    opa, opb = ("gt" if a_strict else "ge"), ("lt" if b_strict else "le")
    whole_a, fa = _split(a, pointer)
    if fractional and not fa:
        opa = "gt"  # the fraction is above .0 at the low end too
    if b is not None:
        whole_b, fb = _split(b, pointer)
        if whole_a == whole_b:
            return rx.concat(digit_range(whole_a, whole_a), _fraction(*_frac_between(fa, opa, fb, opb, decimals)))
    middle = _frac_cmp("", "gt", decimals) if fractional else (True, _ne_any(decimals))
    parts = [
        rx.concat(digit_range(whole_a, whole_a), _fraction(*_frac_cmp(fa, opa, decimals))),
        rx.concat(digit_range(whole_a + 1, None if b is None else whole_b - 1), _fraction(*middle)),
    ]
    if b is not None:
        top = _frac_between("", "gt", fb, opb, decimals) if fractional else _frac_cmp(fb, opb, decimals)
        parts.append(rx.concat(digit_range(whole_b, whole_b), _fraction(*top)))
    return rx.alt(*parts)


def number_regex(
    bounds: Bounds, *, integer: bool, pointer: str, decimals: int | None = None, fractional: bool = False
) -> rx.RegexNode:
    """JSON numbers (or integers, written without fraction or exponent) within `bounds`; numbers
    with at most `decimals` significant fraction digits (a multipleOf 10^-k) when it is set;
    with `fractional`, only non-integers, written without exponent (`not: {type: integer}`)."""
    lo: Fraction | None
    hi: Fraction | None
    if integer:
        lo, hi = (None if v is None else Fraction(v) for v in bounds.int_bounds())
        lo_s = hi_s = False
    else:
        lo, hi = bounds.lo, bounds.hi
        lo_s, hi_s = bounds.lo_strict, bounds.hi_strict
        if lo is None and hi is None and decimals is None:
            if fractional:
                return rx.concat(rx.optional(_MINUS), _INT, _FRAC_NONZERO)
            return rx.concat(rx.optional(_MINUS), _INT, _FRAC_ANY, rx.optional(_EXP))
        if (lo, hi) in ((0, None), (None, 0)) and decimals is None and not fractional:
            # Only the sign matters, so exponents stay exact.
            strict = lo_s if lo == 0 else hi_s
            positive = rx.concat(digit_range(0, None), _FRAC_ANY, rx.optional(_EXP))
            nonzero = rx.alt(rx.concat(digit_range(1, None), _FRAC_ANY), rx.concat(rx.literal("0"), _FRAC_NONZERO))
            zero = rx.concat(rx.literal("0"), _FRAC_ZERO, rx.optional(_EXP))
            signed = rx.concat(nonzero, rx.optional(_EXP))
            if strict:
                return signed if lo == 0 else rx.concat(_MINUS, signed)
            return rx.alt(positive, rx.concat(_MINUS, zero)) if lo == 0 else rx.alt(rx.concat(_MINUS, positive), zero)
    parts = []
    if hi is None or hi > 0 or (hi == 0 and not hi_s):
        # Non-negative side: magnitudes from max(lo, 0) to hi.
        a, a_s = (lo, lo_s) if lo is not None and lo >= 0 else (0, False)
        parts.append(_magnitudes(Fraction(a), a_s, hi, hi_s, integer, decimals, pointer, fractional))
    if lo is None or lo < 0 or (lo == 0 and not lo_s and not integer):
        # Negative side ("-0" included for numbers): magnitudes from max(-hi, 0) to -lo.
        a, a_s = (-hi, hi_s) if hi is not None and hi <= 0 else (0, False)
        if integer and a == 0 and not a_s:
            a, a_s = 0, True  # "-0" is not a canonical integer
        parts.append(
            rx.concat(
                _MINUS,
                _magnitudes(
                    Fraction(a), a_s, None if lo is None else -lo, lo_s, integer, decimals, pointer, fractional
                ),
            )
        )
    return rx.alt(*parts)


def integer_regex(bounds: Bounds, pointer: str) -> rx.RegexNode:
    return number_regex(bounds, integer=True, pointer=pointer)


#: Largest regex `multiples_regex` builds (its digit automaton grows fast with the step's part
#: prime to 10; 3 fits, 7 does not).
MULTIPLES_MAX_SIZE = 20_000
#: Largest part of a step prime to 10 that `multiples_regex` tries (the size bound refuses most).
MULTIPLES_MAX_FACTOR = 16
#: Most final-digit strings the step's factors 2 and 5 may leave (10^j / 2^a 5^b for j = max(a, b)).
MULTIPLES_MAX_SUFFIXES = 10_000


def _residue_paths(m: int, pointer: str) -> list[list[rx.RegexNode]]:
    """paths[u][t]: digit strings that take residue u to residue t mod m (reading r -> 10r + d),
    by Kleene's construction; a `GrammarError` once one exceeds MULTIPLES_MAX_SIZE."""
    step = [[rx.NOTHING] * m for _ in range(m)]
    for u in range(m):
        for d in range(10):
            v = (10 * u + d) % m
            step[u][v] = rx.alt(step[u][v], _digits(d, d))
    paths = [[rx.alt(rx.EMPTY, step[u][v]) if u == v else step[u][v] for v in range(m)] for u in range(m)]
    for k in range(m):
        loop = rx.star(paths[k][k])
        paths = [[rx.alt(paths[u][v], rx.concat(paths[u][k], loop, paths[k][v])) for v in range(m)] for u in range(m)]
        if max(rx.size(p) for row in paths for p in row) > MULTIPLES_MAX_SIZE:
            raise GrammarError(
                f"multipleOf: the multiples of a step with factor {m} need too large an automaton", pointer=pointer
            )
    return paths


def multiples_regex(k: int, pointer: str) -> rx.RegexNode:
    """Canonical decimals of the non-negative integer multiples of `k` (unbounded).

    k = 2^a 5^b m with m prime to 10: the last j = max(a, b) digits decide the factor 2^a 5^b,
    and the digits before them must leave the residue mod m that the last j digits complete to 0.
    """
    a, b, m = 0, 0, k
    while m % 2 == 0:
        m, a = m // 2, a + 1
    while m % 5 == 0:
        m, b = m // 5, b + 1
    j = max(a, b)
    if m > MULTIPLES_MAX_FACTOR:
        raise GrammarError(
            f"multipleOf {k}: its factor {m} (prime to 10) needs too large an automaton", pointer=pointer
        )
    if 10**j // (k // m) > MULTIPLES_MAX_SUFFIXES:
        raise GrammarError(f"multipleOf {k}: too many final digit strings to enumerate", pointer=pointer)
    short = rx.words(str(n) for n in range(0, 10**j, k)) if j else rx.literal("0")
    paths = _residue_paths(m, pointer)
    by_residue: dict[int, list[str]] = {}
    for s in range(0, 10**j, k // m):  # last j digits, a multiple of 2^a 5^b
        # the leading part P (nonempty, first digit nonzero) needs P * 10^j + s ≡ 0 (mod m)
        need = next(t for t in range(m) if (t * 10**j + s) % m == 0)
        by_residue.setdefault(need, []).append(str(s).zfill(j))
    longs = []
    for need, suffixes in by_residue.items():
        lead = rx.alt(*(rx.concat(_digits(d, d), paths[d % m][need]) for d in range(1, 10)))
        longs.append(rx.concat(lead, rx.words(suffixes) if j else rx.EMPTY))
    return rx.alt(short, *longs)


#: Most multiples written out one by one next to an unbounded `multiples_regex` side.
MULTIPLES_MAX_LISTED = 1000


def listed_multiples(k: int, lo: int, hi: int, pointer: str) -> list[int]:
    """The multiples of k in [lo, hi], at most MULTIPLES_MAX_LISTED of them."""
    first = -(-lo // k) * k
    if hi >= first and (hi - first) // k >= MULTIPLES_MAX_LISTED:
        raise GrammarError(f"multipleOf {k}: over {MULTIPLES_MAX_LISTED} multiples to list", pointer=pointer)
    return list(range(first, hi + 1, k))


def signed_multiples(k: int, lo: int | None, hi: int | None, pointer: str) -> rx.RegexNode:
    """Canonical integers that are multiples of k in [lo, hi], one end open (None): the open side is
    `multiples_regex` (less the few multiples past the bound on that side), the other side listed."""
    assert lo is None or hi is None
    mags = multiples_regex(k, pointer)

    def magnitudes_from(n: int) -> rx.RegexNode:  # multiples of magnitude >= n
        return strings.subtract_words(mags, {str(v) for v in listed_multiples(k, 0, n - 1, pointer)}) if n > 0 else mags

    def spelled(values: list[int]) -> rx.RegexNode:
        return rx.words(str(v) for v in values)

    if hi is None:
        nonneg = magnitudes_from(max(lo or 0, 0))
        if lo is None:
            return rx.alt(nonneg, rx.concat(_MINUS, magnitudes_from(1)))
        return rx.alt(nonneg, spelled(listed_multiples(k, lo, -1, pointer)) if lo < 0 else rx.NOTHING)
    assert lo is None
    negative = rx.concat(_MINUS, magnitudes_from(max(-hi, 1)))
    return rx.alt(negative, spelled(listed_multiples(k, 0, hi, pointer)) if hi >= 0 else rx.NOTHING)
