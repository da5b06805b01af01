"""`format` values as regexes over decoded code points.

Each regex accepts only strings that are valid for the format (sometimes a documented subset:
see docs/json_schema.md), never more. Formats not listed here are annotations, as in draft 2020-12.
"""

from __future__ import annotations

from functools import cache

from grammask.frontends.json_schema.numbers import digit_range
from grammask.ir import regex as rx

__all__ = ["FORMATS", "UNENFORCEABLE_FORMATS", "format_regex"]


def _c(spec: str) -> rx.RegexNode:
    """A class from a compact spec: 'a-z', '0-9', single characters."""
    ranges, i = [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            ranges.append((ord(spec[i]), ord(spec[i + 2])))
            i += 3
        else:
            ranges.append((ord(spec[i]), ord(spec[i])))
            i += 1
    return rx.char_class(ranges)


_L, _S, _A, _R = rx.literal, rx.concat, rx.alt, rx.repeat
_DIGIT, _HEX, _ALNUM = _c("0-9"), _c("0-9a-fA-F"), _c("a-zA-Z0-9")


def _two(lo: int, hi: int) -> rx.RegexNode:
    """Two-digit zero-padded numbers lo..hi."""
    return _A(*(_L(f"{n:02d}") for n in range(lo, hi + 1)))


def _date() -> rx.RegexNode:
    # Years 0001-9999: RFC 3339 allows 0000, but Python's date (and so `jsonschema`) does not.
    year = _A(
        _S(_c("1-9"), _R(_DIGIT, 3, 3)),
        _S(_L("0"), _c("1-9"), _R(_DIGIT, 2, 2)),
        _S(_L("00"), _c("1-9"), _DIGIT),
        _S(_L("000"), _c("1-9")),
    )
    leap = _A(
        _S(_R(_DIGIT, 2, 2), _A(_L("04"), _L("08"), _S(_c("2468"), _c("048")), _S(_c("13579"), _c("26")))),
        _S(_A(_S(_L("0"), _c("48")), _S(_c("2468"), _c("048")), _S(_c("13579"), _c("26"))), _L("00")),
    )
    long_months, short_months = [1, 3, 5, 7, 8, 10, 12], [4, 6, 9, 11]
    month_day = _A(
        _S(_A(*(_L(f"{m:02d}") for m in long_months)), _L("-"), _two(1, 31)),
        _S(_A(*(_L(f"{m:02d}") for m in short_months)), _L("-"), _two(1, 30)),
        _S(_L("02-"), _two(1, 28)),
    )
    return _A(_S(year, _L("-"), month_day), _S(leap, _L("-02-29")))


def _time() -> rx.RegexNode:
    frac = rx.optional(_S(_L("."), rx.plus(_DIGIT)))
    offset = _A(_c("Zz"), _S(_c("+-"), _two(0, 23), _L(":"), _two(0, 59)))
    # A leap second is 23:59:60 UTC; written only with a zero offset (other offsets would make the
    # automaton remember the local time: thousands of states for every date-time).
    leap = _S(_L("23:59:60"), frac, _A(_c("Zz"), _S(_c("+-"), _L("00:00"))))
    return _A(_S(_two(0, 23), _L(":"), _two(0, 59), _L(":"), _two(0, 59), frac, offset), leap)


def _duration() -> rx.RegexNode:
    n = rx.plus(_DIGIT)

    def chain(units: str) -> rx.RegexNode:
        # One or more of the units, in order: the RFC 3339 duration grammar.
        if not units:
            return rx.NOTHING
        head = _S(n, _L(units[0]))
        return _A(_S(head, rx.optional(chain(units[1:]))), chain(units[1:]))

    time = _S(_L("T"), chain("HMS"))
    return _S(_L("P"), _A(_S(chain("YMD"), rx.optional(time)), time, _S(n, _L("W"))))


def _hostname() -> rx.RegexNode:
    # At most 4 labels, the first of at most 63 characters (the RFC's maximum), the others of at
    # most 62: never longer than the 253 characters allowed (63 + 3 x 63 would be 255).
    def label(most: int) -> rx.RegexNode:
        return _S(_ALNUM, rx.optional(_S(_R(_c("a-zA-Z0-9-"), 0, most - 2), _ALNUM)))

    return _S(label(63), _R(_S(_L("."), label(62)), 0, 3))


def _ipv4() -> rx.RegexNode:
    octet = digit_range(0, 255)
    return _S(octet, _R(_S(_L("."), octet), 3, 3))


def _ipv6() -> rx.RegexNode:
    h16 = _R(_HEX, 1, 4)
    ls32 = _A(_S(h16, _L(":"), h16), _ipv4())

    def groups(k: int) -> rx.RegexNode:
        return _R(_S(h16, _L(":")), k, k)

    forms = [_S(groups(6), ls32), _S(_L("::"), groups(5), ls32)]
    for before, after in ((0, 4), (1, 3), (2, 2), (3, 1), (4, 0)):
        head = rx.optional(_S(_R(_S(h16, _L(":")), 0, before), h16))
        forms.append(_S(head, _L("::"), groups(after), ls32))
    forms.append(_S(rx.optional(_S(_R(_S(h16, _L(":")), 0, 5), h16)), _L("::"), h16))
    forms.append(_S(rx.optional(_S(_R(_S(h16, _L(":")), 0, 6), h16)), _L("::")))
    return _A(*forms)


@cache
def _uri_parts(international: bool = False) -> dict[str, rx.RegexNode]:
    """The pieces of the RFC 3986 grammar; with `international`, RFC 3987's IRIs (non-ASCII
    characters allowed wherever unreserved ones are)."""
    pct = _S(_L("%"), _HEX, _HEX)
    unreserved, sub_delims = _c("a-zA-Z0-9-._~"), _c("!$&'()*+,;=")
    if international:
        unreserved = rx.alt(unreserved, rx.char_class([(0xA0, 0xD7FF), (0xE000, 0xFFFD), (0x10000, 0x10FFFF)]))
    pchar = _A(unreserved, pct, sub_delims, _c(":@"))
    segment = rx.star(pchar)
    segment_nz = rx.plus(pchar)
    host = _A(rx.star(_A(unreserved, pct, sub_delims)), _ipv4(), _S(_L("["), _ipv6(), _L("]")))
    userinfo = rx.star(_A(unreserved, pct, sub_delims, _L(":")))
    authority = _S(rx.optional(_S(userinfo, _L("@"))), host, rx.optional(_S(_L(":"), rx.star(_DIGIT))))
    path_abempty = rx.star(_S(_L("/"), segment))
    path_absolute = _S(_L("/"), rx.optional(_S(segment_nz, path_abempty)))
    tail = _S(
        rx.optional(_S(_L("?"), rx.star(_A(pchar, _c("/?"))))), rx.optional(_S(_L("#"), rx.star(_A(pchar, _c("/?")))))
    )
    hier = _A(_S(_L("//"), authority, path_abempty), path_absolute, _S(segment_nz, path_abempty), rx.EMPTY)
    scheme = _S(_c("a-zA-Z"), rx.star(_c("a-zA-Z0-9+.-")))
    segment_nz_nc = rx.plus(_A(unreserved, pct, sub_delims, _L("@")))
    relative = _A(_S(_L("//"), authority, path_abempty), path_absolute, _S(segment_nz_nc, path_abempty), rx.EMPTY)
    return {"uri": _S(scheme, _L(":"), hier, tail), "relative": _S(relative, tail)}


def _json_pointer() -> rx.RegexNode:
    return rx.star(
        _S(
            _L("/"),
            rx.star(
                _A(rx.char_class([(ord("~"), ord("~")), (ord("/"), ord("/"))], negate=True), _S(_L("~"), _c("01")))
            ),
        )
    )


def _email() -> rx.RegexNode:
    """RFC 5321 mailboxes: a dot-atom or quoted-string local part; a host name or an IPv4/IPv6
    address literal."""
    atom = rx.plus(_c("a-zA-Z0-9!#$%&'*+/=?^_`{|}~-"))
    quoted = _S(
        _L('"'),
        rx.star(_A(rx.char_class([(32, 33), (35, 91), (93, 126)]), _S(_L("\\"), rx.char_class([(32, 126)])))),
        _L('"'),
    )
    local = _A(_S(atom, rx.star(_S(_L("."), atom))), quoted)
    literal = _S(_L("["), _A(_ipv4(), _S(_L("IPv6:"), _ipv6())), _L("]"))
    return _S(local, _L("@"), _A(_hostname(), literal))


def _uuid() -> rx.RegexNode:
    return _S(*(_S(_R(_HEX, k, k), _L("-")) for k in (8, 4, 4, 4)), _R(_HEX, 12, 12))


_BUILDERS = {
    "date": _date,
    "time": _time,
    "date-time": lambda: _S(_date(), _c("Tt"), _time()),
    "duration": _duration,
    "email": _email,
    "hostname": _hostname,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "uuid": _uuid,
    "uri": lambda: _uri_parts()["uri"],
    "uri-reference": lambda: _A(_uri_parts()["uri"], _uri_parts()["relative"]),
    "iri": lambda: _uri_parts(True)["uri"],
    "iri-reference": lambda: _A(_uri_parts(True)["uri"], _uri_parts(True)["relative"]),
    "json-pointer": lambda: _json_pointer(),
    "relative-json-pointer": lambda: _S(_A(_L("0"), _S(_c("1-9"), rx.star(_DIGIT))), _A(_L("#"), _json_pointer())),
}
#: Formats of the JSON Schema specification that grammask cannot enforce: asserting them is an
#: error (dropped with a warning when lenient), never a silently wider grammar.
UNENFORCEABLE_FORMATS = frozenset({"idn-email", "idn-hostname", "regex", "uri-template"})
#: The formats grammask enforces.
FORMATS = frozenset(_BUILDERS)


def format_regex(name: str) -> rx.RegexNode | None:
    """The regex of a known format, None for any other (an annotation)."""
    return _built(name) if name in _BUILDERS else None


@cache
def _built(name: str) -> rx.RegexNode:
    """Each format's regex, built once (only known names: any string may name a format)."""
    return _BUILDERS[name]()
