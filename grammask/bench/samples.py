"""The formats of `python -m grammask.bench grammars`, each with a realistic text it accepts.

Regexes use explicit classes (`[0-9]`, not `\\d`): the engines disagree on whether `\\d` and `\\w`
are ASCII or Unicode, and the masks are compared across engines. The GBNF grammars are llama.cpp's
own (`grammask.assets.llama_cpp_vendor_dir() / "grammars"`); their texts follow each grammar's
quirks (the C grammar allows no whitespace between statements, for instance).
"""

from __future__ import annotations

from dataclasses import dataclass

from grammask import assets

__all__ = ["Case", "GBNF_TEXTS", "REGEX_CASES", "cases"]


@dataclass(frozen=True)
class Case:
    name: str
    fmt: str  # "regex" or "gbnf"
    source: str
    text: str


_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"

REGEX_CASES: tuple[Case, ...] = tuple(
    Case(name, "regex", source, text)
    for name, source, text in [
        ("email", r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}", "jane.doe+news@mail.example-corp.co.uk"),
        ("iso_date", r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])", "2024-02-29"),
        (
            "date_time",
            r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})",
            "2023-11-05T14:30:59.123+01:00",
        ),
        ("phone", r"\+?[0-9]{1,3}[ -]?\(?[0-9]{3}\)?[ -]?[0-9]{3}[ -]?[0-9]{4}", "+1 (415) 555-0132"),
        (
            "uuid",
            r"[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
            "123e4567-e89b-42d3-a456-426614174000",
        ),
        ("ipv4", rf"({_OCTET}\.){{3}}{_OCTET}", "192.168.10.254"),
        ("float", r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", "-12345.6789e-10"),
        ("words", r"[a-z]+( [a-z]+)*", "the quick brown fox jumps over the lazy dog while the cat sleeps"),
        (
            "quoted_string",
            r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"',
            r'"She said \"hi\" to Zoë,\n\tthen left: caf\u00e9 at 5\/6 o\u2019clock"',
        ),
        (
            "url",
            r"https?://[a-zA-Z0-9.-]+(:[0-9]{1,5})?(/[a-zA-Z0-9._~%-]*)*(\?[a-zA-Z0-9=&_%-]*)?",
            "https://api.example.com:8080/v1/users/42/orders?status=open&sort=desc",
        ),
        (
            "person_name",
            r"[A-Z][a-z]{1,15}( [A-Z][a-z]{1,15}){0,3}",
            "Mary Elizabeth Van Buren",
        ),
        (
            "free_line",
            r"[^\n]{1,200}\n",
            "Grüße aus München — 東京は晴れ, 42°C in the shade! ✓\n",
        ),
    ]
)

_JSON_TEXT = """{
  "name": "grammask",
  "version": 3,
  "ratio": -0.125,
  "tags": [
    "fast",
    "exact",
    "caf\\u00e9"
  ],
  "owner": {
    "login": "jdoe",
    "active": true,
    "manager": null
  },
  "notes": "line one\\nline \\"two\\""
}"""

#: A text each llama.cpp grammar accepts, by grammar file stem.
GBNF_TEXTS: dict[str, str] = {
    "arithmetic": "12 +x*(3 -y_2) = 42\nfoo/7 = bar\n(a +b)*c -d = 100\n",
    "c": (
        "int add(int a){return a+1;}float half(float v){return v/2;}"
        "int main(){int x = 10;int total = 0;// sum the numbers\n"
        "for(int i = 0; i<x; i = i+1){total = total+add(i);}"
        "while(total>100){total = total-7;}"
        "if(total==3){return 1;}else{/* done */return total*2;}}"
    ),
    "chess": (
        "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n4. Ba4 Nf6\n5. O-O Be7\n6. Re1 b5\n7. Bb3 d6\n"
        "8. c3 O-O\n9. h3 Nb8\n10. d4 Nbd7\n11. c4 c6\n12. cxb5 axb5\n13. Nc3 Bb7\n"
        "14. Bg5 b4\n15. Nb1 h6\n16. Bh4 c5\n17. dxe5 Nxe4\n18. Bxe7 Qxe7\n19. exd6 Qf6\n"
        "20. Nbd2 Nxd6\n21. Nc4 Nxc4\n22. Bxc4 Nb6\n23. Ne5 Rae8\n24. Bxf7+ Rxf7\n"
    ),
    "english": (
        "The quick brown fox (aged 3) jumps over 2 lazy dogs, doesn't it? Yes: 100% sure!\n"
        "Email me at jdoe@example.com; see https://example.com/faq#top for more."
    ),
    "japanese": (
        "吾輩は猫である。名前はまだ無い。\nどこで生れたかとんと見当がつかぬ。\n今日はコンピュータで東京の天気を調べた。"
    ),
    "json": _JSON_TEXT,
    "json_arr": (
        '[\n{"id": 1, "name": "alpha", "scores": [9.5, 7, 10]},\n{"id": 2, "tags": []},\n"plain text",\n42,\nfalse\n]'
    ),
    "list": "- buy milk and eggs\n- call Alice about the trip to Zürich\n- fix bug #42 in the parser\n",
}


def cases() -> list[Case]:
    """The regex cases, then every llama.cpp grammar that has a sample text."""
    folder = assets.llama_cpp_vendor_dir() / "grammars"
    gbnf = [
        Case(stem, "gbnf", (folder / f"{stem}.gbnf").read_text(encoding="utf-8"), text)
        for stem, text in GBNF_TEXTS.items()
    ]
    return [*REGEX_CASES, *gbnf]
