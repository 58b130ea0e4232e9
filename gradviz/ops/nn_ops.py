"""torch.nn's fused ops with their own backward nodes: addmm (Linear), embedding,
native_layer_norm, gelu, silu and leaky_relu; their rows join the derivative table.

Each op computes on the arrays and records the one node torch records (AddmmBackward0,
EmbeddingBackward0, NativeLayerNormBackward0...). The formulas compute on arrays when no
graph is being built (create_graph off); under create_graph they use tensor ops where the
graph of the backward is simple to state, and otherwise compute without history."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from gradviz import _blas, _dtype
from gradviz._sparse_coo import SparseCOO
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.device import add_at, array_module
from gradviz.ops import functions as F
from gradviz.ops._common import _ascontiguous
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import node_class, record
from gradviz.ops.derivatives import DERIVATIVES
from gradviz.tensor import Tensor

_wrap = Tensor._wrap

_ERF: list = []


def _erf(x: np.ndarray) -> np.ndarray:
    """erf elementwise: scipy's vectorised kernel when scipy is there (imported at first use: it
    costs half a second, which every ``import gradviz`` would pay), else math.erf mapped."""
    if not _ERF:
        try:
            from scipy.special import erf
        except ImportError:  # pragma: no cover - scipy is optional
            mapped = np.frompyfunc(math.erf, 1, 1)

            def erf(a: np.ndarray) -> np.ndarray:
                return mapped(a).astype(a.dtype)

        _ERF.append(erf)
    return _ERF[0](x)


def _requires(t: Tensor | None) -> bool:
    return t is not None and (t._requires_grad or t._grad_fn is not None or
                              (t._base is not None and t._base._tracked))


def _no_double(name: str, fn: Any) -> Any:
    """A formula that computes on arrays only: under create_graph=True its result would have no
    history, and a second derivative through it would be silently wrong, so it refuses."""

    def formula(n: Any, g: Any) -> Any:
        if _grad_state.enabled:
            raise NotImplementedError(f"gradviz: double backward through {name} is not implemented")
        return fn(n, g)

    return formula


def _register(key: str, row: D, graph: bool = False) -> type:
    """Add ``row`` to the derivative table. ``graph``: its formulas build a graph under
    create_graph=True (else they refuse to run there)."""
    if not graph:
        row = dataclasses.replace(row, grads=tuple(None if f is None else _no_double(row.name, f) for f in row.grads))
    DERIVATIVES[key] = row
    cls = node_class(row)
    F.NODES[key] = cls
    return cls


def _out(data: Any, like: Tensor) -> Tensor:
    if type(data) is np.ndarray and data.dtype is like.dtype.np:
        return _wrap(data, like.dtype, like.device)
    return F._new(array_module(like.device).asarray(data, dtype=like.dtype.np), like.device)


def _cached_part(compute: Any, i: int) -> Any:
    """Gradient formula i of a node whose gradients ``compute(node, g)`` makes in one pass (a
    convolution's, a grid sampler's): the parts are kept on the node for its other formulas."""

    def grad(n: Any, g: Tensor) -> Tensor | None:
        cache = n.saved.get("_parts")
        if cache is None or cache[0] is not g:
            cache = (g, compute(n, g))
            n.saved["_parts"] = cache
        part = cache[1][i]
        return None if part is None else _out(_ascontiguous(part), g)

    return grad


def _cached_outputs(compute: Any, i: int) -> Any:
    """Formula i of a multi-output node whose gradients come from one pass, ``compute(n, grads)``
    (a double backward's), run once per list of incoming gradients."""

    def grad(n: Any, grads: list) -> Any:
        cache = n.saved.get("_outputs")
        if cache is None or cache[0] is not grads:
            cache = (grads, compute(n, grads))
            n.saved["_outputs"] = cache
        return cache[1][i]

    return grad


# -- addmm -------------------------------------------------------------------------------------


def _colmajor(x: Any) -> bool:
    """torch's test in mm's backward: strides (1, rows), in elements (a sparse operand has none)."""
    if type(x) is SparseCOO:
        return False
    st = x.strides
    return st[0] == x.itemsize and st[1] == x.shape[0] * x.itemsize


def _mm_shape_error(a: tuple, b: tuple) -> RuntimeError:
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})")


