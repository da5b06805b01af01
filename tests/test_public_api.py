"""The public API: exported names are sorted and complete, and importing the core loads no torch."""

import subprocess
import sys

import grammask


def test_all_is_sorted_and_complete():
    assert grammask.__all__ == sorted(grammask.__all__)
    public = {name for name in vars(grammask) if not name.startswith("_")}
    submodules = {name for name in public if type(getattr(grammask, name)).__name__ == "module"}
    assert set(grammask.__all__) == (public - submodules) | set(grammask._LAZY)


def test_core_import_does_not_load_heavy_frameworks():
    code = "import sys, grammask; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
