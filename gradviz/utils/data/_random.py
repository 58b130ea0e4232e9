"""The random draws torch.utils.data makes, through gradviz's generator.

Each helper makes the torch call the samplers make (``torch.randperm(n, generator=g)``,
``torch.empty((), dtype=torch.int64).random_(generator=g)``, ``torch.randint``,
``torch.multinomial``, ``torch.Generator().manual_seed(s)``) with gradviz's function of that name
when gradviz has it; gradviz's torch-identical generator then gives torch's indices. Until then
(a gradviz without the function) it draws from numpy's generator behind gradviz's: the same
calls in the same order, so shuffles are repeatable, but not torch's numbers.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import gradviz
import gradviz.tensor  # noqa: F401 - loads the module; gradviz.tensor the attribute is the function

_tensor_mod = sys.modules["gradviz.tensor"]


def _rng(generator: Any) -> np.random.Generator:
    if generator is None:
        return _tensor_mod.default_generator.rng
    rng = getattr(generator, "rng", None)
    if rng is None:
        raise TypeError(f"expected a gradviz Generator, got {type(generator).__name__}")
    return rng


def randperm(n: int, generator: Any = None) -> list[int]:
    fn = getattr(gradviz, "randperm", None)
    if fn is not None:
        return fn(n, generator=generator).tolist()
    return _rng(generator).permutation(n).tolist()


def randint(high: int, size: int, generator: Any = None) -> list[int]:
    fn = getattr(gradviz, "randint", None)
    if fn is not None and getattr(gradviz, "randperm", None) is not None:  # the torch-identical rng landed
        return fn(high=high, size=(size,), dtype=gradviz.int64, generator=generator).tolist()
    return _rng(generator).integers(0, high, size).tolist()


def random_int64(generator: Any = None) -> int:
    """``torch.empty((), dtype=torch.int64).random_(generator=g).item()``: a seed from [0, 2**63)."""
    t = gradviz.empty((), dtype=gradviz.int64)
    if hasattr(t, "random_"):
        return int(t.random_(generator=generator).item())
    return int(_rng(generator).integers(0, 2**63 - 1))


def new_generator(seed: int) -> Any:
    """``g = torch.Generator(); g.manual_seed(seed)``."""
    cls = getattr(gradviz, "Generator", None)
    if cls is not None:
        g = cls()
        g.manual_seed(seed)
        return g
    return _tensor_mod._Generator(seed)


def multinomial(weights: Any, num_samples: int, replacement: bool, generator: Any = None) -> list[int]:
    fn = getattr(gradviz, "multinomial", None)
    if fn is not None:
        return fn(weights, num_samples, replacement, generator=generator).tolist()
    w = np.asarray(weights._data, dtype=np.float64)
    if not replacement and num_samples > int((w > 0).sum()):
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    return _rng(generator).choice(len(w), size=num_samples, replace=replacement, p=w / w.sum()).tolist()