def addmm(bias: Tensor, mat1: Tensor, mat2: Tensor) -> Tensor:
    """bias + mat1 @ mat2 (beta = alpha = 1), one AddmmBackward0 node as torch's Linear makes."""
    x, y, b = mat1._data, mat2._data, bias._data
    if x.ndim != 2 or y.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {x.ndim}-D tensor" if x.ndim != 2
                           else f"mat2 must be a matrix, got {y.ndim}-D tensor")
    if x.shape[1] != y.shape[0]:
        raise _mm_shape_error(x.shape, y.shape)
    if mat1.dtype is not mat2.dtype or bias.dtype is not mat1.dtype:
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {_dtype.scalar_type_name(mat1.dtype)} and "
            f"{_dtype.scalar_type_name(mat2.dtype)}"
        )
    data = _blas.gemm(x, y, b)  # torch's order: the bias copied into the output, then beta = 1
    if data is None:
        data = np.matmul(x, y)
        data += b
    out = _wrap(data, mat1.dtype, mat1.device)
    if _grad_state.enabled:
        r0, r1, r2 = _requires(bias), _requires(mat1), _requires(mat2)
        if r0 or r1 or r2:
            # torch's mm_mat1/mat2_backward test the strides: mat1 is usually row-major and mat2
            # (weight.t()) column-major, but an input can be either
            saved: dict[str, Any] = {
                "self_shape": b.shape, "mat1_colmajor": _colmajor(x), "mat2_colmajor": _colmajor(y),
            }
            if r1:
                saved["mat2"] = SavedVariable(mat2)
            if r2:
                saved["mat1"] = SavedVariable(mat1)
            record(_ADDMM, (bias, mat1, mat2), [out], saved)
    return out


def _addmm_self(n: Any, g: Tensor) -> Tensor:
    shape = n.saved["self_shape"]
    if not _grad_state.enabled:
        gd = g._data
        if gd.shape == shape:
            return g
        if len(shape) == 1 and gd.ndim == 2:
            return _out(np.add.reduce(gd, axis=0), g)
        return F.sum_to(g, shape)
    return F.sum_to(g, shape)


def _addmm_mat1(n: Any, g: Tensor) -> Tensor:
    colmajor = n.saved["mat1_colmajor"]
    if not _grad_state.enabled:
        if colmajor:
            return _out(_blas.matmul(n["mat2"]._data, g._data.T).T, g)
        return _out(_blas.matmul(g._data, n["mat2"]._data.T), g)
    return F.t(F.mm(n["mat2"], F.t(g))) if colmajor else F.mm(g, F.t(n["mat2"]))


def _addmm_mat2(n: Any, g: Tensor) -> Tensor:
    colmajor = n.saved["mat2_colmajor"]
    if not _grad_state.enabled:
        if not colmajor:
            return _out(_blas.matmul(n["mat1"]._data.T, g._data), g)
        # mat2 is weight.t() (column-major): torch computes (grad^T mat1)^T, so TBackward0 hands
        # AccumulateGrad a row-major gradient.
        d = _blas.matmul(g._data.T, n["mat1"]._data)
        return _wrap(d.T, g.dtype, g.device) if d.dtype is g.dtype.np else _out(d.T, g)
    return F.t(F.mm(F.t(g), n["mat1"])) if colmajor else F.mm(F.t(n["mat1"]), g)


def _linear_forward(n: Any, ts: list, outs: list) -> Tensor | None:
    """bias + mat1 @ mat2 is linear in each: the tangents' parts summed (forward AD)."""
    t_bias, t1, t2 = ts
    parts = [t_bias, None if t1 is None else F.mm(t1, n["mat2"]), None if t2 is None else F.mm(n["mat1"], t2)]
    out = None
    for p in parts:
        if p is not None:
            out = p if out is None else F.add(out, p)
    return out


