"""torch.nn.functional's losses and activations, with torch's backward nodes.

``cross_entropy`` is ``nll_loss(log_softmax(input, 1), target)`` as in torch: a
``NllLossBackward0`` node after a ``LogSoftmaxBackward0``, whose backward is one scatter and
one fused kernel instead of the five nodes of a hand-written ``-(log_softmax * onehot).sum()``.
Under ``create_graph=True`` the backward records torch's ``NllLossBackwardBackward0`` and
``MseLossBackwardBackward0`` nodes, with torch's edges.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.device import array_module
from gradviz.nn import _functional_activations as _activations  # noqa: E402
from gradviz.nn import _functional_attention as _attention  # noqa: E402
from gradviz.nn import _functional_conv as _conv  # noqa: E402
from gradviz.nn import _functional_conv_transpose as _conv_transpose  # noqa: E402
from gradviz.nn import _functional_dropout as _dropout  # noqa: E402
from gradviz.nn import _functional_elu as _elu  # noqa: E402
from gradviz.nn import _functional_grid as _grid  # noqa: E402

# The layers' functions live in their own files (this one holds the losses torch fuses most).
from gradviz.nn import _functional_layers as _layers  # noqa: E402
from gradviz.nn import _functional_losses_more as _losses_more  # noqa: E402
from gradviz.nn import _functional_margin as _margin  # noqa: E402
from gradviz.nn import _functional_mha as _mha  # noqa: E402
from gradviz.nn import _functional_norm as _norm  # noqa: E402
from gradviz.nn import _functional_pad as _pad  # noqa: E402
from gradviz.nn import _functional_pool_more as _pool_more  # noqa: E402
from gradviz.nn import _functional_shrink as _shrink  # noqa: E402
from gradviz.nn import _functional_stochastic as _stochastic  # noqa: E402
from gradviz.nn import _functional_upsample as _upsample  # noqa: E402
from gradviz.nn._functional_activations import *  # noqa: E402, F403
from gradviz.nn._functional_attention import *  # noqa: E402, F403
from gradviz.nn._functional_conv import *  # noqa: E402, F403
from gradviz.nn._functional_conv_transpose import *  # noqa: E402, F403
from gradviz.nn._functional_dropout import *  # noqa: E402, F403
from gradviz.nn._functional_elu import *  # noqa: E402, F403
from gradviz.nn._functional_grid import *  # noqa: E402, F403
from gradviz.nn._functional_layers import *  # noqa: E402, F403
from gradviz.nn._functional_losses_more import *  # noqa: E402, F403
from gradviz.nn._functional_margin import *  # noqa: E402, F403
from gradviz.nn._functional_mha import *  # noqa: E402, F403
from gradviz.nn._functional_norm import *  # noqa: E402, F403
from gradviz.nn._functional_pad import *  # noqa: E402, F403
from gradviz.nn._functional_pool_more import *  # noqa: E402, F403
from gradviz.nn._functional_shrink import *  # noqa: E402, F403
from gradviz.nn._functional_stochastic import *  # noqa: E402, F403
from gradviz.nn._functional_upsample import *  # noqa: E402, F403
from gradviz.ops import functions as F
from gradviz.ops.core import AUTO_REDUCTION, AUTO_TRANSPOSE, Derivative, node_class, record, save
from gradviz.tensor import Tensor

__all__ = ["cross_entropy", "log_softmax", "mse_loss", "nll_loss", "relu", "relu_", "softmax", "leaky_relu_"]
__all__ += _layers.__all__ + _conv.__all__ + _attention.__all__ + _mha.__all__
__all__ += _conv_transpose.__all__ + _dropout.__all__ + _elu.__all__ + _grid.__all__ + _pad.__all__
__all__ += _activations.__all__ + _upsample.__all__ + _norm.__all__ + _losses_more.__all__ + _shrink.__all__
__all__ += _pool_more.__all__ + _margin.__all__ + _stochastic.__all__ + ["linear_cross_entropy"]

# torch's Reduction enum, as the nodes save it (_saved_reduction).
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction_enum(reduction: str) -> int:
    try:
        return _REDUCTIONS[reduction]
    except KeyError:
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


# -- nll_loss ---------------------------------------------------------------------------------


def _class_weights(weight: Tensor | None, safe_t: np.ndarray, mask: np.ndarray, dtype: Any) -> np.ndarray:
    """Each target's weight (0 where the target is ignore_index)."""
    if weight is None:
        return mask.astype(dtype)
    return weight._data[safe_t].astype(dtype, copy=False) * mask


