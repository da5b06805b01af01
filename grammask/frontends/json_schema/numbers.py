"""JSON numbers and integers within bounds, as exact digit automata.

A bound splits the number line by sign; each side is a range of magnitudes, written as an integer
part in a digit range followed by the fraction that range allows (any, none-or-zero, or nonzero).
Bounds must be integers (or integer-valued); exponent notation is only produced for unbounded
numbers and numbers bounded by 0 alone, where the sign decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from grammask.errors import GrammarError
from grammask.ir import regex as rx

__all__ = ["Bounds", "integer_regex", "number_regex", "digit_range"]

_DIGIT = rx.char_class([(0x30, 0x39)])
_NONZERO = rx.char_class([(0x31, 0x39)])
_INT = rx.alt(rx.literal("0"), rx.concat(_NONZERO, rx.star(_DIGIT)))
_EXP = rx.concat(rx.char_class([(0x45, 0x45), (0x65, 0x65)]), rx.optional(rx.char_class([(0x2B, 0x2B), (0x2D, 0x2D)])),
                 rx.plus(_DIGIT))
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


def _magnitudes(a: int, a_strict: bool, b: int | None, b_strict: bool, integer: bool) -> rx.RegexNode:
    """Unsigned decimals with value in the interval from a to b (integers >= 0; b None: unbounded)."""
    if integer:
        lo = a + 1 if a_strict else a
        hi = None if b is None else (b - 1 if b_strict else b)
        return digit_range(lo, hi)
    if b is not None and a == b:
        return rx.concat(digit_range(a, a), _FRAC_ZERO) if not (a_strict or b_strict) else rx.NOTHING
    parts = [rx.concat(digit_range(a, a), _FRAC_NONZERO if a_strict else _FRAC_ANY)]
    middle_hi = None if b is None else b - 1
    parts.append(rx.concat(digit_range(a + 1, middle_hi), _FRAC_ANY))
    if b is not None and not b_strict:
        parts.append(rx.concat(digit_range(b, b), _FRAC_ZERO))
    return rx.alt(*parts)


def _integral(value: Fraction | None, pointer: str) -> int | None:
    if value is None:
        return None
    if value.denominator != 1:
        raise GrammarError(f"a non-integer bound {float(value)} on a number cannot be enforced exactly",
                           pointer=pointer)
    return int(value)


def number_regex(bounds: Bounds, *, integer: bool, pointer: str) -> rx.RegexNode:
    """JSON numbers (or integers, written without fraction or exponent) within `bounds`."""
    if integer:
        lo, hi = bounds.int_bounds()
        lo_s = hi_s = False
    else:
        lo, hi = _integral(bounds.lo, pointer), _integral(bounds.hi, pointer)
        lo_s, hi_s = bounds.lo_strict, bounds.hi_strict
        if lo is None and hi is None:
            return rx.concat(rx.optional(_MINUS), _INT, _FRAC_ANY, rx.optional(_EXP))
        if (lo, hi) in ((0, None), (None, 0)):
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
        parts.append(_magnitudes(a, a_s, hi, hi_s, integer))
    if lo is None or lo < 0 or (lo == 0 and not lo_s and not integer):
        # Negative side ("-0" included for numbers): magnitudes from max(-hi, 0) to -lo.
        a, a_s = (-hi, hi_s) if hi is not None and hi <= 0 else (0, False)
        if integer and a == 0 and not a_s:
            a, a_s = 0, True  # "-0" is not a canonical integer
        parts.append(rx.concat(_MINUS, _magnitudes(a, a_s, None if lo is None else -lo, lo_s, integer)))
    return rx.alt(*parts)


def integer_regex(bounds: Bounds, pointer: str) -> rx.RegexNode:
    return number_regex(bounds, integer=True, pointer=pointer)
