"""The logits-processor protocol: what a processor sees at each decoding step and what it keeps.

A processor works on a whole batch of logits (`[batch, vocab]`, numpy or torch). It may keep
per-row state (a grammar matcher, a DFA over token ids): `init(batch)` makes the state for a new
batch and `process(logits, state, ctx)` returns the new logits and the state for the next step.
Processors return new logits and leave their input untouched; state objects may be updated in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

__all__ = ["GenerationContext", "LogitsProcessor", "Stage", "StatelessProcessor"]

S = TypeVar("S")


class Stage(IntEnum):
    """Where a processor runs in a `Pipeline` (lower first).

    Hard masks come first so that penalties and truncation only ever see allowed tokens; temperature
    comes before truncation so that top-p and min-p measure the distribution actually sampled.
    """

    MASK = 0
    PENALTY = 1
    TEMPERATURE = 2
    TRUNCATION = 3


@dataclass
class GenerationContext:
    """What a processor may look at besides the logits.

    `sequences` is the `[batch, current_length]` token-id array (numpy or torch, on the logits'
    device), prompt first; `input_length` is the prompt's length, so the tokens generated so far are
    `sequences[:, input_length:]`.
    """

    sequences: Any
    input_length: int
    current_length: int

    def __post_init__(self) -> None:
        if not 0 <= self.input_length <= self.current_length:
            raise ValueError(f"input_length {self.input_length} must lie in [0, current_length={self.current_length}]")
        if tuple(self.sequences.shape[-1:]) != (self.current_length,):
            raise ValueError(
                f"sequences of shape {tuple(self.sequences.shape)} do not have current_length "
                f"{self.current_length} columns"
            )

    @classmethod
    def start(cls, prompts: Any) -> GenerationContext:
        """The context of the first step: `prompts` is `[batch, input_length]`."""
        return cls(prompts, prompts.shape[-1], prompts.shape[-1])

    @property
    def generated(self) -> int:
        """How many tokens have been generated so far."""
        return self.current_length - self.input_length


@runtime_checkable
class LogitsProcessor(Protocol[S]):
    """A batch logits processor with per-batch state `S`."""

    stage: ClassVar[Stage]

    def init(self, batch: int) -> S:
        """The state before the first step of a batch of `batch` rows."""

    def process(self, logits: Any, state: S, ctx: GenerationContext) -> tuple[Any, S]:
        """The processed logits (a new array) and the state for the next step."""


class StatelessProcessor:
    """Base for processors that need no state: implement `apply(logits, ctx)`."""

    stage: ClassVar[Stage] = Stage.MASK

    def init(self, batch: int) -> None:
        return None

    def process(self, logits: Any, state: None, ctx: GenerationContext) -> tuple[Any, None]:
        return self.apply(logits, ctx), None

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        raise NotImplementedError
