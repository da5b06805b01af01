"""Loading a causal language model for generation, and turning a request into a chat prompt.

The default model is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF in a pip wheel
(`grammask.assets.smollm2_gguf_path`). transformers can only load a GGUF by dequantising every
tensor (about 20 s on two cores), so the first load saves the result with `save_pretrained` under
`cache_dir()/models/<file>-<dtype>-<fingerprint>/`; later loads read that folder in about 3 s.
Nothing contacts a model hub: `HF_HUB_OFFLINE` is set before transformers is imported.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

from grammask import assets

__all__ = ["DEFAULT_SYSTEM_PROMPT", "chat_prompt", "load_model"]

#: Nudges a small instruct model toward answering in the requested format and nothing else.
DEFAULT_SYSTEM_PROMPT = (
    "You are a precise assistant. Answer with the requested output only, in the exact format "
    "asked for, with no explanation before or after it."
)

#: bfloat16 runs SmolLM2 about 1.5x faster than float32 on the project's 2-core CPU
#: (27 vs 18 tokens/s, greedy, KV cache) with the same greedy output on the prompts we tried.
DEFAULT_DTYPE = "bfloat16"


def _import_transformers() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "grammask's generation needs torch and transformers: pip install 'grammask[model]'"
        ) from exc
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return torch, transformers


def _idle_cores() -> int:
    """Threads for torch: one per core not already busy. On a shared machine, more threads than
    idle cores make torch's threads wait on each other: on the project's 2-core machine under load,
    one thread ran a decoding step in 0.14 s and two threads in 1.6 to 2.3 s."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1, min(cores, round(cores - busy)))


def _fingerprint(path: Path) -> str:
    stat = path.stat()
    return hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]


def _converted_dir(gguf: Path, dtype: str) -> Path:
    return assets.cache_dir() / "models" / f"{gguf.stem}-{dtype}-{_fingerprint(gguf)}"


def _convert_gguf(gguf: Path, target: Path, dtype: Any) -> None:
    """Dequantise `gguf` once and save it as a plain transformers folder at `target`."""
    _, transformers = _import_transformers()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=dtype
    )
    # The weights are plain tensors after dequantisation; only the GGUF marker blocks saving.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = target.with_name(target.name + ".part")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def load_model(path: str | os.PathLike[str] | None = None, *, dtype: str = DEFAULT_DTYPE) -> tuple[Any, Any]:
    """Load `(model, tokenizer)` for CPU generation, in evaluation mode.

    `path` is None for the embedded SmolLM2, a `.gguf` file (converted once and cached), or a local
    transformers model directory. `dtype` is a torch dtype name ("bfloat16", "float32").
    """
    torch, transformers = _import_transformers()
    torch_dtype = getattr(torch, dtype)
    source = Path(path) if path is not None else assets.smollm2_gguf_path()
    if not source.exists():
        raise FileNotFoundError(f"no model at {source}")
    if source.is_file():
        if source.suffix.lower() != ".gguf":
            raise ValueError(f"{source} is a file but not a .gguf; pass a GGUF file or a model directory")
        folder = _converted_dir(source, dtype)
        if not (folder / "config.json").exists():
            _convert_gguf(source, folder, torch_dtype)
        source = folder
    torch.set_num_threads(_idle_cores())
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(source), dtype=torch_dtype)
    model.eval()
    return model, tokenizer


def chat_prompt(tokenizer: Any, request: str, *, system: str | None = DEFAULT_SYSTEM_PROMPT) -> str:
    """`request` as the user turn of the tokenizer's chat template, ready for the assistant's answer.

    A tokenizer without a chat template gets the request back unchanged.
    """
    if not getattr(tokenizer, "chat_template", None):
        return request
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": request})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
