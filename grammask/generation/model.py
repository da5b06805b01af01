"""Loading a causal language model for generation, the names its `forward` takes, and turning a
request into a chat prompt.

The default model is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF in a pip wheel
(`grammask.assets.smollm2_gguf_path`). transformers can only load a GGUF by dequantising every
tensor (about 20 s on two cores), so the first load saves the result with `save_pretrained` under
`cache_dir()/models/<file>-<dtype>-<fingerprint>/` (about 270 MB for SmolLM2 in bfloat16; the size
is announced on stderr before anything is written); later loads read that folder in about 3 s.
Nothing contacts a model hub: every transformers call passes `local_files_only=True`. Importing or
calling this module changes no environment variable and leaves transformers' logging as it was.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from grammask import assets

__all__ = [
    "DEFAULT_DTYPE",
    "DEFAULT_SYSTEM_PROMPT",
    "ForwardKeywords",
    "chat_prompt",
    "check_model_path",
    "forward_keywords",
    "load_model",
    "load_tokenizer",
    "load_weights",
    "model_width",
    "prepare_model",
]

#: Nudges a small instruct model toward answering in the requested format and nothing else.
DEFAULT_SYSTEM_PROMPT = (
    "You are a precise assistant. Answer with the requested output only, in the exact format "
    "asked for, with no explanation before or after it."
)

#: bfloat16 runs SmolLM2 about 1.5x faster than float32 on the project's 2-core CPU
#: (27 vs 18 tokens/s, greedy, KV cache) with the same greedy output on the prompts we tried.
DEFAULT_DTYPE = "bfloat16"

_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


class ForwardKeywords(NamedTuple):
    """How a transformers causal LM's `forward` names what the decoding loops pass it."""

    #: the keyword of the key/value cache, and the output's field for it after the pass: `cache`
    #: where `forward` takes it (transformers 5.24 warns where `past_key_values` is passed, and
    #: 5.40 drops it), `past_key_values` in earlier versions
    cache: str
    #: whether it can compute the logits of the last positions only (`logits_to_keep`)
    logits_to_keep: bool


def forward_keywords(model: Any) -> ForwardKeywords:
    """The keywords `model.forward` takes, read from its signature (once per decoding loop)."""
    parameters = inspect.signature(model.forward).parameters
    return ForwardKeywords("cache" if "cache" in parameters else "past_key_values", "logits_to_keep" in parameters)


def _stderr(message: str) -> None:
    print(f"grammask: {message}", file=sys.stderr, flush=True)


def _import_transformers() -> Any:
    try:
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError("grammask's generation needs torch and transformers: pip install 'grammask[model]'") from exc
    return torch, transformers


@contextmanager
def _quiet(transformers: Any) -> Iterator[None]:
    """transformers' warnings and progress bars off for the block, then as the caller had them."""
    logging = transformers.utils.logging
    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


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


def _gguf_reader(path: Path) -> Any:
    from gguf import GGUFReader

    try:
        return GGUFReader(str(path))
    except (ValueError, OSError) as exc:
        raise ValueError(f"{path} is not a readable GGUF file: {exc}") from None


def _gguf_parameters(path: Path) -> int:
    """The number of weights in a GGUF file; raises ValueError for a file with none."""
    tensors = _gguf_reader(path).tensors
    if not tensors:
        raise ValueError(
            f"{path} holds a tokenizer vocabulary but no model weights (a vocabulary-only GGUF); "
            "pass a GGUF file with weights or a transformers model folder"
        )
    return sum(int(t.n_elements) for t in tensors)


#: The tokenizer's special-token attributes, by the GGUF metadata key that names each one's id.
_GGUF_SPECIAL_TOKENS = {
    "tokenizer.ggml.bos_token_id": "bos_token",
    "tokenizer.ggml.eos_token_id": "eos_token",
    "tokenizer.ggml.unknown_token_id": "unk_token",
    "tokenizer.ggml.padding_token_id": "pad_token",
}