_OFFSETS: dict[tuple[int, int], np.ndarray] = {}


def _flat_targets(t: np.ndarray, n_classes: int) -> np.ndarray:
    """Each target's index in the flattened (n, n_classes) input: ``x.take`` and ``put`` with
    these pick and set the same elements as ``x[arange(n), t]``, without numpy's fancy-indexing
    machinery (a large code path that runs cold in a training step, after the matrix products).
    numpy targets only (``_plain_targets`` sees to it): the cached offsets are host arrays."""
    n = t.shape[0]
    offs = _OFFSETS.get((n, n_classes))
    if offs is None:
        offs = np.arange(0, n * n_classes, n_classes)
        offs.flags.writeable = False
        if len(_OFFSETS) < 64:
            _OFFSETS[n, n_classes] = offs
    return t + offs


def _plain_targets(x: np.ndarray, t: np.ndarray, weight: Tensor | None, ignore_index: int) -> bool:
    """Whether this is the common case: a batch of class indices (2-d input, 1-d target), no
    class weights, every target a valid class and none of them ignore_index. Then each target's
    weight is 1 and the total weight the batch size, which spares the masks and the casts (the
    results are the same floats: the weights are exact ones)."""
    if weight is not None or x.ndim != 2 or t.ndim != 1 or not t.size:
        return False
    # Host targets only: this path and its helpers (host offsets, numpy's unsigned view) are a
    # numpy speed-up; device targets take the general path, written for any array module.
    if type(t) is not np.ndarray or t.dtype.kind != "i":
        return False
    n_classes = x.shape[1]
    # Seen as unsigned integers of the same size, negative targets are the largest: one
    # reduction checks both bounds (the maximum, not the minimum and the maximum).
    if np.maximum.reduce(t.view(_UNSIGNED[t.dtype.itemsize])) >= n_classes:
        return False
    return not (0 <= ignore_index < n_classes and (t == ignore_index).any())


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _nll_parts(x: np.ndarray, t: np.ndarray, weight: Tensor | None, ignore_index: int) -> tuple:
    """(x with a batch dim, target with one, safe target, per-target weights), checked."""
    if x.ndim == 1:
        x, t = x[None], t.reshape(1)
    mask = t != ignore_index
    n_classes = x.shape[1]
    bad = mask & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")
    safe_t = np.where(mask, t, 0)
    w = _class_weights(weight, safe_t, mask, x.dtype)
    return x, t, safe_t, w


