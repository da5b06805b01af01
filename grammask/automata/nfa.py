"""Regex syntax tree → character-level NFA (Thompson's construction).

Each occurrence of a character class is one state with one edge reading that class; sequences,
choices and repeats join them with epsilon edges. Bounded repeats are expanded into copies,
nested so that `x{0,n}` never puts more than two copies' entries in one epsilon closure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grammask.ir import regex as rx

__all__ = ["CharNFA", "build_nfa"]


@dataclass
class CharNFA:
    """Per state: the class its one character edge reads (None: no edge), that edge's target,
    and epsilon edges."""

    labels: list[rx.CharClass | None] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)
    eps: list[list[int]] = field(default_factory=list)
    start: int = 0
    final: int = 0

    def new_state(self) -> int:
        self.labels.append(None)
        self.targets.append(-1)
        self.eps.append([])
        return len(self.eps) - 1


def build_nfa(node: rx.RegexNode) -> CharNFA:
    nfa = CharNFA()
    nfa.start, nfa.final = _build(nfa, node)
    return nfa


def _build(nfa: CharNFA, node: rx.RegexNode) -> tuple[int, int]:
    """Add `node`'s states; return its (entry, exit) states."""
    if isinstance(node, rx.CharClass):
        entry, exit_ = nfa.new_state(), nfa.new_state()
        nfa.labels[entry], nfa.targets[entry] = node, exit_
        return entry, exit_
    if isinstance(node, rx.Concat):
        entry, cur = _build(nfa, node.items[0])
        for item in node.items[1:]:
            a, b = _build(nfa, item)
            nfa.eps[cur].append(a)
            cur = b
        return entry, cur
    if isinstance(node, rx.Alt):
        entry, exit_ = nfa.new_state(), nfa.new_state()
        for item in node.items:
            a, b = _build(nfa, item)
            nfa.eps[entry].append(a)
            nfa.eps[b].append(exit_)
        return entry, exit_
    inner = node.item
    if isinstance(inner, rx.Repeat) and inner.min <= 1:
        # (x{0|1,b}){m,n} is x{m·min, n·b}: same counts, and no epsilon closures spanning copies.
        high = None if inner.max is None or node.max is None else inner.max * node.max
        return _build(nfa, rx.repeat(inner.item, node.min * inner.min, high))
    entry = cur = nfa.new_state()
    for _ in range(node.min):
        a, b = _build(nfa, node.item)
        nfa.eps[cur].append(a)
        cur = b
    if node.max is None:
        hub = nfa.new_state()
        a, b = _build(nfa, node.item)
        nfa.eps[cur].append(hub)
        nfa.eps[hub].append(a)
        nfa.eps[b].append(hub)
        return entry, hub
    exit_ = nfa.new_state()
    for _ in range(node.max - node.min):
        a, b = _build(nfa, node.item)
        nfa.eps[cur] += (exit_, a)
        cur = b
    nfa.eps[cur].append(exit_)
    return entry, exit_
