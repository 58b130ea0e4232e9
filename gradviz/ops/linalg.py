"""Linear algebra: mm, mv, dot, bmm, matmul, addmm, baddbmm, einsum."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from gradviz import _blas, _dtype
from gradviz._sparse_coo import SparseCOO
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.device import as_strided
from gradviz.ops import arith as _arith
from gradviz.ops import views as _views
from gradviz.ops._common import (
    NODES,
    _as_array,
    _broadcast_error,
    _check_devices,
    _new,
    _out,
    _saved_data,
    _wrap,
    register,
)
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "addmm", "baddbmm", "bmm", "dot", "einsum", "matmul", "mm", "mv",
]

# -- linear algebra --------------------------------------------------------------------------


def _check_float_mm(a: Tensor, b: Tensor) -> None:
    _check_devices(a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {_dtype.cpp_type_name(a.dtype)} != "
            f"{_dtype.cpp_type_name(b.dtype)}"
        )


def _colmajor(x: Any) -> bool:
    # torch's test in mm's backward: strides (1, rows), in elements
    item = x.itemsize
    st = x.strides
    return st[0] == item and st[1] == x.shape[0] * item


def _dense_colmajor(x: Any) -> bool:
    # a sparse operand has no strides (torch's branch tests strided layouts only)
    return type(x) is not SparseCOO and _colmajor(x)


def _check_mm(a: Tensor, b: Tensor) -> None:
    _check_float_mm(a, b)
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError("self must be a matrix" if a.ndim != 2 else "mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
            f"{b.shape[0]}x{b.shape[1]})"
        )


def mm(a: Tensor, b: Tensor) -> Tensor:
    x, y = a._data, b._data
    if type(x) is SparseCOO or type(y) is SparseCOO:
        from gradviz.ops.sparse_ops import sparse_mm

        return sparse_mm(a, b)
    dt = a.dtype
    if not (dt is b.dtype and a.device is b.device and x.ndim == 2 and y.ndim == 2 and x.shape[1] == y.shape[0]):
        _check_mm(a, b)  # raises, or passes (equal devices that are distinct objects)
    if _grad_state.enabled:
        # requires_grad and _colmajor inline, SavedVariable without save()'s call.
        ra = a._requires_grad or a._grad_fn is not None or (a._base is not None and a._base._tracked)
        rb = b._requires_grad or b._grad_fn is not None or (b._base is not None and b._base._tracked)
        if ra or rb:
            item = x.itemsize
            st = x.strides
            c1 = st[0] == item and st[1] == x.shape[0] * item
            st = y.strides
            c2 = st[0] == item and st[1] == y.shape[0] * item
            if ra:
                if rb:
                    saved = {
                        "self_colmajor": c1,
                        "mat2_colmajor": c2,
                        "mat2": SavedVariable(b),
                        "self": SavedVariable(a),
                    }
                else:
                    saved = {"self_colmajor": c1, "mat2_colmajor": c2, "mat2": SavedVariable(b)}
            else:
                saved = {"self_colmajor": c1, "mat2_colmajor": c2, "self": SavedVariable(a)}
            if type(x) is np.ndarray and type(y) is np.ndarray and x.dtype is y.dtype:
                # The node first and the product into its output after, as torch's generated code
                # orders them: the graph building then runs on the caches the ops before left
                # warm, not on those a large product just evicted (2-4x slower there). matmul
                # into a fresh C-contiguous buffer is the same BLAS call as ``x @ y``.
                data = np.empty((x.shape[0], y.shape[1]), x.dtype)
                out = _wrap(data, dt, a.device)
                record(_MM_NODE, (a, b), [out], saved)
                if _blas.gemm(x, y, out=data) is None:
                    np.matmul(x, y, out=data)
                return out
            out = _wrap(_blas.matmul(x, y), dt, a.device)
            record(_MM_NODE, (a, b), [out], saved)
            return out
    return _wrap(_blas.matmul(x, y), dt, a.device)


def mv(a: Tensor, v: Tensor) -> Tensor:
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {v.ndim}")
    _check_float_mm(a, v)
    if a.ndim == 2 and v.ndim == 1 and a.shape[1] != v.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), vec ({v.shape[0]})"
        )
    out = _new(a._data @ v._data, a.device)
    if _grad_state.enabled and (a._tracked or v._tracked):
        saved = {}
        if a._tracked:
            saved["vec"] = save(v)
        if v._tracked:
            saved["self"] = save(a)
        record(NODES["mv"], (a, v), [out], saved)
    return out


def dot(a: Tensor, b: Tensor) -> Tensor:
    _check_float_mm(a, b)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have the same "
            f"number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively"
        )
    out = _new(_as_array(np.dot(a._data, b._data)), a.device)
    if _grad_state.enabled and (a._tracked or b._tracked):
        saved = {}
        if a._tracked:
            saved["tensor"] = save(b)
        if b._tracked:
            saved["self"] = save(a)
        record(NODES["dot"], (a, b), [out], saved)
    return out


def _check_bmm_dtypes(a: Tensor, b: Tensor) -> None:
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(a.dtype)} but found "
                           f"{_dtype.scalar_type_name(b.dtype)}")


def bmm(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError(f"batch{1 if a.ndim != 3 else 2} must be a 3D tensor")
    if b.shape[:2] != (a.shape[0], a.shape[2]):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, {a.shape[2]}] but "
            f"got: [{b.shape[0]}, {b.shape[1]}]."
        )
    _check_devices(a, b)
    _check_bmm_dtypes(a, b)
    out = _new(np.matmul(a._data, b._data), a.device)
    if _grad_state.enabled and (a._tracked or b._tracked):
        saved = {}
        if a._tracked:
            saved["mat2"] = save(b)
        if b._tracked:
            saved["self"] = save(a)
        record(NODES["bmm"], (a, b), [out], saved)
    return out


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """torch.matmul's dispatch: dot, mv, mm, or folded/batched forms ending in an unsafe view."""
    da, db = a._data.ndim, b._data.ndim
    if da == 2 and db == 2:
        return mm(a, b)
    if da == 1 and db == 1:
        return dot(a, b)
    if da == 2 and db == 1:
        return mv(a, b)
    if da == 1 and db == 2:
        # torch squeezes the mm result in place: SqueezeBackward4, and the result is no view.
        r = mm(_views.unsqueeze(a, 0), b)
        out = _new(np.squeeze(r._data, 0), r.device)
        if _grad_state.enabled and r._tracked:
            record(NODES["squeeze_dim_"], (r,), [out], {"shape": r.shape, "dim": 0})
        return out
    if _should_fold(a, b):
        # Fold the batch of the larger operand into matrix rows: one mm (or mv) and a view back.
        transpose = db > da
        t1 = _mT(b) if transpose else a
        t2 = (_views.t(a) if da == 2 else a) if transpose else b
        lead = t1.shape[:-1]
        folded = _views.reshape(t1, (int(np.prod(lead)), t1.shape[-1]))
        if t2.ndim == 2:
            r = _views._unsafe_view(mm(folded, t2), lead + (t2.shape[1],))
            return _views.contiguous(_mT(r)) if transpose else r
        return _views._unsafe_view(mv(folded, t2), lead)
    # Broadcast the batch dims, then one bmm.
    n = a.shape[-2] if da > 1 else 1
    p = b.shape[-1] if db > 1 else 1
    m2 = b.shape[-2] if db > 1 else b.shape[0]
    ba, bb = a.shape[:-2] if da > 2 else (), b.shape[:-2] if db > 2 else ()
    err = _broadcast_error(ba, bb)
    if err is not None:
        raise err
    batch = tuple(np.broadcast_shapes(ba, bb))
    count = int(np.prod(batch))
    a3 = _views.reshape(_views.expand(a, batch + (n, a.shape[-1])), (count, n, a.shape[-1]))
    if db == 1:
        b3 = _views.unsqueeze(_views.reshape(_views.expand(b, batch + (m2,)), (count, m2)), 2)
    else:
        b3 = _views.reshape(_views.expand(b, batch + (m2, p)), (count, m2, p))
    shape = batch + ((n,) if da > 1 else ()) + ((p,) if db > 1 else ())
    r = bmm(a3, b3)
    return _views._unsafe_view(_views.squeeze(r, -1) if db == 1 else r, shape)