# Its own row: torch.addmm (gradviz/ops/linalg.py) saves beta and alpha; Linear's addmm has both 1.
_ADDMM = _register("linear_addmm", D("AddmmBackward0", (_addmm_self, _addmm_mat1, _addmm_mat2), order=(1, 2, 0),
                                     forward=_linear_forward),
                   graph=True)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """torch's linear: addmm for a 2-d input with a bias; a reshape to 2-d, addmm and a view back
    for other inputs with a bias; matmul (mm and its views) without one."""
    if bias is None:
        return F.matmul(input, F.t(weight))
    nd = input.ndim
    if nd == 2:
        return addmm(bias, input, F.t(weight))
    if not input._data.flags.c_contiguous:
        # torch's fused path takes contiguous inputs only; others: matmul, then the bias added
        # in place (AddBackward0)
        return F.matmul(input, F.t(weight)).add_(bias)
    if nd == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D and 2D")
    in_features = input.shape[-1]
    if weight.ndim == 2 and in_features != weight.shape[1]:
        rows = input.numel() // in_features if in_features else 0
        raise _mm_shape_error((rows, in_features), (weight.shape[1], weight.shape[0]))
    flat = F.reshape(input, (-1, in_features))
    out = addmm(bias, flat, F.t(weight))
    return F.view(out, (*input.shape[:-1], out.shape[-1]))


# -- embedding ---------------------------------------------------------------------------------


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by ``input`` (indices). torch's node: EmbeddingBackward0."""
    if input.dtype is not _dtype.int64 and input.dtype is not getattr(_dtype, "int32", None):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
            f"but got {input.type().replace('gradviz.', 'torch.')} instead (while checking arguments for embedding)"
        )
    idx = input._data
    w = weight._data
    n = w.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    out = _wrap(w[idx], weight.dtype, weight.device)
    if _grad_state.enabled and _requires(weight):
        pad = -1 if padding_idx is None else padding_idx
        record(_EMBEDDING, (weight,), [out], {
            "indices": input.detach(), "num_weights": n, "padding_idx": pad,
            "scale_grad_by_freq": scale_grad_by_freq, "sparse": sparse,
        })
    return out


def embedding_dense_backward(g: Tensor, indices: Tensor, num_weights: int, padding_idx: int,
                             scale_grad_by_freq: bool) -> Tensor:
    gd = g._data
    dim = gd.shape[-1]
    idx = indices._data.reshape(-1)
    rows = gd.reshape(-1, dim)
    if padding_idx >= 0:
        keep = idx != padding_idx
        idx, rows = idx[keep], rows[keep]
    xp = array_module(g.device)
    if scale_grad_by_freq:
        counts = xp.bincount(indices._data.reshape(-1), minlength=num_weights)
        rows = rows / counts[idx][:, None].astype(gd.dtype)
    gw = xp.zeros((num_weights, dim), dtype=gd.dtype)
    add_at(gw, idx, rows)
    return _out(gw, g)


_EMBEDDING = _register("embedding", D("EmbeddingBackward0", (
    lambda n, g: embedding_dense_backward(g, n["indices"], n["num_weights"], n["padding_idx"],
                                          n["scale_grad_by_freq"]),
), forward=lambda n, ts, o: F.reshape(F.index_select(ts[0], 0, F.reshape(n["indices"], (-1,))), tuple(o[0].shape))))


# -- layer norm --------------------------------------------------------------------------------


def native_layer_norm(input: Tensor, normalized_shape: tuple[int, ...], weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    x = input._data
    k = len(normalized_shape)
    if tuple(x.shape[x.ndim - k:]) != tuple(normalized_shape) or x.ndim < k:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size{list(input.shape)}"
        )
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True, dtype=x.dtype)
    xc = x - mean
    var = (xc * xc).mean(axis=axes, keepdims=True, dtype=x.dtype)
    rstd = (1.0 / np.sqrt(var + eps)).astype(x.dtype, copy=False)
    y = xc * rstd
    if weight is not None:
        y = y * weight._data
    if bias is not None:
        y = y + bias._data
    out = _out(y, input)
    m, r = _out(mean, input), _out(rstd, input)
    if _grad_state.enabled and (_requires(input) or _requires(weight) or _requires(bias)):
        record(_LAYER_NORM, (input, weight, bias), [out, m, r], {
            "input": SavedVariable(input), "weight": None if weight is None else SavedVariable(weight),
            "bias": None if bias is None else SavedVariable(bias), "mean": SavedVariable(m, True),
            "rstd": SavedVariable(r, True), "normalized_shape": tuple(normalized_shape),
        })
    return out, m, r


