"""The CTC loss (connectionist temporal classification): ``_ctc_loss`` with its one node
CtcLossBackward0, computed as torch's CPU kernel does, in log space, by the forward (alpha) and
backward (beta) recursions over the targets interleaved with blanks."""

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


def _lse(*xs: float) -> float:
    m = max(xs)
    if m == -np.inf:
        return -np.inf
    return m + np.log(sum(np.exp(x - m) for x in xs))


def _targets_of(targets: np.ndarray, target_lengths: list[int]) -> list[np.ndarray]:
    if targets.ndim == 2:
        return [targets[n, :length] for n, length in enumerate(target_lengths)]
    offsets = np.concatenate([[0], np.cumsum(target_lengths)]).astype(np.int64)
    return [targets[offsets[n]:offsets[n + 1]] for n in range(len(target_lengths))]


def _extended(target: np.ndarray, blank: int) -> np.ndarray:
    ext = np.full(2 * len(target) + 1, blank, dtype=np.int64)
    ext[1::2] = target
    return ext


def _alpha(lp: np.ndarray, ext: np.ndarray, length: int, blank: int) -> np.ndarray:
    size = ext.shape[0]
    a = np.full((max(length, 1), size), -np.inf)
    if length == 0:
        return a
    a[0, 0] = lp[0, blank]
    if size > 1:
        a[0, 1] = lp[0, ext[1]]
    for t in range(1, length):
        for s in range(size):
            terms = [a[t - 1, s]]
            if s > 0:
                terms.append(a[t - 1, s - 1])
            if s > 1 and ext[s] != blank and ext[s] != ext[s - 2]:
                terms.append(a[t - 1, s - 2])
            a[t, s] = _lse(*terms) + lp[t, ext[s]]
    return a


def _beta(lp: np.ndarray, ext: np.ndarray, length: int, blank: int) -> np.ndarray:
    size = ext.shape[0]
    b = np.full((max(length, 1), size), -np.inf)
    if length == 0:
        return b
    b[length - 1, size - 1] = lp[length - 1, blank]
    if size > 1:
        b[length - 1, size - 2] = lp[length - 1, ext[size - 2]]
    for t in range(length - 2, -1, -1):
        for s in range(size):
            terms = [b[t + 1, s]]
            if s < size - 1:
                terms.append(b[t + 1, s + 1])
            if s < size - 2 and ext[s] != blank and ext[s + 2] != ext[s]:
                terms.append(b[t + 1, s + 2])
            b[t, s] = _lse(*terms) + lp[t, ext[s]]
    return b


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: list[int], target_lengths: list[int], blank: int,
             zero_infinity: bool) -> Tensor:
    """The negative log likelihood of each target sequence, (N,), from (T, N, C) log-probabilities."""
    lp = log_probs._data.astype(np.float64)
    t_max, n, c = lp.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    if len(input_lengths) != n:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {len(input_lengths)}")
    if len(target_lengths) != n:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got {len(target_lengths)}")
    tg = _targets_of(targets._data.astype(np.int64), target_lengths)
    nll = np.zeros(n)
    for b in range(n):
        length = int(input_lengths[b])
        if length > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {length} "
                               f"(while checking arguments for ctc_loss_cpu)")
        ext = _extended(tg[b], blank)
        a = _alpha(lp[:, b], ext, length, blank)
        if length == 0:
            nll[b] = 0.0 if len(tg[b]) == 0 else np.inf
            continue
        last = [a[length - 1, -1]] + ([a[length - 1, -2]] if ext.shape[0] > 1 else [])
        nll[b] = -_lse(*last)
    out = _out(nll.astype(log_probs._data.dtype), log_probs)
    if _grad_state.enabled and _requires(log_probs):
        record(_CTC, (log_probs,), [out], {
            "log_probs": SavedVariable(log_probs), "targets": tg, "input_lengths": [int(v) for v in input_lengths],
            "blank": blank, "nll": nll, "zero_infinity": zero_infinity,
        })
    return out


def _ctc_grad(n: Any, g: Tensor) -> Tensor:
    """torch's ctc_loss_backward: exp(lp) - exp(log sum over s with l'(s) = c of alpha * beta + nll
    - lp), times the incoming gradient (the gradient through a log_softmax folded in, as torch's)."""
    s = n.saved
    lp = n["log_probs"]._data.astype(np.float64)
    t_max, batch, c = lp.shape
    grad = np.zeros_like(lp)
    gd = np.broadcast_to(g._data.astype(np.float64), (batch,))
    for b in range(batch):
        length = s["input_lengths"][b]
        nll = s["nll"][b]
        if length == 0 or (s["zero_infinity"] and np.isinf(nll)):
            continue
        ext = _extended(s["targets"][b], s["blank"])
        a = _alpha(lp[:, b], ext, length, s["blank"])
        be = _beta(lp[:, b], ext, length, s["blank"])
        for t in range(length):
            lcab = np.full(c, -np.inf)
            for pos in range(ext.shape[0]):
                ch = ext[pos]
                lcab[ch] = _lse(lcab[ch], a[t, pos] + be[t, pos])
            with np.errstate(over="ignore", invalid="ignore"):
                grad[t, b] = (np.exp(lp[t, b]) - np.exp(lcab + nll - lp[t, b])) * gd[b]
    return _out(grad.astype(n["log_probs"]._data.dtype), g)


_CTC = _register("_ctc_loss", D("CtcLossBackward0", (_ctc_grad,)))
