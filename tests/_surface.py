"""Differential checks of the tensor surface against torch (issue 14): one program, run on both.

``same(fn)``: ``fn(T)`` builds its inputs with ``T`` (torch or gradviz) and returns its outputs
(tensors, numbers, nested tuples/lists). The two runs must agree in

- every output's value (float32/half types to their precision, float64 tightly, the rest
  exactly), shape and dtype name;
- the graph behind the outputs that require grad: node names and next_functions, breadth first;
- the gradients: ``sum(out * w)`` over those outputs (w fixed, not all ones) is backpropagated to
  every leaf ``fn`` returned in ``G(outs, leaves)``, and the leaves' ``.grad`` compared.

``same_error(fn)``: both raise, the same exception type with the same message.

torch is a hard requirement: a missing torch fails these tests, it never skips them.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from _diff import walk

import gradviz


@dataclass
class G:
    """Outputs whose gradients with respect to ``leaves`` are compared."""

    outs: Any
    leaves: tuple = ()


def _tensors(x: Any) -> list:
    if isinstance(x, (torch.Tensor, gradviz.Tensor)):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _tensors(v)]
    return []


def _plain(x: Any) -> Any:
    """Tensors to (dtype name, numpy array); containers kept; numbers as they are."""
    if isinstance(x, (torch.Tensor, gradviz.Tensor)):
        name = str(x.dtype).split(".")[-1]
        if isinstance(x, torch.Tensor):
            arr = x.detach().float().numpy() if x.dtype is torch.bfloat16 else x.detach().numpy()
        else:
            arr = np.asarray(x.detach().numpy())
            arr = arr.astype(np.float32) if name == "bfloat16" else arr
        return (name, np.array(arr))
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, (torch.dtype, gradviz.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (torch.Size, gradviz.Size)):
        return ("size", tuple(x))
    return x


_TOL = {"float64": (1e-12, 1e-12), "float32": (2e-6, 1e-6), "float16": (2e-3, 1e-3), "bfloat16": (1e-2, 1e-2)}


def _compare(ref: Any, got: Any, what: str) -> None:
    if isinstance(ref, list):
        assert isinstance(got, list) and len(ref) == len(got), f"{what}: torch {ref!r}, gradviz {got!r}"
        for i, (a, b) in enumerate(zip(ref, got)):
            _compare(a, b, f"{what}[{i}]")
        return
    if isinstance(ref, tuple) and len(ref) == 2 and isinstance(ref[1], np.ndarray):
        assert isinstance(got, tuple) and len(got) == 2, f"{what}: torch gave a tensor, gradviz {got!r}"
        assert got[0] == ref[0], f"{what}: dtype {ref[0]} (torch) vs {got[0]} (gradviz)"
        a, b = ref[1], got[1]
        assert a.shape == b.shape, f"{what}: shape {a.shape} (torch) vs {b.shape} (gradviz)"
        if ref[0] in _TOL:
            rtol, atol = _TOL[ref[0]]
            np.testing.assert_allclose(b.astype(np.float64), a.astype(np.float64), rtol=rtol, atol=atol,
                                       err_msg=what, equal_nan=True)
        else:
            np.testing.assert_array_equal(b, a, err_msg=what)
        return
    if isinstance(ref, float) and isinstance(got, float):
        assert got == ref or (np.isnan(ref) and np.isnan(got)) or abs(got - ref) <= 1e-6 * abs(ref), (what, ref, got)
        return
    assert got == ref and type(got) is type(ref), f"{what}: torch {ref!r}, gradviz {got!r}"


def _weights(T: Any, t: Any) -> Any:
    n = t.numel()
    w = T.arange(1, n + 1, dtype=T.float64).reshape(t.shape) * 0.37
    return w.sin().to(t.dtype)


def run(fn: Callable[[Any], Any], T: Any) -> dict:
    out = fn(T)
    leaves: tuple = ()
    if isinstance(out, G):
        out, leaves = out.outs, tuple(out.leaves)
    result: dict = {"values": _plain(out)}
    diff = [t for t in _tensors(out) if t.requires_grad]
    result["graph"] = walk(diff)[0] if diff else []
    if leaves:
        loss = None
        for t in diff:
            term = (t * _weights(T, t)).sum()
            loss = term if loss is None else loss + term
        if loss is not None:
            loss.backward()
        result["grads"] = [_plain(leaf.grad) if leaf.grad is not None else None for leaf in leaves]
    return result


def same(fn: Callable[[Any], Any], graph: bool = True) -> None:
    """``graph=False`` only where a known gap is written down beside the case."""
    ref = run(fn, torch)
    got = run(fn, gradviz)
    _compare(ref["values"], got["values"], "values")
    if graph:
        assert got["graph"] == ref["graph"], f"graph:\n torch   {ref['graph']}\n gradviz {got['graph']}"
    if "grads" in ref:
        _compare(ref["grads"], got["grads"], "grads")


def _norm(msg: str) -> str:
    # torch's C++ messages end with where they were raised; the rest must agree
    msg = re.sub(r" \(Triggered internally at [^)]*\.\)", "", msg)
    return msg.replace("torch.", "gradviz.")


def _raised(fn: Callable[[Any], Any], T: Any) -> BaseException | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(T)
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return e
    return None


def same_error(fn: Callable[[Any], Any]) -> None:
    ref, got = _raised(fn, torch), _raised(fn, gradviz)
    assert ref is not None, "torch raised nothing: not an error case"
    assert got is not None, f"gradviz raised nothing; torch raised {type(ref).__name__}: {ref}"
    assert type(got) is type(ref), f"torch {type(ref).__name__}: {ref}\ngradviz {type(got).__name__}: {got}"
    assert _norm(str(got)) == _norm(str(ref)), f"torch: {ref}\ngradviz: {got}"


def x64(T: Any, *shape: int, seed: int = 0, low: float | None = None, grad: bool = True) -> Any:
    """A float64 tensor with the same values on both (numpy draws them)."""
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape) if low is None else rng.uniform(low, low + 2.0, shape)
    return T.tensor(data, dtype=T.float64, requires_grad=grad)


def distinct(T: Any, *shape: int, seed: int = 0, grad: bool = True, dtype: Any = None) -> Any:
    """Values without ties (sort, topk and max pick one element)."""
    n = int(np.prod(shape))
    data = (np.random.default_rng(seed).permutation(n).astype(np.float64) * 0.37 - n * 0.15).reshape(shape)
    return T.tensor(data, dtype=dtype or T.float64, requires_grad=grad)