def _mT(a: Tensor) -> Tensor:  # noqa: N802 - torch's Tensor.mT
    return _views.transpose(a, -2, -1)


def _should_fold(a: Tensor, b: Tensor) -> bool:
    """torch's should_fold: use mm/mv on the larger operand folded to a matrix when the smaller
    one requires grad (a cheaper backward) or the fold needs no copy."""
    a_larger = a.ndim >= b.ndim
    big_ndim, small = (a.ndim, b) if a_larger else (b.ndim, a)
    if not (big_ndim >= 3 and small.ndim <= 2):
        return False
    if small._tracked and _grad_state.enabled:
        return True
    if a.ndim == 2:
        return False
    big = a._data if a_larger else np.swapaxes(b._data, -1, -2)
    if big.size == 0:
        return True
    strides, sizes = big.strides, big.shape
    return builtins.all(strides[i] == strides[i + 1] * sizes[i + 1] for i in range(big.ndim - 1))


# -- fused multiply-adds and einsum ------------------------------------------------------------


def _scaled(x: Any, c: Any) -> Any:
    return x if c == 1 else x * c


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2), input broadcast to the product (AddmmBackward0)."""
    if input.dtype is not mat2.dtype or mat1.dtype is not mat2.dtype:
        first = input.dtype if input.dtype is not mat2.dtype else mat1.dtype
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_dtype.scalar_type_name(first)} and "
                           f"{_dtype.scalar_type_name(mat2.dtype)}")
    _check_mm(mat1, mat2)
    _check_devices(input, mat1)
    data = None
    if type(alpha) in (int, float) and type(beta) in (int, float):  # what cblas's real scalars take
        # torch's order: the input broadcast into the output, then gemm with alpha and beta.
        data = _blas.gemm(mat1._data, mat2._data, input._data, alpha, beta)
    if data is None:
        prod = mat1._data @ mat2._data
        bias = np.broadcast_to(input._data, prod.shape) if input._data.shape != prod.shape else input._data
        data = _as_array(_scaled(prod, alpha) + (0 if beta == 0 else _scaled(bias, beta)), prod.dtype)
    out = _new(data, input.device)
    if _grad_state.enabled and (input._tracked or mat1._tracked or mat2._tracked):
        saved = {"mat1": save(mat1), "mat2": save(mat2), "beta": beta, "alpha": alpha,
                 "mat1_colmajor": _dense_colmajor(mat1._data),
                 "mat2_colmajor": _dense_colmajor(mat2._data)}
        record(NODES["addmm"], (input, mat1, mat2), [out], saved)
    return out


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """beta * input + alpha * (batch1 @ batch2), batch by batch (BaddbmmBackward0)."""
    if batch2.ndim == 2 and batch1.ndim == 3:  # torch reads batch2's third size first
        raise IndexError("Dimension out of range (expected to be in range of [-2, 1], but got 2)")
    _check_bmm_dtypes(batch1, batch2)
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(f"batch{1 if batch1.ndim != 3 else 2} must be a 3D tensor")
    if batch2.shape[:2] != (batch1.shape[0], batch1.shape[2]):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{batch1.shape[0]}, "
            f"{batch1.shape[2]}] but got: [{batch2.shape[0]}, {batch2.shape[1]}]."
        )
    _check_float_mm(batch1, batch2)
    prod = np.matmul(batch1._data, batch2._data)
    bias = np.broadcast_to(input._data, prod.shape) if input._data.shape != prod.shape else input._data
    data = _scaled(prod, alpha) + (0 if beta == 0 else _scaled(bias, beta))
    out = _new(_as_array(data, prod.dtype), input.device)
    if _grad_state.enabled and (input._tracked or batch1._tracked or batch2._tracked):
        saved = {"batch1": save(batch1), "batch2": save(batch2), "beta": beta, "alpha": alpha}
        record(NODES["baddbmm"], (input, batch1, batch2), [out], saved)
    return out


def _einsum_tokens(spec: str, i: int) -> list[str]:
    """An operand's subscripts with '...' as one token; a lone '.' is torch's error."""
    out: list[str] = []
    k = 0
    while k < len(spec):
        if spec.startswith("...", k) and "..." not in out:
            out.append("...")
            k += 3
            continue
        if spec[k] == ".":
            raise RuntimeError(f"einsum(): found '.' for operand {i} that is not part of any ellipsis")
        if not spec[k].isalpha() or not spec[k].isascii():
            raise RuntimeError(f"einsum(): invalid subscript given at index {k} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
        out.append(spec[k])
        k += 1
    return out


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation as torch computes it, so with its nodes: each operand has its missing
    ellipsis dims unsqueezed, a repeated label taken as a diagonal (moved back to the label's
    first place), is unsqueezed for the labels it lacks and permuted to one label order (the
    output's, then the ellipsis dims when the output lacks them, then the contracted labels
    sorted); one operand is summed over the contracted labels; two are contracted by
    _sumproduct_pair (a bmm), more left to right."""
    from gradviz.ops import reductions as _reductions

    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    specs = lhs.split(",")
    if len(specs) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(specs) else
                           "einsum(): fewer operands were provided than specified in the equation")
    toks = [_einsum_tokens(spec, i) for i, spec in enumerate(specs)]
    ell_num = 0
    for i, (tk, op) in enumerate(zip(toks, operands, strict=True)):
        named = len(tk) - ("..." in tk)
        if "..." in tk:
            if op.ndim < named:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) is more than the "
                                   f"number of dimensions ({op.ndim}) for operand {i}")
            ell_num = builtins.max(ell_num, op.ndim - named)
        elif named != op.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) does not match the "
                               f"number of dimensions ({op.ndim}) for operand {i} and no ellipsis was given")
    ell = [f"...{k}" for k in range(ell_num)]  # one pseudo-label per ellipsis dim
    letters = [c for tk in toks for c in tk if c != "..."]
    if arrow:
        out_toks = _einsum_tokens(rhs, 0)
        for c in out_toks:
            if c != "..." and c not in letters:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   "operand")
            if c != "..." and out_toks.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
    else:
        out_toks = ["..."] + sorted(c for c in set(letters) if letters.count(c) == 1)
    out_labels = [x for c in out_toks for x in (ell if c == "..." else [c])]
    labels = out_labels + ([] if "..." in out_toks else ell) + sorted(set(letters) - set(out_toks))
    n_out = len(out_labels)
    index = {label: i for i, label in enumerate(labels)}
    n = len(labels)
    ops = []
    ell_sizes = [1] * ell_num
    for i, (tk, op) in enumerate(zip(toks, operands, strict=True)):
        perm = [-1] * n
        first: dict[str, int] = {}
        t, j = op, 0
        for c in tk:
            if c == "...":
                for _ in range(ell_num - (op.ndim - len(tk) + 1)):
                    t = _views.unsqueeze(t, j)
                for k, e in enumerate(ell):
                    size = t.shape[j]
                    if size != 1 and ell_sizes[k] not in (1, size):
                        raise RuntimeError(f"einsum(): dimension {k} covered by ellipsis in operand {i}has size {size} "
                                           "which does not broadcast with previously seen ellipsis with size "
                                           f"{ell_sizes[k]} for the respective dimension")
                    ell_sizes[k] = builtins.max(ell_sizes[k], size)
                    perm[index[e]], j = j, j + 1
            elif c in first:  # repeated label: its diagonal, moved back to where the label first came
                d = first[c]
                if t.shape[j] != t.shape[d]:
                    raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't "
                                       f"match, {t.shape[j]} != {t.shape[d]}")
                t = _diagonal(t, d, j)
                moved = list(range(t.ndim - 1))
                moved.insert(d, t.ndim - 1)
                t = _views.permute(t, moved)
            else:
                first[c] = j
                perm[index[c]], j = j, j + 1
        for k in range(n):
            if perm[k] == -1:  # a label the operand lacks: a new last dim of size 1
                t = _views.unsqueeze(t, -1)
                perm[k], j = j, j + 1
        ops.append(_views.permute(t, perm))
    if len(ops) == 1:
        return _reductions.sum(ops[0], list(range(n_out, n))) if n > n_out else ops[0]
    result = ops[0]
    for k in range(1, len(ops)):
        later = {x for tk in toks[k + 1:] for c in tk for x in (ell if c == "..." else [c])}
        sum_dims = [d for d in range(n_out, n) if labels[d] not in later]
        result = _sumproduct_pair(result, ops[k], sum_dims) if sum_dims else _arith.mul(result, ops[k])
    if n > n_out:
        result = _views.view(result, tuple(result.shape[:n_out]))
    return result


