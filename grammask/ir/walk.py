"""Recursive walks without the Python stack, for trees and rule chains as deep as their input.

A walk is written as a generator function that, where it would call itself, yields the generator
of the call instead and receives the call's result back: `value = yield walk(child)`. `run` drives
such a walk with an explicit stack, so depth costs heap memory, not Python frames, and a
100,000-deep tree needs no recursion limit.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

__all__ = ["Walk", "run"]

T = TypeVar("T")
#: A walk returning T: it yields sub-walks and is sent their results.
Walk = Generator["Walk[Any]", Any, T]


def run(walk: Walk[T]) -> T:
    """The result of `walk`, running every sub-walk it yields on an explicit stack."""
    stack: list[Walk[Any]] = [walk]
    value: Any = None
    while True:
        try:
            child = stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            if not stack:
                return stop.value
            value = stop.value
        else:
            stack.append(child)
            value = None
