"""Every processor test taking `xp` runs on numpy, torch CPU and (when present) CUDA."""

import numpy as np
import pytest
import torch

BACKENDS = ["numpy", "torch"] + (["cuda"] if torch.cuda.is_available() else [])


class Backend:
    """Moves numpy test data to one backend and back."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __call__(self, array):
        array = np.asarray(array)
        if self.name == "numpy":
            return array
        return torch.from_numpy(np.ascontiguousarray(array)).to("cuda" if self.name == "cuda" else "cpu")

    def host(self, x) -> np.ndarray:
        return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)

    def generator(self, seed: int):
        if self.name == "numpy":
            return np.random.default_rng(seed)
        return torch.Generator(device="cuda" if self.name == "cuda" else "cpu").manual_seed(seed)


@pytest.fixture(params=BACKENDS)
def xp(request) -> Backend:
    return Backend(request.param)