def _check_devices(input: Tensor, target: Tensor, weight: Tensor | None) -> None:
    """torch's device check for nll_loss (generated for its CUDA kernels, which is where a
    mismatch lands: the gpu kernel is chosen when any argument is on a gpu): target, then
    weight, against the input's device. torch runs it before the kernel's own checks."""
    # inputs of more than 2 dims go to nll_loss2d in torch
    method = "wrapper_CUDA_nll_loss2d_forward" if input.ndim > 2 else "wrapper_CUDA_nll_loss_forward"
    for name, t in (("target", target), ("weight", weight)):
        if t is not None and t.device != input.device:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but got {name} is on {t.device}, different "
                f"from other tensors on {input.device} (when checking argument in method {method})"
            )


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """The negative log likelihood of ``target`` (class indices) under ``input`` (log-probabilities,
    classes along dim 1, or dim 0 for a single sample). torch's node: NllLossBackward0, one edge."""
    red = _reduction_enum(reduction)
    if input.ndim == 3 or input.ndim > 4:
        # torch's nll_loss_nd: viewed as (N, C, 1, -1) for nll_loss2d (NllLoss2DBackward0), the
        # per-element losses viewed back
        n, c = input.shape[0], input.shape[1]
        if target.ndim >= 1 and (tuple(target.shape[1:]) != tuple(input.shape[2:]) or target.shape[0] != n):
            raise RuntimeError(
                f"Expected target size {_size_list((n, *input.shape[2:]))}, got {_size_list(target.shape)}"
            )
        flat = F.view(F.contiguous(input), (n, c, 1, -1))
        out = nll_loss(flat, F.reshape(target, (n, 1, -1)), weight, ignore_index=ignore_index, reduction=reduction)
        return F.view(out, (n, *input.shape[2:])) if red == 0 else out
    # Identity first: tensors made on one device share its device object, so the common case
    # (inputs, targets and weights made on one device) costs two `is` tests.
    if target.device is not input.device or (weight is not None and weight.device is not input.device):
        _check_devices(input, target, weight)
    if target.dtype is not _dtype.int64:
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {_dtype.scalar_type_name(target.dtype)}"
        )
    x = input._data
    if x.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if x.ndim >= 2 and target._data.shape[:1] != x.shape[:1]:
        # numpy would index out of bounds (or quietly broadcast) instead
        raise ValueError(
            f"Expected input batch_size ({x.shape[0]}) to match target batch_size "
            f"({target._data.shape[0] if target._data.ndim else 1})."
        )
    if red != 0 and _plain_targets(x, target._data, weight, ignore_index):
        # -sum(picked) is the sum of -picked bit for bit (rounding is symmetric in sign).
        t = target._data
        total = x.dtype.type(t.shape[0])
        data = -np.add.reduce(x.take(_flat_targets(t, x.shape[1])), dtype=x.dtype)
        data = np.asarray(data if red == 2 else data / total, dtype=x.dtype)
        out = F._new(data, input.device)
        if _grad_state.enabled and input._tracked:
            record(_NLL, (input,), [out], {
                "self": save(input), "target": target.detach(), "weight": None, "total_weight": float(total),
                "reduction": red, "ignore_index": ignore_index,
            })
        return out
    xb, t, safe_t, w = _nll_parts(x, target._data, weight, ignore_index)
    if xb.ndim == 2:
        # plain indexing: take_along_axis costs 3x; the row numbers made where the data is
        picked = xb[array_module(input.device).arange(xb.shape[0]), safe_t]
    else:
        picked = np.take_along_axis(xb, safe_t[:, None, ...], axis=1)[:, 0]
    losses = -picked * w
    total_weight = w.sum(dtype=x.dtype)
    if red == 0:
        data = losses.reshape(target._data.shape)
    elif red == 2:
        data = F._as_array(losses.sum(dtype=x.dtype))
    else:
        data = F._as_array(losses.sum(dtype=x.dtype) / total_weight, x.dtype)
    out = F._new(data, input.device)
    if _grad_state.enabled and input._tracked:
        record(_NLL2D if x.ndim == 4 else _NLL, (input,), [out], {
            "self": save(input), "target": target.detach(), "weight": weight, "total_weight": float(total_weight),
            "reduction": red, "ignore_index": ignore_index,
        })
    return out