def _diag_strided(x: Any, d1: int, d2: int) -> Any:
    """x's main diagonal over dims d1 < d2, appended last: a writable view (torch's diagonal is one)."""
    shape = [s for k, s in enumerate(x.shape) if k not in (d1, d2)] + [builtins.min(x.shape[d1], x.shape[d2])]
    strides = [s for k, s in enumerate(x.strides) if k not in (d1, d2)] + [x.strides[d1] + x.strides[d2]]
    return as_strided(x, shape, strides, writeable=x.flags.writeable)  # cupy's for device data


def _diagonal(a: Tensor, d1: int, d2: int) -> Tensor:
    """diagonal(a, 0, d1, d2) for einsum's repeated labels (DiagonalBackward0)."""
    lo, hi = builtins.min(d1, d2), builtins.max(d1, d2)
    data = _diag_strided(a._data, lo, hi)
    return _views._view_of(a, data, "einsum_diagonal", {"shape": tuple(a.shape), "d1": lo, "d2": hi})


def _diagonal_grad(n, g):
    """Zeros of the input's shape with g written on the diagonal."""
    if _grad_state.enabled and g._tracked:
        # create_graph: g moved to d1, unsqueezed at d2, times an identity over (d1, d2); the same
        # values as torch's DiagonalBackwardBackward0 path, through other nodes
        d1, d2, k = n["d1"], n["d2"], g.shape[-1]
        perm = list(range(g.ndim - 1))
        perm.insert(d1, g.ndim - 1)
        t = _views.unsqueeze(_views.permute(g, perm), d2)
        eye_shape = [1] * t.ndim
        eye_shape[d1] = eye_shape[d2] = k
        return _arith.mul(t, _new(np.eye(k, dtype=g._data.dtype).reshape(eye_shape), g.device))
    data = np.zeros(n["shape"], dtype=g._data.dtype)
    _diag_strided(data, n["d1"], n["d2"])[...] = g._data
    return _out(data, g)


