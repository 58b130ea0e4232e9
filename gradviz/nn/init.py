"""torch.nn.init: fill tensors in place (no history), with torch's fans, gains and bounds.

Random fills go through the tensor's own ``uniform_``/``normal_`` when gradviz has them (the
torch-identical generator); until then they draw from gradviz's default generator. Either way
each function makes the same calls in the same order as torch's, so the numbers match torch's
once the generator does."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import no_grad
from gradviz.ops.inplace_write import named_inplace
from gradviz.random._api import randperm
from gradviz.tensor import Tensor

__all__ = [
    "calculate_gain", "constant_", "dirac_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
    "orthogonal_", "sparse_", "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
]


def _write(t: Tensor, data: Any) -> Tensor:
    """Overwrite t's elements in place (a version bump, as any in-place op)."""
    t._data[...] = data
    t._version_counter[0] += 1
    return t


def _draw_uniform(t: Tensor, a: float, b: float, generator: Any = None) -> Tensor:
    method = getattr(type(t), "uniform_", None)
    if method is not None:
        return t.uniform_(a, b, generator=generator) if generator is not None else t.uniform_(a, b)
    from gradviz.random import default_generator

    rng = (generator or default_generator).rng
    return _write(t, rng.uniform(a, b, t._data.shape).astype(t._data.dtype))


def _draw_normal(t: Tensor, mean: float, std: float, generator: Any = None) -> Tensor:
    method = getattr(type(t), "normal_", None)
    if method is not None:
        return t.normal_(mean, std, generator=generator) if generator is not None else t.normal_(mean, std)
    from gradviz.random import default_generator

    rng = (generator or default_generator).rng
    return _write(t, (rng.standard_normal(t._data.shape) * std + mean).astype(t._data.dtype))


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.shape[1]
    num_output_fmaps = tensor.shape[0]
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    with no_grad():
        return _draw_uniform(tensor, a, b, generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    with no_grad():
        return _draw_normal(tensor, mean, std, generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Any = None) -> Tensor:
    """torch 2.13's rejection sampling (the same draws in the same order, so the same numbers):
    normals redrawn where they fall outside [a, b] when most of the mass is inside, else uniform
    proposals in [a, b] accepted against the density."""
    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may be "
            "incorrect.",
            stacklevel=2,
        )
    with no_grad():
        p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        dt = tensor._data.dtype
        if p > 0.3:
            # most of the mass inside [a, b]: draw normals, redraw (every element, keeping only
            # the rejected ones) until all lie within the bounds, cast to the tensor's dtype
            lo, hi = np.asarray(a, dtype=dt).item(), np.asarray(b, dtype=dt).item()
            _draw_normal(tensor, mean, std, generator)
            result = tensor._data.copy()
            while True:
                mask = (result < lo) | (result > hi)
                if not mask.any():
                    break
                fresh = _draw_normal(tensor.new_empty(tensor.shape), mean, std, generator)._data
                result = np.where(mask, fresh, result)
            return _write(tensor, result)
        # a thin slice of the normal: uniform proposals in [a, b], each accepted with probability
        # pdf / pdf(mode) (a second uniform), the rejected ones redrawn together
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2

        def log_ratio(x: np.ndarray) -> np.ndarray:
            return (((x - dt.type(mean)) / dt.type(std)) ** 2 * dt.type(-0.5) - dt.type(log_peak)).astype(dt)

        def rejected(log_pdf: np.ndarray) -> np.ndarray:
            u = _draw_uniform(tensor.new_empty(tensor.shape), 0.0, 1.0, generator)._data
            return np.log(u) > log_pdf

        _draw_uniform(tensor, a, b, generator)
        result = tensor._data.copy()
        pending = rejected(log_ratio(result))
        while pending.any():
            cand = _draw_uniform(tensor.new_empty(tensor.shape), a, b, generator)._data
            result = np.where(pending, cand, result)
            pending = np.where(pending, rejected(log_ratio(cand)), pending)
        return _write(tensor, result)


def _erfinv(y: np.ndarray) -> np.ndarray:
    """The inverse error function: scipy's when scipy is there, else Winitzki's approximation
    polished by Newton steps on math.erf (scipy is optional)."""
    try:
        from scipy.special import erfinv
    except ImportError:  # pragma: no cover - exercised where scipy is missing
        y = np.asarray(y, dtype=np.float64)
        a = 0.147
        ln = np.log1p(-y * y)
        t = 2 / (math.pi * a) + ln / 2
        x = np.sign(y) * np.sqrt(np.sqrt(t * t - ln / a) - t)
        erf = np.frompyfunc(math.erf, 1, 1)
        for _ in range(3):
            x = x - (erf(x).astype(np.float64) - y) / (2 / math.sqrt(math.pi) * np.exp(-x * x))
        return x
    return erfinv(y)


def constant_(tensor: Tensor, val: float) -> Tensor:
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    with no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor: Tensor) -> Tensor:
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return _write(tensor, np.eye(*tensor._data.shape, dtype=tensor._data.dtype))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Ones at the centre of each kernel, input channel i to output channel i within each group
    (the identity a convolution can start as); 3 to 5 dims, as torch's."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor._data.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    data = np.zeros(sizes, dtype=tensor._data.dtype)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            data[(g * out_per_group + d, d, *centre)] = 1
    with no_grad():
        return _write(tensor, data)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    with no_grad():
        return _draw_uniform(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    with no_grad():
        return _draw_normal(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Any = None) -> Tensor:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    with no_grad():
        return _draw_uniform(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Any = None) -> Tensor:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    with no_grad():
        return _draw_normal(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Any = None) -> Tensor:
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    from gradviz.ops.construction import empty

    flattened = _draw_normal(empty(rows, cols, dtype=tensor.dtype), 0.0, 1.0, generator)._data
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with no_grad():
        return _write(tensor, (q * gain).reshape(tensor._data.shape))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """torch's sparse_: normal draws, then in each column ceil(sparsity * rows) rows (a randperm's
    first ones, drawn column by column as torch draws them) set to zero."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        _draw_normal(tensor, 0.0, std, generator)
        for col in range(cols):
            zero_rows = randperm(rows)._data[:num_zeros]
            tensor._data[zero_rows, col] = 0
    return tensor


# torch's deprecated spellings without the trailing underscore
# Each fill is one step of the user's program, one version bump named as torch's recorder names
# it (the user's call), whatever draws and writes it makes inside.
for _name in __all__:
    if _name.endswith("_"):
        globals()[_name] = named_inplace(_name, globals()[_name])

uniform = uniform_
normal = normal_
constant = constant_
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
orthogonal = orthogonal_
eye = eye_
dirac = dirac_
sparse = sparse_


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
