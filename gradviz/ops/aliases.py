"""torch's aliases: another name for an op gradviz has, recording the same backward node (torch
resolves an alias to its op before autograd sees it: torch.absolute records AbsBackward0).

``FUNCTIONS`` are torch.<alias>, ``METHODS`` Tensor.<alias>; gradviz.ops.functions exports the
former, gradviz.ops.methods binds the latter.
"""

from __future__ import annotations

from gradviz.ops import arith as _arith
from gradviz.ops import inplace as _inplace
from gradviz.ops import linalg_solvers as _linalg_solvers
from gradviz.ops import math_binary as _math_binary
from gradviz.ops import math_ops as _math_ops
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import shape as _shape
from gradviz.ops import views as _views
from gradviz.ops.inplace_write import named_inplace

# alias -> the op (the same function object: one op, two names; an in-place alias wraps its op so
# that a recording names the write as the user called it, torch's recorder's name)
FUNCTIONS = {
    "absolute": _pointwise.abs, "arccos": _math_ops.acos, "arccosh": _math_ops.acosh, "arcsin": _math_ops.asin,
    "arcsinh": _math_ops.asinh, "arctan": _math_ops.atan, "arctan2": _math_binary.atan2, "arctanh": _math_ops.atanh,
    "arccos_": named_inplace("arccos_", _math_ops.acos_), "arccosh_": named_inplace("arccosh_", _math_ops.acosh_),
    "arcsin_": named_inplace("arcsin_", _math_ops.asin_), "arcsinh_": named_inplace("arcsinh_", _math_ops.asinh_),
    "arctan_": named_inplace("arctan_", _math_ops.atan_), "arctanh_": named_inplace("arctanh_", _math_ops.atanh_),
    "divide": _arith.div, "true_divide": _arith.div, "multiply": _arith.mul, "subtract": _arith.sub,
    "negative": _arith.neg, "negative_": named_inplace("negative_", _inplace.neg_),
    "greater": _pointwise.gt, "greater_equal": _pointwise.ge,
    "less": _pointwise.lt, "less_equal": _pointwise.le, "not_equal": _pointwise.ne, "fix": _pointwise.trunc,
    "swapaxes": _views.transpose, "swapdims": _views.transpose, "concatenate": _shape.cat,
    "ger": _math_binary.outer,
    # torch.det, torch.inverse, torch.matrix_power: linalg's ops under their old names
    "det": _linalg_solvers.det, "inverse": _linalg_solvers.inv, "matrix_power": _linalg_solvers.matrix_power,
}

# Tensor methods: the functions' aliases (torch has no Tensor.concatenate) and the in-place ones
METHODS = {
    **{k: v for k, v in FUNCTIONS.items() if k != "concatenate"},
    # in-place aliases report the name the user called (one version bump), as torch's recorder sees it
    "divide_": named_inplace("divide_", _inplace.div_), "true_divide_": named_inplace("true_divide_", _inplace.div_),
    "multiply_": named_inplace("multiply_", _inplace.mul_), "subtract_": named_inplace("subtract_", _inplace.sub_),
}

__all__ = sorted(FUNCTIONS)
globals().update(FUNCTIONS)
