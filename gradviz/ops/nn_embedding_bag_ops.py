"""embedding_bag: the rows of each bag of indices summed, averaged or maxed, with its one node
EmbeddingBagBackward0 (edges to the weight and the per-sample weights), as torch's CPU kernel."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__: list[str] = []

_SUM, _MEAN, _MAX = 0, 1, 2


def _bags(indices: np.ndarray, offsets: np.ndarray, include_last_offset: bool, padding_idx: int | None,
          last_offset_ends: bool) -> list[np.ndarray]:
    """Each bag's positions in ``indices``, without those holding padding_idx. The last bag runs
    to the end of the indices unless ``last_offset_ends`` (include_last_offset on float32, whose
    CPU kernel reads the final offset; torch's other kernel ignores it)."""
    n = indices.shape[0]
    starts = offsets[:-1] if include_last_offset else offsets
    ends = list(offsets[1:len(starts)]) + [offsets[-1] if include_last_offset and last_offset_ends else n]
    bags = []
    for s, e in zip(starts, ends):
        pos = np.arange(int(s), min(int(e), n))
        if padding_idx is not None:
            pos = pos[indices[pos] != padding_idx]
        bags.append(pos)
    return bags


def embedding_bag(weight: Tensor, input: Tensor, offsets: Tensor, scale_grad_by_freq: bool, mode: int,
                  per_sample_weights: Tensor | None, include_last_offset: bool, padding_idx: int | None) -> Tensor:
    w = weight._data
    idx = input._data.astype(np.int64).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= w.shape[0]):
        raise IndexError("index out of range in self")
    if scale_grad_by_freq:
        raise NotImplementedError("gradviz: embedding_bag with scale_grad_by_freq=True is not implemented")
    bags = _bags(idx, offsets._data.astype(np.int64).reshape(-1), include_last_offset, padding_idx,
                 w.dtype == np.float32)
    psw = None if per_sample_weights is None else per_sample_weights._data.reshape(-1)
    out = np.zeros((len(bags), w.shape[1]), dtype=w.dtype)
    argmax = np.full((len(bags), w.shape[1]), -1, dtype=np.int64)
    for b, pos in enumerate(bags):
        if not pos.size:
            continue
        rows = w[idx[pos]]
        if mode == _MAX:
            k = rows.argmax(axis=0)
            out[b] = rows[k, np.arange(w.shape[1])]
            argmax[b] = idx[pos][k]
            continue
        if psw is not None:
            rows = rows * psw[pos][:, None]
        out[b] = rows.sum(axis=0)
        if mode == _MEAN:
            out[b] /= pos.size
    result = _out(out, weight)
    if _grad_state.enabled and (_requires(weight) or _requires(per_sample_weights)):
        record(_BAG, (weight, per_sample_weights), [result], {
            "weight": SavedVariable(weight), "indices": idx, "bags": bags, "mode": mode, "argmax": argmax,
            "psw": psw, "scale": scale_grad_by_freq,
        })
    return result


def _weight_grad(n: Any, g: Tensor) -> Tensor:
    s = n.saved
    w = n["weight"]._data
    gd = g._data
    idx, mode = s["indices"], s["mode"]
    dw = np.zeros_like(w)
    if mode == _MAX:
        for b in range(gd.shape[0]):
            cols = np.nonzero(s["argmax"][b] >= 0)[0]
            np.add.at(dw, (s["argmax"][b][cols], cols), gd[b, cols])
        return _out(dw, g)
    counts = np.bincount(idx, minlength=w.shape[0]) if s["scale"] else None
    for b, pos in enumerate(s["bags"]):
        if not pos.size:
            continue
        part = np.repeat(gd[b][None], pos.size, axis=0)
        if s["psw"] is not None:
            part = part * s["psw"][pos][:, None]
        if mode == _MEAN:
            part = part / pos.size
        if counts is not None:
            part = part / counts[idx[pos]][:, None]
        np.add.at(dw, idx[pos], part)
    return _out(dw.astype(w.dtype, copy=False), g)


def _psw_grad(n: Any, g: Tensor) -> Tensor:
    s = n.saved
    w = n["weight"]._data
    out = np.zeros(s["indices"].shape[0], dtype=w.dtype)
    for b, pos in enumerate(s["bags"]):
        if pos.size:
            out[pos] = w[s["indices"][pos]] @ g._data[b]
    return _out(out, g)


_BAG = _register("_embedding_bag", D("EmbeddingBagBackward0", (_weight_grad, _psw_grad)))