def _sumproduct_pair(left: Tensor, right: Tensor, sum_dims: list[int]) -> Tensor:
    """sum(left * right) over sum_dims, keeping them as size 1 (torch's sumproduct_pair): dims
    only one side has are summed on that side first; the rest becomes one bmm of (batch, left
    only, summed) by (batch, summed, right only), then viewed and permuted back."""
    from gradviz.ops import reductions as _reductions

    lro: list[int] = []
    lo: list[int] = []
    ro: list[int] = []
    joint = False
    lro_size = lo_size = ro_size = sum_size = 1
    for i in range(left.ndim):
        sl, sr = left.shape[i] != 1, right.shape[i] != 1
        if i in sum_dims:
            if sl and sr:
                if left.shape[i] != right.shape[i]:
                    raise RuntimeError("einsum(): operands do not broadcast with remapped shapes "
                                       f"(original->remapped): {list(left.shape)} and {list(right.shape)}")
                sum_size *= left.shape[i]
                joint = True
            elif sl:
                left = _reductions.sum(left, [i], True)
            elif sr:
                right = _reductions.sum(right, [i], True)
        elif sl and sr:
            lro.append(i)
            lro_size *= left.shape[i]
        elif sl:
            lo.append(i)
            lo_size *= left.shape[i]
        else:
            ro.append(i)
            ro_size *= right.shape[i]
    if not joint:
        return _arith.mul(left, right)
    if lo and ro and ro[0] < lo[0]:
        # torch puts the operand whose dims come first in the output on the left of the bmm
        left, right, lo, ro, lo_size, ro_size = right, left, ro, lo, ro_size, lo_size
    out_size = ([left.shape[d] for d in lro] + [left.shape[d] for d in lo] + [1] * len(sum_dims)
                + [right.shape[d] for d in ro])
    order = lro + lo + sum_dims + ro
    operm = [0] * len(order)
    for pos, d in enumerate(order):
        operm[d] = pos
    left = _views.reshape(_views.permute(left, lro + lo + sum_dims + ro), (lro_size, lo_size, sum_size))
    right = _views.reshape(_views.permute(right, lro + sum_dims + ro + lo), (lro_size, sum_size, ro_size))
    return _views.permute(_views.view(bmm(left, right), out_size), operm)


