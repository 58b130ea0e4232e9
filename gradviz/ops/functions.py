"""Every tensor op in one namespace, as ``from gradviz.ops import functions as F`` reads it.

The ops live by family, each module holding an op's forward, its backward formulas and its rows
of the derivative table (so its backward node's name) together:

- arith: add, sub, mul, div, pow, maximum/minimum, where
- pointwise: abs, sqrt, exp, log, sin, cos, sign; comparisons and logical ops
- activations: tanh, sigmoid, relu, clamp, softmax, log_softmax and their fused backward kernels
- reductions: sum, mean, max/min, amax/amin, argmax/argmin, var/std, var_mean/std_mean, norm, sum_to
- cumulative: prod, cumsum, cumprod, logsumexp
- selection: topk, sort, argsort, unique
- views: view, reshape, transpose, permute, squeeze/unsqueeze, expand; clone, contiguous, to_copy
- shape: cat, stack, split, chunk, unbind, repeat, repeat_interleave, narrow, flip, roll, tril/triu
- indexing: getitem, select, gather, scatter, masked_fill, index_select, index_add, nonzero, one_hot
- linalg: mm, mv, dot, bmm, matmul, addmm, baddbmm, einsum
- inplace: add_, mul_, zero_, fill_, copy_, setitem, relu_/sigmoid_/tanh_/clamp_ and the like
- construction: tensor, the factories, legacy typed constructors, and the zeros formulas build
- modes: inference_mode
- diag_ops: diag, diag_embed
- math_ops: atan, asin, ..., erf, erfinv, lgamma, digamma, frac, logit (and their in-place forms)
- math_binary: atan2, hypot, xlogy, logaddexp, lerp, outer
- math_more: tan, exp2, deg2rad/rad2deg, logaddexp2, fmax/fmin, addcmul/addcdiv, nansum/nanmean,
  trace, diagonal, vdot, count_nonzero, logical_xor
- composites: what torch builds from other ops (movedim, ravel, hstack, tensor_split, tile, ...)
- inplace_more: abs_, log_, floor_, rsqrt_, square_ and the other unary ops in place
- runtime: torch's process-wide settings (threads, determinism, matmul precision, ...)
- windows: hann/hamming/blackman/bartlett/kaiser windows, tril/triu_indices
- tensor_info: what a tensor says of itself (stride, is_signed, ...), as functions too
- aliases: torch's other names for these ops (absolute, arccos, divide, greater, swapaxes, ...)
"""

from __future__ import annotations

from types import ModuleType as _ModuleType

from gradviz.ops import (
    _common,
    activations,
    aliases,
    arith,
    composites,
    construction,
    cumulative,
    diag_ops,
    indexing,
    indexing_more,
    inplace,
    inplace_more,
    inplace_variants,
    linalg,
    linalg_more,
    math_binary,
    math_more,
    math_ops,
    misc_more,
    modes,
    pointwise,
    products,
    reductions,
    runtime,
    runtime_more,
    selection,
    selection_more,
    shape,
    special_ops,
    tensor_info,
    tensor_more,
    views,
    windows,
)
from gradviz.ops.as_strided import as_strided as _as_strided

FAMILIES = (_common, construction, arith, pointwise, activations, reductions, cumulative, selection, views, shape,
            indexing, linalg, inplace, modes, diag_ops, math_ops, math_binary,
            aliases, composites, math_more, inplace_more, runtime, windows, tensor_info)  # (issue 34's coverage)
# issue 34 (torchfns): in-place variants and *_copy, order statistics, index writes, products, special, linalg
FAMILIES += (inplace_variants, selection_more, indexing_more, products, special_ops, linalg_more, misc_more,
             runtime_more, tensor_more)

# What `import gradviz as torch` offers at the top level: each family's __all__, its torch names.
__all__ = sorted({name for _m in FAMILIES for name in _m.__all__})

# Everything else the families hold too (F.sum_to, F.record, F._new, F._as_array), for code that
# reads the ops as one module (``from gradviz.ops import functions as F``): public to gradviz's
# own modules, not to a user's ``torch.`` namespace. Only each family's own ROWS table shares a
# name with another's, and nothing reads it through F.
for _m in FAMILIES:
    for _k, _v in vars(_m).items():
        if not _k.startswith("__") and not isinstance(_v, _ModuleType):
            globals().setdefault(_k, _v)
del _m, _k, _v
as_strided = _as_strided  # the op; ops/linalg.py imports the array function of that name (issue 34)
