#!/usr/bin/env bash
# The real-vLLM tests: grammask as vLLM's structured-output backend, driven through vLLM's own
# OpenAI server with the official `openai` client (tests/integrations/test_vllm*.py).
#
# Builds (once, cached) the vLLM environment with scripts/vllm_env.sh, converts the embedded SmolLM2
# to a transformers folder (once, cached) with the main environment's grammask, then runs the tests in
# the vLLM environment. About 6 minutes when cached (three server starts); the first run adds about
# 5 minutes of installing. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="$(bash scripts/vllm_env.sh)"
"$VENV/bin/python" -m pip install -q --progress-bar off pytest >&2
GRAMMASK_VLLM_MODEL="$(python -c 'from grammask.generation.model import prepare_model; print(prepare_model())')"
export GRAMMASK_VLLM_MODEL
echo "[test_vllm] vLLM environment $VENV, model $GRAMMASK_VLLM_MODEL" >&2
exec "$VENV/bin/python" -m pytest -p no:cacheprovider -o addopts="--import-mode=importlib" -W ignore \
    tests/integrations/test_vllm_backend.py tests/integrations/test_vllm_server.py "$@"