def nll_loss_backward(grad_output: Tensor, input: Tensor, target: Tensor, weight: Tensor | None, reduction: int,
                      ignore_index: int, total_weight: float) -> Tensor:
    """torch's nll_loss_backward kernel: -grad (times the target's weight, over the total weight
    for a mean) at each target's class, 0 elsewhere. A node (NllLossBackwardBackward0) only under
    create_graph=True."""
    x = input._data
    g = grad_output._data
    if reduction != 0 and g.ndim == 0 and _plain_targets(x, target._data, weight, ignore_index):
        # Each target's weight is 1: -grad (over the total weight for a mean) at the targets.
        t = target._data
        if g.dtype == x.dtype:
            # In Python floats: float64 arithmetic rounded once to float32 on assignment equals
            # float32 arithmetic for one division (53 >= 2 * 24 + 2 bits), and costs less than
            # numpy's 0-d operations.
            coef = -float(g) / total_weight if reduction == 1 else -float(g)
        else:
            coef = -g / total_weight if reduction == 1 else -g
        gi = np.zeros(x.shape, dtype=x.dtype)
        gi.put(_flat_targets(t, x.shape[1]), coef)  # gi is C-contiguous: flat indices are its own
        out = F._new(gi, grad_output.device)
        if _grad_state.enabled and (grad_output._tracked or input._tracked):
            record(_NLL_BACKWARD, (grad_output, input), [out], {
                "target": target, "weight": weight, "reduction": reduction, "ignore_index": ignore_index,
            })
        return out
    _, t, safe_t, w = _nll_parts(x, target._data, weight, ignore_index)
    coef = -w * (g.reshape(t.shape) if reduction == 0 else g)
    if reduction == 1:
        coef = coef / total_weight
    xp = array_module(grad_output.device)  # made on the device of the gradient (the input's)
    gi = xp.zeros(x.shape if x.ndim > 1 else (1,) + x.shape, dtype=x.dtype)
    coef = coef.astype(x.dtype, copy=False)
    if gi.ndim == 2:
        gi[xp.arange(gi.shape[0]), safe_t] = coef
    else:
        np.put_along_axis(gi, safe_t[:, None, ...], coef[:, None, ...], axis=1)
    out = F._new(gi.reshape(x.shape), grad_output.device)
    if _grad_state.enabled and (grad_output._tracked or input._tracked):
        record(_NLL_BACKWARD, (grad_output, input), [out], {
            "target": target, "weight": weight, "reduction": reduction, "ignore_index": ignore_index,
        })
    return out


_REDUCTION_NAMES = {v: k for k, v in _REDUCTIONS.items()}


def _nll_grad(n: Any, g: Tensor) -> Tensor:
    saved = n.saved
    return nll_loss_backward(g, n["self"], saved["target"], saved["weight"], saved["reduction"],
                             saved["ignore_index"], saved["total_weight"])


def _nll_backward_grad_output(n: Any, g: Tensor) -> Tensor:
    # torch: nll_loss(grad, target, weight, reduction, ignore_index)
    return nll_loss(g, n["target"], n["weight"], ignore_index=n["ignore_index"],
                    reduction=_REDUCTION_NAMES[n["reduction"]])


def _nll_backward_self(n: Any, g: Tensor) -> Tensor:
    return F.zeros_for(g.shape, g.dtype, g.device)  # torch: zeros_like(grad), no history


_NLL = node_class(Derivative("NllLossBackward0", (_nll_grad,), forward=AUTO_TRANSPOSE))
_NLL2D = node_class(Derivative("NllLoss2DBackward0", (_nll_grad,), forward=AUTO_TRANSPOSE))


