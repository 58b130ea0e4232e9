"""The Tensor methods and operators: each bound to the op that implements it (ops import the
Tensor class; the class never imports ops, so gradviz.tensor stays below this package)."""

from __future__ import annotations

import sys
from typing import Any

from gradviz import _dtype
from gradviz.ops import aliases as _aliases
from gradviz.ops import composites as _composites
from gradviz.ops import functions as F
from gradviz.ops import indexing_more as _indexing_more
from gradviz.ops import inplace_more as _inplace_more
from gradviz.ops import inplace_variants as _inplace_variants
from gradviz.ops import linalg_more as _linalg_more
from gradviz.ops import math_binary as _math_binary
from gradviz.ops import math_more as _math_more
from gradviz.ops import math_ops as _math_ops
from gradviz.ops import misc_more as _misc_more
from gradviz.ops import products as _products
from gradviz.ops import runtime_more as _runtime_more
from gradviz.ops import selection_more as _selection_more
from gradviz.ops import special_ops as _special_ops
from gradviz.ops import tensor_info as _tensor_info
from gradviz.ops import tensor_more as _tensor_more
from gradviz.ops.core import regenerate_view_grad_fn
from gradviz.tensor import Tensor

_tensor_module = sys.modules[Tensor.__module__]  # gradviz.tensor, the module (the package's name is the function)


def _to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """to(dtype), to(device), to(device, dtype), to(other)."""
    dtype, device = kwargs.get("dtype"), kwargs.get("device")
    for arg in args:
        if isinstance(arg, _dtype.dtype):
            dtype = arg
        elif isinstance(arg, Tensor):
            dtype, device = arg.dtype, arg.device
        else:
            device = arg
    return F.to_copy(self, dtype, device)