def _set_gguf_special_tokens(tokenizer: Any, path: Path) -> None:
    """Give `tokenizer` the special tokens the GGUF file names. Some transformers versions read
    them wrong from a GGUF (5.17 makes SmolLM2's `<|im_start|>` its end of sequence and leaves it
    no padding token); the file's own ids make the converted folder the same under every version."""
    fields = _gguf_reader(path).fields
    for key, attribute in _GGUF_SPECIAL_TOKENS.items():
        field = fields.get(key)
        if field is not None:
            setattr(tokenizer, attribute, tokenizer.convert_ids_to_tokens(int(field.parts[field.data[0]][0])))


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def check_model_path(path: str | os.PathLike[str]) -> Path:
    """`path` if it can hold a model: a `.gguf` file with weights, or a folder with `config.json`.

    Cheap (reads no weights, imports no torch); raises FileNotFoundError or ValueError with the reason.
    """
    source = Path(path)
    if not source.exists():
        raise FileNotFoundError(f"no model at {source}")
    if source.is_file():
        if source.suffix.lower() != ".gguf":
            raise ValueError(f"{source} is a file but not a .gguf; pass a GGUF file or a model folder")
        _gguf_parameters(source)
    elif not (source / "config.json").is_file():
        what = "is empty" if not any(source.iterdir()) else "has no config.json"
        raise ValueError(
            f"the folder {source} {what}: a transformers model folder holds config.json, the weights "
            "and the tokenizer files (as save_pretrained writes them)"
        )
    return source


def _convert_gguf(gguf: Path, target: Path, dtype: str, announce: Callable[[str], None]) -> None:
    """Dequantise `gguf` once and save it as a plain transformers folder at `target`."""
    size = _gguf_parameters(gguf) * _DTYPE_BYTES.get(dtype, 4)
    target.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(target.parent).free
    if free < size:
        raise OSError(
            f"converting {gguf.name} needs about {_size(size)} under {target.parent}, "
            f"which has {_size(free)} free; set GRAMMASK_CACHE to a larger disk"
        )
    announce(
        f"converting {gguf.name} once to {dtype}: writing about {_size(size)} to {target} "
        "(set GRAMMASK_CACHE to move the cache)"
    )
    torch, transformers = _import_transformers()
    with _quiet(transformers):
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, local_files_only=True
        )
        _set_gguf_special_tokens(tokenizer, gguf)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=getattr(torch, dtype), local_files_only=True
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


def prepare_model(
    path: str | os.PathLike[str] | None = None,
    *,
    dtype: str = DEFAULT_DTYPE,
    announce: Callable[[str], None] = _stderr,
) -> Path:
    """The transformers model folder for `path`: the folder itself, or for a `.gguf` file (None: the
    embedded SmolLM2) its converted copy in the cache, converted on first use.

    A conversion is announced through `announce` (default: one line on stderr) with its size and
    folder before anything is written.
    """
    source = check_model_path(path if path is not None else assets.smollm2_gguf_path())
    if source.is_dir():
        return source
    folder = _converted_dir(source, dtype)
    if not (folder / "config.json").exists():
        _convert_gguf(source, folder, dtype, announce)
    return folder


def load_tokenizer(folder: str | os.PathLike[str]) -> Any:
    """The transformers tokenizer of a model folder (see `prepare_model`)."""
    _, transformers = _import_transformers()
    with _quiet(transformers):
        return transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def load_weights(folder: str | os.PathLike[str], *, dtype: str = DEFAULT_DTYPE, device: str = "cpu") -> Any:
    """The causal LM of a model folder, on `device`, in evaluation mode."""
    torch, transformers = _import_transformers()
    if device == "cpu":
        torch.set_num_threads(_idle_cores())
    with _quiet(transformers):
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(folder), dtype=getattr(torch, dtype), local_files_only=True
        )
    return model.to(device).eval()


def load_model(
    path: str | os.PathLike[str] | None = None,
    *,
    dtype: str = DEFAULT_DTYPE,
    device: str = "cpu",
    announce: Callable[[str], None] = _stderr,
) -> tuple[Any, Any]:
    """Load `(model, tokenizer)` for generation, in evaluation mode.

    `path` is None for the embedded SmolLM2, a `.gguf` file (converted once and cached, see
    `prepare_model`), or a local transformers model folder. `dtype` is a torch dtype name
    ("bfloat16", "float32"); `device` a torch device ("cpu", "cuda").
    """
    folder = prepare_model(path, dtype=dtype, announce=announce)
    return load_weights(folder, dtype=dtype, device=device), load_tokenizer(folder)


def model_width(folder: str | os.PathLike[str]) -> int | None:
    """The logits width a model folder's `config.json` declares (`vocab_size`), if it declares one."""
    config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    size = config.get("vocab_size", config.get("text_config", {}).get("vocab_size"))
    return int(size) if size is not None else None


def chat_prompt(tokenizer: Any, request: str, *, system: str | None = DEFAULT_SYSTEM_PROMPT) -> str:
    """`request` as the user turn of the tokenizer's chat template, ready for the assistant's answer.

    Returns text: tokenize it (`tokenizer(text, add_special_tokens=False)`) or pass it to `generate`.
    A tokenizer without a chat template gets the request back unchanged.
    """
    if not getattr(tokenizer, "chat_template", None):
        return request
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": request})
    return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