# -- backward formulas ----------------------------------------------------------------------


def _mm_mat1(n, g):
    # torch's mm_mat1_backward: a column-major self gets its gradient column-major too.
    if not _grad_state.enabled:
        # No graph to build: one product on the arrays, one tensor (not two views and an mm).
        m2 = _saved_data(n, "mat2")
        data = _blas.matmul(m2, g._data.T).T if n.saved["self_colmajor"] else _blas.matmul(g._data, m2.T)
        return _out(data, g)
    if n["self_colmajor"]:
        return _views.t(mm(n["mat2"], _views.t(g)))
    return mm(g, _views.t(n["mat2"]))


def _mm_mat2(n, g):
    if not _grad_state.enabled:
        m1 = _saved_data(n, "self")
        data = _blas.matmul(g._data.T, m1).T if n.saved["mat2_colmajor"] else _blas.matmul(m1.T, g._data)
        return _out(data, g)
    if n["mat2_colmajor"]:
        return _views.t(mm(_views.t(g), n["self"]))
    return mm(_views.t(n["self"]), g)


def _addmm_mat1(n, g):
    # torch's mm_mat1_backward, as mm's: a column-major mat1 gets its gradient column-major
    if n["mat1_colmajor"]:
        r = _views.t(mm(n["mat2"], _views.t(g)))
    else:
        r = mm(g, _views.t(n["mat2"]))
    return _arith.mul_scalar(r, n["alpha"]) if n["alpha"] != 1 else r


