"""XGrammar's structural tags (the JSON format vLLM sends for tool calls) → grammar IR.

A structural tag is `{"type": "structural_tag", "format": FORMAT}`; the legacy form
`{"structures": [{"begin", "schema", "end"}], "triggers": [...]}` is read too. The formats are:

- `const_string` (`value`), `regex` (`pattern`), `grammar` (GBNF text), `json_schema`
  (`json_schema`, style `json` only, `max_whitespace_cnt`), `token` (a special token, by id or text);
- `any_text` (`excludes`): free text. Last in a tag's content, it also stops at the tag's end;
- `sequence`, `or` (`elements`); `optional`, `plus`, `star` (`content`); `repeat` (`min`, `max`;
  -1 is unbounded);
- `tag` (`begin`, `content`, `end`: a string, a list of strings, or a `token` format);
- `triggered_tags` (`triggers`, `tags`, `at_least_one`, `stop_after_first`, `excludes`): free text
  until a trigger, then the tag that begins with it, then free text again;
- `tags_with_separator` (`tags`, `separator`, `at_least_one`, `stop_after_first`);
- `dispatch` (`rules` of `[pattern, format]`, `loop`, `excludes`).

Free text follows XGrammar exactly: it never contains a trigger or an excluded string, and a trigger
is dispatched at its first occurrence. Those regular languages ("no pattern occurs", "the first
occurrence of a pattern ends here") are built from an Aho-Corasick automaton of the patterns, solved
into a regex. Token-level formats (`exclude_token`, `any_tokens`, `token_triggered_tags`,
`token_dispatch`), XML parameter styles and token budgets (`max_tokens`, `max_chars`) raise
`GrammarError`.
"""

from __future__ import annotations

import json
from itertools import count
from typing import Any

from grammask.errors import GrammarError
from grammask.frontends.ebnf import grammar_from_ebnf
from grammask.frontends.json_schema import Whitespace, grammar_from_json_schema
from grammask.frontends.regex import grammar_from_regex
from grammask.ir import grammar as g
from grammask.ir import regex as rx

__all__ = ["grammar_from_structural_tag"]

#: Largest free-text regex (`rx.size`) built from the excluded strings and triggers.
MAX_FREE_TEXT_SIZE = 200_000


def grammar_from_structural_tag(spec: dict | str, *, whitespace: object = "flexible", strict: bool = True) -> g.Grammar:
    """The grammar of a structural tag (a dict or JSON text).

    `whitespace` and `strict` apply to every `json_schema` format (`strict`: a missing
    `additionalProperties` means false, as in XGrammar).
    """
    if isinstance(spec, str):
        text = spec
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as exc:
            reason = f"the structural tag is not valid JSON: {exc.msg}"
            raise GrammarError(reason, position=exc.pos, source=text) from None
    if not isinstance(spec, dict):
        raise GrammarError(f"a structural tag is a JSON object, not {type(spec).__name__}")
    if "structures" in spec:  # the legacy form
        structures, triggers = spec["structures"], spec.get("triggers")
        if not isinstance(structures, list) or not isinstance(triggers, list):
            raise GrammarError("a legacy structural tag needs lists 'structures' and 'triggers'")
        fmt: Any = {
            "type": "triggered_tags",
            "triggers": triggers,
            "tags": [
                {
                    "type": "tag",
                    "begin": s.get("begin"),
                    "end": s.get("end"),
                    "content": {"type": "json_schema", "json_schema": s.get("schema")},
                }
                for s in structures
            ],
        }
    elif spec.get("type") == "structural_tag":
        fmt = spec.get("format")
    else:
        fmt = spec
    builder = _Builder(whitespace, strict)
    body = builder.format(fmt, (), "/format" if fmt is not spec else "")
    return g.Grammar({"root": body, **builder.rules})