def _layer_norm_grads(n: Any, grads: list) -> tuple:
    g = grads[0]
    x = n["input"]._data
    mean, rstd = n["mean"]._data, n["rstd"]._data
    axes = tuple(range(x.ndim - len(n["normalized_shape"]), x.ndim))
    lead = tuple(range(0, x.ndim - len(axes)))
    xhat = (x - mean) * rstd
    gd = g._data
    w = n["weight"]
    dxhat = gd * w._data if w is not None else gd
    a = dxhat.mean(axis=axes, keepdims=True)
    b = (dxhat * xhat).mean(axis=axes, keepdims=True)
    dx = rstd * (dxhat - a - xhat * b)
    dw = (gd * xhat).sum(axis=lead) if w is not None else None
    db = gd.sum(axis=lead) if n["bias"] is not None else None
    return dx, dw, db


def _ln_part(i: int) -> Any:
    def grad(n: Any, grads: list) -> Tensor | None:
        g = grads[0]
        if g is None:
            return None
        if _grad_state.enabled:  # create_graph: NativeLayerNormBackwardBackward0 (its own file)
            return _ln_double.layer_norm_backward_of(n, grads)[i]
        part = _layer_norm_grads(n, grads)[i]
        return None if part is None else _out(part.astype(g._data.dtype, copy=False), g)

    return grad


_LAYER_NORM = _register("native_layer_norm", D(
    "NativeLayerNormBackward0", (_ln_part(0), _ln_part(1), _ln_part(2)), multi_output=True, forward=TR,
), graph=True)


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return native_layer_norm(input, tuple(normalized_shape), weight, bias, eps)[0]


# -- activations -------------------------------------------------------------------------------