def _addmm_mat2(n, g):
    # torch's mm_mat2_backward: a column-major mat2 (a weight.t()) gets its gradient column-major
    if n["mat2_colmajor"]:
        r = _views.t(mm(_views.t(g), n["mat1"]))
    else:
        r = mm(_views.t(n["mat1"]), g)
    return _arith.mul_scalar(r, n["alpha"]) if n["alpha"] != 1 else r


def _baddbmm_b1(n, g):
    r = bmm(g, _views.transpose(n["batch2"], 1, 2))
    return r if n["alpha"] == 1 else _arith.mul_scalar(r, n["alpha"])


def _baddbmm_b2(n, g):
    r = bmm(_views.transpose(n["batch1"], 1, 2), g)
    return r if n["alpha"] == 1 else _arith.mul_scalar(r, n["alpha"])


def _beta_grad(n, g):
    return g if n["beta"] == 1 else _arith.mul_scalar(g, n["beta"])


# -- derivative rows ----------------------------------------------------------------------


# -- forward formulas (forward AD): each product is linear in each factor, so its tangent is the
# sum over the factors with a tangent of the product with that factor replaced by its tangent.


def _sum_parts(parts: list) -> Tensor | None:
    parts = [p for p in parts if p is not None]
    out = parts[0] if parts else None
    for p in parts[1:]:
        out = _arith.add(out, p)
    return out


def _fw_product(fn, first: str, second: str):
    def fwd(n, ts, outs):
        ta, tb = ts[0], ts[1]
        return _sum_parts([None if ta is None else fn(ta, n[second]), None if tb is None else fn(n[first], tb)])
    return fwd


def _fw_addmm_like(fn, first: str, second: str):
    def fwd(n, ts, outs):
        t_in, ta, tb = ts
        prod = _sum_parts([None if ta is None else fn(ta, n[second]), None if tb is None else fn(n[first], tb)])
        if prod is not None and n["alpha"] != 1:
            prod = _arith.mul(prod, n["alpha"])
        if t_in is not None and n["beta"] != 0:
            t_in = t_in if n["beta"] == 1 else _arith.mul(t_in, n["beta"])
            return t_in if prod is None else _arith.add(prod, t_in)
        return prod
    return fwd


ROWS: dict[str, D] = {
    "mm": D("MmBackward0", (_mm_mat1, _mm_mat2), order=(1, 0), forward=_fw_product(mm, "self", "mat2")),
    "mv": D("MvBackward0", (
        lambda n, g: _arith.mul(_views.reshape(g, (g.shape[0], 1)), n["vec"]),  # grad.ger(vec)
        lambda n, g: mv(_views.t(n["self"]), g),
    ), forward=_fw_product(mv, "self", "vec")),
    "dot": D("DotBackward0", (lambda n, g: _arith.mul(g, n["tensor"]), lambda n, g: _arith.mul(g, n["self"])),
        forward=_fw_product(dot, "self", "tensor")),
    "bmm": D("BmmBackward0", (
        lambda n, g: bmm(g, _views.transpose(n["mat2"], 1, 2)),
        lambda n, g: bmm(_views.transpose(n["self"], 1, 2), g),
    ), order=(1, 0), forward=_fw_product(bmm, "self", "mat2")),
    # inputs (self, mat1, mat2); torch's generated code runs the formulas sorted by name
    "addmm": D("AddmmBackward0", (_beta_grad, _addmm_mat1, _addmm_mat2), reduce_broadcast=True, order=(1, 2, 0),
        forward=_fw_addmm_like(mm, "mat1", "mat2")),
    "einsum_diagonal": D("DiagonalBackward0", (_diagonal_grad,),
        forward=lambda n, ts, o: _diagonal(ts[0], n["d1"], n["d2"])),
    "baddbmm": D("BaddbmmBackward0", (_beta_grad, _baddbmm_b1, _baddbmm_b2), reduce_broadcast=True,
                 order=(1, 2, 0), forward=_fw_addmm_like(bmm, "batch1", "batch2")),
}
register(ROWS)
_MM_NODE = NODES["mm"]  # the hot path's node class, looked up once

# torch.linalg's norms live beside (a file of their own); gradviz.linalg is this module.