class _Builder:
    def __init__(self, whitespace: object, strict: bool) -> None:
        self.whitespace = whitespace
        self.strict = strict
        self.rules: dict[str, g.Expr] = {}
        self._ids = count()

    # -- helpers ----------------------------------------------------------------------------------

    def _name(self, kind: str) -> str:
        return f"st_{next(self._ids)}_{kind}"

    def _embed(self, grammar: g.Grammar, kind: str) -> g.Expr:
        """Add `grammar`'s rules under fresh names and return a reference to its start rule."""
        prefix = self._name(kind)
        renamed = {name: f"{prefix}_{name}" for name in grammar.rules}
        for name, body in grammar.rules.items():
            self.rules[renamed[name]] = _rename(body, renamed)
        return g.ref(renamed[grammar.start])

    def format(self, fmt: Any, ends: tuple[str, ...], where: str) -> g.Expr:
        """The expression of `fmt`. `ends` are the strings that may follow it and close an
        enclosing tag: free text at the end of `fmt` must not contain them."""
        if not isinstance(fmt, dict) or not isinstance(fmt.get("type"), str):
            raise GrammarError("a format is a JSON object with a string 'type'", pointer=where)
        method = getattr(self, "_" + fmt["type"], None)
        if method is None:
            raise GrammarError(f"unsupported structural tag format {fmt['type']!r}", pointer=where)
        return method(fmt, ends, where)

    # -- basic formats ----------------------------------------------------------------------------

    def _const_string(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        return g.literal(_field(fmt, "value", str, where))

    def _regex(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        return self._embed(grammar_from_regex(_field(fmt, "pattern", str, where)), "regex")

    def _grammar(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        return self._embed(grammar_from_ebnf(_field(fmt, "grammar", str, where)), "grammar")

    def _json_schema(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        if fmt.get("style", "json") != "json":
            raise GrammarError(f"json_schema style {fmt['style']!r} is not supported (only 'json')", pointer=where)
        if fmt.get("any_order"):
            raise GrammarError("json_schema with any_order is not supported", pointer=where)
        if fmt.get("excludes"):
            raise GrammarError("json_schema with excludes is not supported", pointer=where)
        if "json_schema" not in fmt:
            raise GrammarError("json_schema needs a 'json_schema'", pointer=where)
        whitespace = self.whitespace
        max_run = fmt.get("max_whitespace_cnt")
        if max_run is not None:
            if whitespace != "compact":
                whitespace = Whitespace.flexible(_count(max_run, where))
        grammar = grammar_from_json_schema(fmt["json_schema"], whitespace=whitespace, strict=self.strict)
        return self._embed(grammar, "json")

    def _token(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        token = fmt.get("token")
        if not isinstance(token, (int, str)) or isinstance(token, bool):
            raise GrammarError("a token format needs a 'token' (an id or a token's text)", pointer=where)
        return g.token(token)

    def _any_text(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        for limit in ("max_tokens", "max_chars"):
            if fmt.get(limit) is not None:
                raise GrammarError(f"any_text with {limit} is not supported", pointer=where)
        excludes = _strings(fmt.get("excludes", []), "excludes", where)
        return g.lex(_FreeText([*excludes, *ends]).avoid())

    # -- combinators ------------------------------------------------------------------------------

    def _elements(self, fmt: dict, where: str) -> list:
        elements = fmt.get("elements")
        if not isinstance(elements, list) or not elements:
            raise GrammarError(f"{fmt['type']} needs a non-empty list 'elements'", pointer=where)
        return elements

    def _sequence(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        elements = self._elements(fmt, where)
        last = len(elements) - 1
        items = (self.format(e, ends if i == last else (), f"{where}/elements/{i}") for i, e in enumerate(elements))
        return g.seq(*items)

    def _or(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        elements = self._elements(fmt, where)
        return g.alt(*(self.format(e, ends, f"{where}/elements/{i}") for i, e in enumerate(elements)))

    def _content(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        return self.format(fmt.get("content"), ends, f"{where}/content")

    def _optional(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        return g.opt(self._content(fmt, ends, where))

    def _plus(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        return g.plus(self._content(fmt, ends, where))

    def _star(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        return g.star(self._content(fmt, ends, where))

    def _repeat(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        low, high = _count(fmt.get("min"), where), fmt.get("max")
        if high != -1:
            high = _count(high, where)
            if high < low:
                raise GrammarError(f"repeat max {high} is below min {low}", pointer=where)
        return g.rep(self._content(fmt, ends, where), low, None if high == -1 else high)

    # -- tags -------------------------------------------------------------------------------------

    def _tag(self, fmt: dict, ends: tuple[str, ...], where: str, *, skip: int = 0) -> g.Expr:
        """`begin content end`, without the first `skip` characters of `begin` (a trigger's)."""
        begin, end = fmt.get("begin"), fmt.get("end")
        if isinstance(begin, str):
            opening = g.literal(begin[skip:])
        elif isinstance(begin, dict) and begin.get("type") == "token" and not skip:
            opening = self._token(begin, (), f"{where}/begin")
        else:
            raise GrammarError("a tag's 'begin' is a string or a token format", pointer=where)
        if isinstance(end, str):
            end = [end]
        if isinstance(end, dict) and end.get("type") == "token":
            closing, end_strings = self._token(end, (), f"{where}/end"), ()
        elif isinstance(end, list) and end and all(isinstance(e, str) for e in end):
            closing, end_strings = g.alt(*(g.literal(e) for e in end)), tuple(e for e in end if e)
        else:
            reason = "a tag's 'end' is a string, a non-empty list of strings or a token format"
            raise GrammarError(reason, pointer=where)
        return g.seq(opening, self._content(fmt, end_strings, where), closing)

    def _tags(self, fmt: dict, where: str) -> list[dict]:
        tags = fmt.get("tags")
        if not isinstance(tags, list) or not tags:
            raise GrammarError(f"{fmt['type']} needs a non-empty list 'tags'", pointer=where)
        for i, tag in enumerate(tags):
            if not isinstance(tag, dict) or tag.get("type", "tag") != "tag":
                raise GrammarError("each of 'tags' is a tag format", pointer=f"{where}/tags/{i}")
        return tags

    def _tags_with_separator(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        tags = self._tags(fmt, where)
        separator = _field(fmt, "separator", str, where)
        one = g.alt(*(self._tag(t, (), f"{where}/tags/{i}") for i, t in enumerate(tags)))
        if fmt.get("stop_after_first", False):
            return one if fmt.get("at_least_one", False) else g.opt(one)
        more = g.seq(one, g.star(g.seq(g.literal(separator), one)))
        return more if fmt.get("at_least_one", False) else g.opt(more)

    def _triggered_tags(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        tags = self._tags(fmt, where)
        triggers = _strings(fmt.get("triggers"), "triggers", where)
        if not triggers or not all(triggers):
            raise GrammarError("triggered_tags needs a non-empty list of non-empty 'triggers'", pointer=where)
        groups: dict[str, list[g.Expr]] = {t: [] for t in triggers}
        for i, tag in enumerate(tags):
            begin = tag.get("begin")
            matched = [t for t in triggers if isinstance(begin, str) and begin.startswith(t)]
            if len(matched) != 1:
                raise GrammarError(
                    f"tag {i}'s begin {begin!r} must start with exactly one trigger, not {len(matched)}", pointer=where
                )
            groups[matched[0]].append(self._tag(tag, (), f"{where}/tags/{i}", skip=len(matched[0])))
        at_least_one, stop = fmt.get("at_least_one", False), fmt.get("stop_after_first", False)
        if at_least_one and stop:
            return g.alt(*(self._tag(t, (), f"{where}/tags/{i}") for i, t in enumerate(tags)))
        excludes = _strings(fmt.get("excludes", []), "excludes", where)
        dispatch = self._dispatch_rule([(t, g.alt(*groups[t])) for t in triggers], excludes, ends, loop=not stop)
        if not at_least_one:
            return dispatch
        return g.seq(g.alt(*(self._tag(t, (), f"{where}/tags/{i}") for i, t in enumerate(tags))), dispatch)

    def _dispatch(self, fmt: dict, ends: tuple[str, ...], where: str) -> g.Expr:
        rules = fmt.get("rules")
        if not isinstance(rules, list):
            raise GrammarError("dispatch needs a list 'rules' of [pattern, format] pairs", pointer=where)
        pairs = []
        for i, rule in enumerate(rules):
            if not (isinstance(rule, list) and len(rule) == 2 and isinstance(rule[0], str) and rule[0]):
                raise GrammarError("each dispatch rule is a [pattern, format] pair", pointer=f"{where}/rules/{i}")
            pairs.append((rule[0], self.format(rule[1], (), f"{where}/rules/{i}/1")))
        excludes = _strings(fmt.get("excludes", []), "excludes", where)
        return self._dispatch_rule(pairs, excludes, ends, loop=fmt.get("loop", True))

    def _dispatch_rule(
        self, pairs: list[tuple[str, g.Expr]], excludes: list[str], ends: tuple[str, ...], *, loop: bool
    ) -> g.Expr:
        """Free text with no pattern or excluded string in it; where a pattern first occurs, its
        format follows (then, with `loop`, free text again)."""
        patterns = [p for p, _ in pairs]
        text = _FreeText([*patterns, *excludes, *ends])
        name = self._name("dispatch")
        branches = [g.lex(text.avoid())]
        for pattern, body in pairs:
            upto = text.first_occurrence(pattern)
            branches.append(g.seq(g.lex(upto), body, g.ref(name)) if loop else g.seq(g.lex(upto), body))
        self.rules[name] = g.alt(*branches)
        return g.ref(name)


# -- free text: Aho-Corasick automaton of the patterns, solved into regexes ------------------------


class _FreeText:
    """The automaton of texts in which none of `patterns` has occurred yet."""

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = sorted({p for p in patterns if p})
        goto: list[dict[str, int]] = [{}]
        depth, prefix = [0], [""]
        for pattern in self.patterns:
            state = 0
            for c in pattern:
                if c not in goto[state]:
                    goto.append({})
                    depth.append(depth[state] + 1)
                    prefix.append(prefix[state] + c)
                    goto[state][c] = len(goto) - 1
                state = goto[state][c]
        self.prefix = prefix
        #: patterns that are suffixes of each state's text: reaching such a state is an occurrence
        self.found = [[p for p in self.patterns if text.endswith(p)] for text in prefix]
        self.chars = sorted({c for p in self.patterns for c in p})
        live = [s for s in range(len(goto)) if not self.found[s]]
        self.live = live
        index = {text: s for s, text in enumerate(prefix)}
        # next state on each pattern character: the longest suffix of (text + c) that is a prefix
        self.step: dict[int, dict[str, int]] = {}
        for s in live:
            row = {}
            for c in self.chars:
                text = prefix[s] + c
                while text not in index:
                    text = text[1:]
                row[c] = index[text]
            self.step[s] = row
        self.other = rx.char_class([(ord(c), ord(c)) for c in self.chars], negate=True)

    def _solve(self, final: dict[int, rx.RegexNode]) -> rx.RegexNode:
        """The regex of paths from the start through live states, ending with `final[state]`."""
        coef: dict[int, dict[int, rx.RegexNode]] = {}
        const: dict[int, rx.RegexNode] = {}
        for s in self.live:
            row: dict[int, list[rx.RegexNode]] = {0: [self.other]}
            for c, t in self.step[s].items():
                if not self.found[t]:
                    row.setdefault(t, []).append(rx.literal(c))
            coef[s] = {t: rx.alt(*items) for t, items in row.items()}
            const[s] = final.get(s, rx.NOTHING)
        remaining = set(self.live)
        for s in sorted(self.live, key=lambda s: -len(self.prefix[s])):  # deepest first
            remaining.discard(s)
            loop = coef[s].pop(s, None)
            if loop is not None:
                star = rx.star(loop)
                coef[s] = {t: rx.concat(star, r) for t, r in coef[s].items()}
                const[s] = rx.concat(star, const[s])
            for p in remaining:
                if s in coef[p]:
                    a = coef[p].pop(s)
                    for t, r in coef[s].items():
                        coef[p][t] = rx.alt(coef[p][t], rx.concat(a, r)) if t in coef[p] else rx.concat(a, r)
                    const[p] = rx.alt(const[p], rx.concat(a, const[s]))
        result = const[0]
        if rx.size(result) > MAX_FREE_TEXT_SIZE:
            raise GrammarError(f"the free text around {self.patterns!r} needs too large an automaton")
        return result

    def avoid(self) -> rx.RegexNode:
        """Texts in which no pattern occurs."""
        return self._solve({s: rx.EMPTY for s in self.live})

    def first_occurrence(self, pattern: str) -> rx.RegexNode:
        """Texts that end with the first occurrence of any pattern, that occurrence being `pattern`."""
        final: dict[int, rx.RegexNode] = {}
        for s in self.live:
            chars = [c for c, t in self.step[s].items() if pattern in self.found[t]]
            if chars:
                final[s] = rx.alt(*(rx.literal(c) for c in chars))
        return self._solve(final)


# -- small helpers ---------------------------------------------------------------------------------


def _field(fmt: dict, key: str, kind: type, where: str) -> Any:
    value = fmt.get(key)
    if not isinstance(value, kind):
        raise GrammarError(f"{fmt['type']} needs a {kind.__name__} {key!r}", pointer=where)
    return value


def _strings(value: Any, key: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise GrammarError(f"{key!r} must be a list of strings", pointer=where)
    return value


def _count(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise GrammarError(f"expected a count >= 0, not {value!r}", pointer=where)
    return value


def _rename(expr: g.Expr, names: dict[str, str]) -> g.Expr:
    if isinstance(expr, g.Ref):
        return g.Ref(names[expr.name])
    if isinstance(expr, g.Seq):
        return g.Seq(tuple(_rename(i, names) for i in expr.items))
    if isinstance(expr, g.Alt):
        return g.Alt(tuple(_rename(i, names) for i in expr.items))
    if isinstance(expr, g.Rep):
        return g.Rep(_rename(expr.item, names), expr.min, expr.max)
    return expr
