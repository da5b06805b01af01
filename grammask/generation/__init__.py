"""Generation with a transformers causal LM: the embedded model, the decoding loop, jump-forward,
speculative decoding and safe end. Needs the `model` extra (torch, transformers); importing this
package loads neither."""

from grammask.generation.loop import GenerationResult, TextStream, generate
from grammask.generation.model import DEFAULT_SYSTEM_PROMPT, chat_prompt, load_model
from grammask.generation.speculative import NgramDrafter

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "GenerationResult",
    "NgramDrafter",
    "TextStream",
    "chat_prompt",
    "generate",
    "load_model",
]
