"""Adapters for other frameworks; each submodule imports its own framework when it is first used.

`grammask.integrations.transformers` works as an attribute after `import grammask.integrations`:
the submodule is imported on first access.
"""

import importlib
from types import ModuleType

_SUBMODULES = ("transformers", "vllm")


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