_SQRT_2 = math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def _gelu_data(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        inner = _SQRT_2_PI * (x + 0.044715 * x * x * x)
        return (0.5 * x * (1.0 + np.tanh(inner))).astype(x.dtype, copy=False)
    return (0.5 * x * (1.0 + _erf(x / _SQRT_2))).astype(x.dtype, copy=False)


def _gelu_backward_data(g: np.ndarray, x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        x3 = x * x * x
        inner = _SQRT_2_PI * (x + 0.044715 * x3)
        t = np.tanh(inner)
        left = 0.5 * x
        right = 1.0 + t
        left_d = 0.5 * right
        tanh_d = 1.0 - t * t
        inner_d = _SQRT_2_PI * (1.0 + 3.0 * 0.044715 * x * x)
        right_d = left * tanh_d * inner_d
        return (g * (left_d + right_d)).astype(x.dtype, copy=False)
    cdf = 0.5 * (1.0 + _erf(x / _SQRT_2))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return (g * (cdf + x * pdf)).astype(x.dtype, copy=False)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    out = _out(_gelu_data(input._data, approximate), input)
    if _grad_state.enabled and _requires(input):
        record(_GELU, (input,), [out], {"self": SavedVariable(input), "approximate": approximate})
    return out


def _gelu_grad(n: Any, g: Tensor) -> Tensor:
    if _grad_state.enabled:  # create_graph: torch's gelu_backward op (GeluBackwardBackward0)
        from gradviz.ops.nn_backward_ops import gelu_backward

        return gelu_backward(g, n["self"], n.saved["approximate"])
    return _out(_gelu_backward_data(g._data, n["self"]._data, n["approximate"]), g)


_GELU = _register("gelu", D("GeluBackward0", (_gelu_grad,), forward=EW), graph=True)


def _sigmoid_data(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    x = input._data
    out = _out(x * _sigmoid_data(x), input)
    if _grad_state.enabled and _requires(input):
        record(_SILU, (input,), [out], {"self": SavedVariable(input)})
    return out


def _silu_grad(n: Any, g: Tensor) -> Tensor:
    if _grad_state.enabled:
        # create_graph: torch's infinitely_differentiable_silu_backward, in recorded ops
        # (C++'s "1.0 - t" is sub of a wrapped 0-d tensor: SubBackward0; "1.0 + t" AddBackward1)
        x = n["self"]
        sig = F.sigmoid(x)
        one = F.full((), 1.0, dtype=sig.dtype, device=sig.device)
        inner = F.add_scalar(F.mul(x, F.sub(one, sig)), 1.0)
        return F.mul(F.mul(g, sig), inner)
    x = n["self"]._data
    s = _sigmoid_data(x)
    return _out(g._data * s * (1.0 + x * (1.0 - s)), g)


_SILU = _register("silu", D("SiluBackward0", (_silu_grad,), forward=EW), graph=True)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    if inplace:
        return _leaky_inplace.leaky_relu_(input, negative_slope)
    x = input._data
    out = _out(np.where(x > 0, x, x * negative_slope), input)
    if _grad_state.enabled and _requires(input):
        record(_LEAKY, (input,), [out], {"self": SavedVariable(input), "negative_slope": negative_slope})
    return out


def leaky_relu_backward(grad: Tensor, self_: Tensor, negative_slope: float) -> Tensor:
    """grad where self > 0, else grad * negative_slope: torch's leaky_relu_backward, a node of its
    own (LeakyReluBackwardBackward0) when a create_graph backward records it."""
    out = _out(np.where(self_._data > 0, grad._data, grad._data * negative_slope), grad)
    if _grad_state.enabled and (_requires(grad) or _requires(self_)):
        record(_LEAKY_BACKWARD, (grad, self_), [out], {"self": SavedVariable(self_), "negative_slope": negative_slope})
    return out


def _leaky_grad(key: str) -> Any:
    """LeakyReluBackward0 (key "self") and LeakyReluBackward1 (key "result", the in-place form)."""

    def grad(n: Any, g: Tensor) -> Tensor:
        slope = n.saved["negative_slope"]
        if not _grad_state.enabled:  # no graph to build: the arrays only
            return _out(np.where(n[key]._data > 0, g._data, g._data * slope), g)
        return leaky_relu_backward(g, n[key], slope)

    return grad


_LEAKY = _register("leaky_relu", D("LeakyReluBackward0", (_leaky_grad("self"),), forward=EW), graph=True)
# its derivative: the same function of the new gradient; none through self (piecewise linear)
_LEAKY_BACKWARD = _register("leaky_relu_backward", D("LeakyReluBackwardBackward0", (
    lambda n, g: leaky_relu_backward(g, n["self"], n.saved["negative_slope"]),
    lambda n, g: F.zeros_like(g),
), forward=EW), graph=True)


# -- bilinear ----------------------------------------------------------------------------------


def trilinear_bilinear(x1: Tensor, weight: Tensor, x2: Tensor) -> Tensor:
    """out[b, o] = sum_ij x1[b, i] W[o, i, j] x2[b, j]: the _trilinear call torch's bilinear
    makes, one TrilinearBackward0 node with edges (x1, weight, x2)."""
    a, w, b = x1._data, weight._data, x2._data
    out = _out(np.einsum("bi,oij,bj->bo", a, w, b, optimize=True), x1)
    if _grad_state.enabled and (_requires(x1) or _requires(weight) or _requires(x2)):
        record(_TRILINEAR, (x1, weight, x2), [out], {
            "i1": SavedVariable(x1), "i2": SavedVariable(weight), "i3": SavedVariable(x2),
        })
    return out


_TRILINEAR = _register("_trilinear", D("TrilinearBackward0", (
    lambda n, g: _out(np.einsum("bo,oij,bj->bi", g._data, n["i2"]._data, n["i3"]._data, optimize=True), g),
    lambda n, g: _out(np.einsum("bo,bi,bj->oij", g._data, n["i1"]._data, n["i3"]._data, optimize=True), g),
    lambda n, g: _out(np.einsum("bo,oij,bi->bj", g._data, n["i2"]._data, n["i1"]._data, optimize=True), g),
), forward=TR))


# after the rows it uses (_register, _out): its own row, LeakyReluBackward1, joins the table on import
from gradviz.ops import nn_leaky_relu_inplace as _leaky_inplace  # noqa: E402
from gradviz.ops import nn_norm_double_ops as _ln_double  # noqa: E402 - its row joins the table here