def _size_list(shape: Any) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"
_NLL_BACKWARD = node_class(Derivative(
    "NllLossBackwardBackward0", (_nll_backward_grad_output, _nll_backward_self), order=(0, 1), forward=AUTO_TRANSPOSE
))


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy against class indices: ``nll_loss(log_softmax(input, 1), target)``,
    as torch computes it (LogSoftmaxBackward0, then NllLossBackward0)."""
    class_dim = 0 if input.ndim == 1 else 1
    if target.dtype.is_floating_point:
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing, class_dim)
    if label_smoothing > 0.0:
        return _cross_entropy_smoothed(input, target, weight, ignore_index, reduction, label_smoothing, class_dim)
    return nll_loss(F.log_softmax(input, class_dim), target, weight, ignore_index=ignore_index,
                    reduction=reduction)


def _cross_entropy_probs(input: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
                         label_smoothing: float, class_dim: int) -> Tensor:
    """Class probabilities as the target: -(log_softmax(input) * target) summed over classes,
    as torch composes it."""
    if tuple(input.shape) != tuple(target.shape):
        raise RuntimeError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({target.shape[0]})."
        )
    red = _reduction_enum(reduction)
    n_classes = input.shape[class_dim]
    lsm = F.log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        target = F.add_scalar(F.mul_scalar(target, 1 - label_smoothing), label_smoothing / n_classes)
    prod = F.mul(lsm, target)
    if weight is not None:
        shape = [1] * input.ndim
        shape[class_dim] = n_classes
        prod = F.mul(prod, F.view(weight, tuple(shape)))
    if red == 1:
        return F.div_scalar(F.neg(F.sum(prod)), input.numel() / n_classes)
    if red == 2:
        return F.neg(F.sum(prod))
    return F.neg(F.sum(prod, class_dim))


def _cross_entropy_smoothed(input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int,
                            reduction: str, label_smoothing: float, class_dim: int) -> Tensor:
    """torch's label smoothing for class indices: (1 - ls) nll + ls / C * (the summed negative
    log-probabilities, 0 where the target is ignore_index), reduced."""
    red = _reduction_enum(reduction)
    n_classes = input.shape[class_dim]
    lsm = F.log_softmax(input, class_dim)
    nll = nll_loss(lsm, target, weight, ignore_index=ignore_index, reduction=reduction)
    ignore_mask = F._new(F._as_array(target._data == ignore_index), target.device)
    if weight is not None:
        shape = [1] * input.ndim
        shape[class_dim] = n_classes
        smooth = F.neg(F.sum(F.mul(lsm, F.view(weight, tuple(shape))), class_dim))
    else:
        smooth = F.neg(F.sum(lsm, class_dim))
    smooth = F.masked_fill(smooth, ignore_mask, 0.0)
    if red == 1:
        if weight is not None:
            picked = weight._data[target._data[target._data != ignore_index]]
            denom = F._new(F._as_array(picked.sum(dtype=input._data.dtype)), input.device)
        else:
            denom = F._new(F._as_array((~ignore_mask._data).sum()), input.device)
        ret = F.div(F.sum(smooth), denom)
    elif red == 2:
        ret = F.sum(smooth)
    else:
        ret = smooth
    # torch's C++ evaluates the right operand of this sum first (it shows in the nodes' numbers)
    smooth_term = F.mul_scalar(ret, label_smoothing / n_classes)
    return F.add(F.mul_scalar(nll, 1 - label_smoothing), smooth_term)


# -- activations ------------------------------------------------------------------------------


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return input.relu_()
    return F.relu(input)


def relu_(input: Tensor) -> Tensor:  # noqa: A002
    """torch.nn.functional.relu_: relu in place (ReluBackward0 over the old history)."""
    return input.relu_()


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:  # noqa: A002
    return leaky_relu(input, negative_slope, inplace=True)  # noqa: F405 - from _functional_layers


def _softmax_dim(ndim: int) -> int:
    # torch's legacy implicit dim (with a deprecation warning there): 0 for 0-, 1- and 3-d inputs
    return 0 if ndim in (0, 1, 3) else 1


def _implicit_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return _softmax_dim(ndim)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    return F.softmax(input, _implicit_dim("softmax", input.ndim, _stacklevel) if dim is None else dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    return F.log_softmax(input, _implicit_dim("log_softmax", input.ndim, _stacklevel) if dim is None else dim, dtype)


# -- mse_loss ---------------------------------------------------------------------------------


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Any = None) -> Tensor:
    """Mean (or summed, or per-element) squared error. torch's node: MseLossBackward0, with an
    edge for input and one for target."""
    if weight is not None:
        raise NotImplementedError("gradviz: mse_loss with weight is not implemented")
    red = _reduction_enum(reduction)
    if input.shape != target.shape:
        # torch warns, then broadcasts both (an ExpandBackward0 in front of each that needed it)
        from gradviz.nn._functional_layers import _check_sizes

        _check_sizes(input, target, stacklevel=3)
        shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(target.shape)))
        if tuple(input.shape) != shape:
            input = F.expand(input, shape)
        if tuple(target.shape) != shape:
            target = F.expand(target, shape)
    x, y = input._data, target._data
    d = x - y
    sq = d * d
    if red == 0:
        data = sq
    elif red == 2:
        data = F._as_array(sq.sum(dtype=x.dtype))
    else:
        data = F._as_array(sq.mean(dtype=x.dtype), x.dtype)
    out = F._new(data, input.device)
    if _grad_state.enabled and (input._tracked or target._tracked):
        record(_MSE, (input, target), [out], {"self": save(input), "target": save(target), "reduction": red})
    return out


def mse_loss_backward(grad_output: Tensor, input: Tensor, target: Tensor, reduction: int) -> Tensor:
    """torch's mse_loss_backward kernel: 2 (input - target) grad (over the count for a mean).
    A node (MseLossBackwardBackward0) only under create_graph=True."""
    x, y, g = input._data, target._data, grad_output._data
    norm = 2.0 / x.size if reduction == 1 else 2.0
    data = ((x - y) * (norm * g)).astype(x.dtype, copy=False)
    out = F._new(data, grad_output.device)
    if _grad_state.enabled and (grad_output._tracked or input._tracked or target._tracked):
        record(_MSE_BACKWARD, (grad_output, input, target), [out], {
            "grad_output": save(grad_output), "self": save(input), "target": save(target), "reduction": reduction,
        })
    return out


def _mse_norm(n: Any, g: Tensor) -> float:
    return 2.0 / g._data.size if n["reduction"] == 1 else 2.0


def _mse_double_grad_output(n: Any, g: Tensor) -> Tensor:
    # torch's mse_loss_double_backward_grad_output: sum of 2 (self - target) g, over the count
    # for a mean; elementwise for 'none'.
    r = F.mul(F.mul_scalar(F.sub(n["self"], n["target"]), _mse_norm(n, g)), g)
    return r if n["reduction"] == 0 else F.sum(r)


def _mse_double_self(n: Any, g: Tensor) -> Tensor:
    # torch's mse_loss_double_backward: 2 grad grad_output (over the count for a mean)
    return F.mul_scalar(F.mul(g, n["grad_output"]), _mse_norm(n, g))


def _mse_double_target(n: Any, g: Tensor) -> Tensor:
    return F.neg(_mse_double_self(n, g))


_MSE = node_class(Derivative("MseLossBackward0", (
    lambda n, g: mse_loss_backward(g, n["self"], n["target"], n["reduction"]),
    lambda n, g: mse_loss_backward(g, n["target"], n["self"], n["reduction"]),
), forward=AUTO_REDUCTION))
_MSE_BACKWARD = node_class(Derivative(
    "MseLossBackwardBackward0", (_mse_double_grad_output, _mse_double_self, _mse_double_target), forward=AUTO_TRANSPOSE,
))


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)


# -- linear + cross_entropy (torch 2.13) ---------------------------------------------------------
def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *, linear_bias: Tensor | None = None,
                         weight: Tensor | None = None, reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: Any = None) -> Tensor:
    """cross_entropy(linear(input, linear_weight, linear_bias), target): torch's reference path
    (its chunked path, chosen by ``options``, is not in gradviz)."""
    if options is not None:
        raise NotImplementedError("gradviz: linear_cross_entropy with options (torch's chunked path) is not "
                                  "implemented")
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires batched input, "
            f"(N, {in_features}), got unbatched input with shape {tuple(input.shape)}"
        )
    logits_shape = (*batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = ignore_index if ignore_index is not None else -100
    if out_features:
        rows = math.prod(out_features, start=num_classes)
        linear_weight = F.reshape(linear_weight, (rows, in_features))
        if linear_bias is not None:
            linear_bias = F.reshape(linear_bias, (rows,))
    logits = F.reshape(_layers.linear(input, linear_weight, linear_bias), logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)