def _type(self: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """t.type() is torch's type name ('torch.FloatTensor'); t.type(x) converts, x a dtype, a typed
    class (gradviz.LongTensor), torch.Tensor itself (the default dtype), or a full type name
    ('torch.LongTensor', 'torch.Tensor', 'torch.cuda.FloatTensor': to cuda); anything else is
    torch's ValueError "invalid type: '...'"."""
    if dtype is None:
        return f"torch.{_dtype.scalar_type_name(self.dtype)}Tensor"
    device = None
    if isinstance(dtype, str):
        name = dtype
        if name.startswith("torch.cuda."):
            device, name = "cuda", "torch." + name[len("torch.cuda."):]
        scalar = name[len("torch."):].removesuffix("Tensor") if name.startswith("torch.") and \
            name.endswith("Tensor") else None
        by_name = {v: k for k, v in _dtype._SCALAR_TYPE_NAMES.items()}
        if scalar == "":
            dtype = _dtype.get_default_dtype()
        elif scalar in by_name:
            dtype = getattr(_dtype, by_name[scalar].replace("bool", "bool_"))
        else:
            raise ValueError(f"invalid type: '{dtype}'")
    elif dtype is Tensor:
        dtype = _dtype.get_default_dtype()
    elif not isinstance(dtype, _dtype.dtype):
        typed = getattr(dtype, "dtype", None) if isinstance(dtype, type) else None
        if not isinstance(typed, _dtype.dtype) or issubclass(dtype, Tensor):
            raise ValueError(f"invalid type: '{getattr(dtype, '__name__', dtype)}'")
        device = "cuda" if getattr(dtype, "is_cuda", False) else None  # torch.cuda.FloatTensor and kin
        dtype = typed  # a typed class
    return F.to_copy(self, dtype, device)


def _eq(self: Tensor, other: Any) -> Any:
    # t == None is False (Python's identity fallback), as torch's; torch.eq(t, None) still raises
    return NotImplemented if other is None else F.eq(self, other)


def _ne(self: Tensor, other: Any) -> Any:
    return NotImplemented if other is None else F.ne(self, other)


def _max_method(self: Tensor, dim: Any = None, keepdim: bool = False, **kw: Any):
    return F.max(self, dim, keepdim, **kw)


def _min_method(self: Tensor, dim: Any = None, keepdim: bool = False, **kw: Any):
    return F.min(self, dim, keepdim, **kw)


def _T(self: Tensor) -> Tensor:  # noqa: N802 - torch's Tensor.T
    if self.ndim != 2:
        _tensor_module._warn_once(_tensor_module._T_DEPRECATED[self.ndim == 0])
    return F.permute(self, tuple(range(self.ndim - 1, -1, -1)))


def _mT(self: Tensor) -> Tensor:  # noqa: N802 - torch's Tensor.mT
    if self.ndim < 2:
        if self.ndim == 0:
            _tensor_module._warn_once(
                "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases."
            )
            return F.alias(self)
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor.")
    return F.transpose(self, -2, -1)


def _rsub(s: Tensor, o: Any) -> Tensor:
    return F.rsub(s, o) if not isinstance(o, Tensor) else F.sub(o, s)


def _rtruediv(s: Tensor, o: Any) -> Tensor:
    return F.rdiv(s, o) if not isinstance(o, Tensor) else F.div(o, s)


def _where(s: Tensor, condition: Tensor, other: Any) -> Tensor:
    return F.where(condition, s, other)


# Functions that are Tensor methods too in torch (the composites and math_more that are; existing
# ops torch also has as methods)
_TORCH_METHODS = (
    "addcdiv", "addcmul", "count_nonzero", "deg2rad", "diagonal", "exp2", "fmax", "fmin", "logaddexp2",
    "logical_xor", "nanmean", "nansum", "rad2deg", "tan", "vdot",
    "copysign", "diff", "float_power", "isneginf", "isposinf", "isreal", "masked_select", "signbit", "take",
    "ravel", "unflatten", "broadcast_to", "tensor_split", "hsplit", "vsplit", "dsplit",
    "fliplr", "flipud", "positive", "tile", "take_along_dim",
    "logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "isfinite", "diag",
    "diag_embed",
)


def bind() -> None:
    methods = {
        "__add__": F.add, "__radd__": lambda s, o: F.add(s, o), "__iadd__": F.add_,
        "__sub__": F.sub, "__rsub__": _rsub, "__isub__": F.sub_,
        "__mul__": F.mul, "__rmul__": lambda s, o: F.mul(s, o), "__imul__": F.mul_,
        "__truediv__": F.div, "__rtruediv__": _rtruediv, "__itruediv__": F.div_,
        "__pow__": F.pow, "__rpow__": lambda s, o: F._pow_base(o, s),
        "__matmul__": F.matmul, "__rmatmul__": lambda s, o: F.matmul(o, s),
        "__neg__": F.neg, "__abs__": F.abs, "__getitem__": F.getitem, "__setitem__": F.setitem,
        "__eq__": _eq, "__ne__": _ne, "__lt__": F.lt, "__le__": F.le, "__gt__": F.gt, "__ge__": F.ge,
        "__invert__": F.bitwise_not, "__and__": F.bitwise_and, "__or__": F.bitwise_or, "__xor__": F.bitwise_xor,
        "__rand__": F.bitwise_and, "__ror__": F.bitwise_or, "__rxor__": F.bitwise_xor,
        "add": F.add, "sub": F.sub, "mul": F.mul, "div": F.div, "pow": F.pow, "neg": F.neg, "matmul": F.matmul,
        "add_": F.add_, "sub_": F.sub_, "mul_": F.mul_, "div_": F.div_, "zero_": F.zero_, "fill_": F.fill_,
        "copy_": F.copy_,
        "abs": F.abs, "sqrt": F.sqrt, "exp": F.exp, "log": F.log, "log1p": F.log1p, "sin": F.sin,
        "cos": F.cos, "tanh": F.tanh, "sigmoid": F.sigmoid, "relu": F.relu, "clamp": F.clamp,
        "clip": F.clamp, "square": F.square, "reciprocal": F.reciprocal, "sign": F.sign, "sgn": F.sgn,
        "maximum": F.maximum, "minimum": F.minimum, "mm": F.mm, "mv": F.mv, "dot": F.dot, "bmm": F.bmm,
        "sum": F.sum, "mean": F.mean, "max": _max_method, "min": _min_method, "var": F.var, "std": F.std,
        "amax": F.amax, "amin": F.amin, "argmax": F.argmax, "argmin": F.argmin, "all": F.all, "any": F.any,
        "view_as": lambda s, o: F.view(s, o.shape), "reshape_as": lambda s, o: F.reshape(s, o.shape),
        "is_contiguous": lambda s: bool(s._data.flags["C_CONTIGUOUS"]),
        "type": _type,
        "softmax": F.softmax, "log_softmax": F.log_softmax, "reshape": F.reshape, "view": F.view,
        "flatten": F.flatten, "t": F.t, "transpose": F.transpose, "permute": F.permute,
        "movedim": F.movedim, "moveaxis": F.movedim,
        "unsqueeze": F.unsqueeze, "squeeze": F.squeeze, "expand": F.expand, "expand_as": F.expand_as,
        "split": F.split, "chunk": F.chunk, "select": F.select, "gather": F.gather, "scatter": F.scatter,
        "scatter_add": F.scatter_add, "masked_fill": F.masked_fill, "unbind": F.unbind, "clone": F.clone,
        "contiguous": F.contiguous, "to": _to, "eq": F.eq, "ne": F.ne, "lt": F.lt, "le": F.le,
        "gt": F.gt, "ge": F.ge, "isnan": F.isnan, "isinf": F.isinf, "logical_not": F.logical_not,
        "cpu": lambda s: F.to_copy(s, None, "cpu"), "cuda": lambda s, i=0: F.to_copy(s, None, f"cuda:{i}"),
        "double": lambda s: F.to_copy(s, _dtype.float64), "float": lambda s: F.to_copy(s, _dtype.float32),
        "long": lambda s: F.to_copy(s, _dtype.int64), "bool": lambda s: F.to_copy(s, _dtype.bool_),
        "to_dtype": lambda s, dt: F.to_copy(s, dt), "type_as": lambda s, o: F.to_copy(s, o.dtype),
        "allclose": F.allclose, "equal": F.equal,
        "T": property(_T), "mT": property(_mT),
        # issue 14's tensor surface
        "norm": F.norm, "prod": F.prod, "cumsum": F.cumsum, "cumprod": F.cumprod, "logsumexp": F.logsumexp,
        "repeat": F.repeat, "repeat_interleave": F.repeat_interleave, "narrow": F.narrow,
        "index_select": F.index_select, "index_add": F.index_add, "where": _where, "nonzero": F.nonzero,
        "argwhere": F.argwhere, "tril": F.tril, "triu": F.triu, "flip": F.flip, "roll": F.roll, "topk": F.topk,
        "sort": F.sort, "argsort": F.argsort, "msort": F.msort, "unique": F.unique,
        "relu_": F.relu_, "sigmoid_": F.sigmoid_, "tanh_": F.tanh_, "exp_": F.exp_, "sqrt_": F.sqrt_,
        "neg_": F.neg_, "clamp_": F.clamp_, "clip_": F.clip_, "clamp_min": F.clamp_min, "clamp_max": F.clamp_max,
        "clamp_min_": F.clamp_min_, "clamp_max_": F.clamp_max_, "masked_fill_": F.masked_fill_,
        "floor_divide": F.floor_divide, "remainder": F.remainder, "fmod": F.fmod,
        "__floordiv__": F.floor_divide, "__rfloordiv__": lambda s, o: F.floor_divide(o, s),
        "__mod__": F.remainder, "__rmod__": lambda s, o: F.remainder(o, s),
        "log10": F.log10, "log2": F.log2, "expm1": F.expm1, "rsqrt": F.rsqrt, "floor": F.floor, "ceil": F.ceil,
        "trunc": F.trunc, "round": F.round, "isclose": F.isclose, "addmm": F.addmm, "baddbmm": F.baddbmm,
        "nelement": lambda s: s.numel(), "new_tensor": F.new_tensor, "new_zeros": F.new_zeros,
        "new_ones": F.new_ones, "new_empty": F.new_empty, "new_full": F.new_full,
        "half": lambda s: F.to_copy(s, _dtype.float16), "bfloat16": lambda s: F.to_copy(s, _dtype.bfloat16),
        "int": lambda s: F.to_copy(s, _dtype.int32), "short": lambda s: F.to_copy(s, _dtype.int16),
        "char": lambda s: F.to_copy(s, _dtype.int8), "byte": lambda s: F.to_copy(s, _dtype.uint8),
        "element_size": lambda s: s.dtype.itemsize, "is_floating_point": lambda s: s.dtype.is_floating_point,
        "var_mean": F.var_mean, "std_mean": F.std_mean,
    }
    # the math families' ops are all Tensor methods too (torch.atan and Tensor.atan, ...)
    for name in (*_math_ops.__all__, *_math_ops.METHOD_ONLY, *_math_binary.__all__,
                 *_math_binary.METHOD_ONLY):
        methods.setdefault(name, getattr(_math_ops, name, None) or getattr(_math_binary, name))
    # torch's aliases, composites and more math as Tensor methods, and what a tensor says of itself
    # (gradviz/ops/aliases.py, composites.py, math_more.py, tensor_info.py)
    methods.update(_aliases.METHODS)
    for name in (*_TORCH_METHODS, *_composites.METHOD_ONLY, *_math_more.METHOD_ONLY, *_inplace_more.__all__,
                 *_inplace_more.METHOD_ONLY):
        methods.setdefault(name, getattr(F, name))
    methods.update(_tensor_info.METHODS)
    methods.update(_inplace_variants.METHODS)  # issue 34 (torchfns)
    methods.update({n: getattr(_selection_more, n) for n in _selection_more.METHOD_NAMES})
    methods.update(_indexing_more.METHODS)
    methods.update(_products.METHODS)
    methods.update(_special_ops.METHODS)
    methods.update(_linalg_more.METHODS)
    methods.update(_misc_more.METHODS)
    methods.update(_tensor_more.METHODS)
    methods.update(_runtime_more.METHODS)
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    Tensor.__hash__ = lambda self: id(self)  # __eq__ is elementwise, identity stays hashable
    # A stale view's history is rebuilt by the op layer (tensor.py cannot import it).
    _tensor_module._regenerate_view_grad_fn = regenerate_view_grad_fn
    # gradviz.autograd reads ones_like from gradviz.tensor (backward's default gradient); it lives
    # in ops.construction now, which the tensor module cannot import.
    _tensor_module.ones_like = F.ones_like
