"""torch's random functions and Tensor methods over the torch-identical generator.

Each one draws what torch's CPU kernel draws, through ``_dists``, and writes it into a gradviz
tensor. Tensors on other devices get the CPU stream's values moved there (torch's CUDA generator
is a different algorithm, Philox, which gradviz does not reproduce).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.device import as_device, to_device_array
from gradviz.ops.core import AUTO_ELEMENT_WISE, Derivative, node_class, record
from gradviz.ops.inplace_write import InplaceWrite
from gradviz.random import _dists as D
from gradviz.random._generator import Generator, resolve
from gradviz.tensor import Tensor, make_tensor

_TWO_INPUTS = ("NormalBackward3", "BernoulliBackward1")  # (self or mean, p or std)
_FROM_INPUT = ("NormalBackward1", "NormalBackward2", "BernoulliBackward0")  # out-of-place: input's shape
_IN_PLACE = ("UniformBackward0", "NormalBackward0", "BernoulliBackward2", "ExponentialBackward0", "RandomBackward0",
             "RandomBackward1", "RandomBackward2", "CauchyBackward0", "LogNormalBackward0", "GeometricBackward0")


def _zeros(n: Any, g: Tensor) -> Tensor:
    from gradviz.ops.functions import zeros_for

    return zeros_for(g.shape, g.dtype, g.device)


# Every input of a random op gets a zero gradient (torch's derivatives.yaml rows for them).
# One class per name: node_class makes one per row.
_NODES = {name: node_class(Derivative(name, (_zeros,), forward=AUTO_ELEMENT_WISE))
          for name in _IN_PLACE}
_NODES.update({name: node_class(Derivative(name, (_zeros, _zeros), reduce_broadcast=True, forward=AUTO_ELEMENT_WISE))
               for name in _TWO_INPUTS})
_NODES.update({name: node_class(Derivative(name, (_zeros,), reduce_broadcast=True, forward=AUTO_ELEMENT_WISE))
               for name in _FROM_INPUT})


# -- shapes, dtypes, output ----------------------------------------------------------------------
def _size(args: tuple, size: Any) -> tuple[int, ...]:
    if size is not None:
        if args:
            raise TypeError("size given both as positional arguments and as size=")
        args = (size,)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    shape = tuple(int(s) for s in args)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    return shape


def default_float() -> _dtype.dtype:
    """The default floating dtype (torch.get_default_dtype), where gradviz has one."""
    get = getattr(_dtype, "get_default_dtype", None)
    return get() if callable(get) else _dtype.float32


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _new(arr: np.ndarray, dtype: _dtype.dtype, device: Any, requires_grad: bool) -> Tensor:
    dev = as_device(device)
    return make_tensor(to_device_array(np.asarray(arr, dtype=dtype.np, order="C"), dev), dev,
                       requires_grad)


def _g(x: float) -> str:
    """A number as torch's messages print a double (C++ stream output: %g)."""
    return f"{float(x):g}"


def _check_float(dtype: _dtype.dtype, fn: str) -> None:
    if not dtype.is_floating_point:
        raise RuntimeError(f"\"{fn}\" not implemented for '{_dtype.scalar_type_name(dtype)}'")


# -- writing into a tensor, as torch's in-place random ops --------------------------------------
def _memory_order(arr: np.ndarray) -> tuple[int, ...]:
    """Axes from slowest to fastest in memory: torch's serial kernels fill a tensor in the order
    its elements lie in memory, so a transposed tensor gets its values in its base's order."""
    return tuple(sorted(range(arr.ndim), key=lambda a: (-builtins.abs(arr.strides[a]), a)))


def _is_contiguous(t: Tensor) -> bool:
    d = t._data
    return bool(getattr(d, "flags", None) is None or d.flags.c_contiguous)


def _write(t: Tensor, fill, name: str, extra: tuple[Tensor, ...] = (), *, op: str) -> Tensor:
    """Run ``fill(n, order)`` (which draws n values in memory order) into t in place, recording
    torch's node ``name`` when grad mode and requires_grad ask for one; ``op``: the draw's name."""
    w = InplaceWrite(t, extra)
    host = np.asarray(t._data) if isinstance(t._data, np.ndarray) else np.asarray(t._data.get())
    order = _memory_order(host) if host.ndim else ()
    view = host.transpose(order) if order else host
    vals = fill(view.size, order)
    out = vals.reshape(view.shape)
    if isinstance(t._data, np.ndarray):
        t._data.transpose(order)[...] = out
    else:  # a device array: write the values in the tensor's own order there
        inv = np.argsort(order) if order else ()
        t._data[...] = to_device_array(np.asarray(out.transpose(inv), order="C").astype(host.dtype), t.device)
    return w.done(_NODES[name], extra, {}, op=op)


def uniform_(self: Tensor, from_: float = 0, to: float = 1, *, generator: Generator | None = None,
             **kw: Any) -> Tensor:
    from_ = kw.pop("from", from_)
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(from_)} > to={_g(to)}")
    _check_float(self.dtype, "uniform_kernel_cpu")
    g = resolve(generator)
    return _write(self, lambda n, o: D.uniform(g, n, self.dtype.np, from_, to), "UniformBackward0", op="uniform_")


def normal_(self: Tensor, mean: float = 0, std: float = 1, *, generator: Generator | None = None) -> Tensor:
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
    _check_float(self.dtype, "normal_kernel_cpu")
    g = resolve(generator)
    contig = _is_contiguous(self)
    return _write(self, lambda n, o: D.normal(g, n, self.dtype.np, mean, std, contig), "NormalBackward0", op="normal_")


def random_(self: Tensor, from_: int | None = None, to: int | None = None, *,
            generator: Generator | None = None, **kw: Any) -> Tensor:
    from_ = kw.pop("from", from_)
    g = resolve(generator)
    if from_ is None and to is None:
        return _write(self, lambda n, o: D.random_full(g, n, self.dtype.np), "RandomBackward2", op="random_")
    if to is None:
        from_, to, name = 0, from_, "RandomBackward1"
    else:
        name = "RandomBackward0"
    from_, to = _checked_bounds(int(from_), int(to), self.dtype)
    return _write(self, lambda n, o: D.random_from_to(g, n, from_, to, self.dtype.np), name, op="random_")


_DIGITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}
_CPP = {"float64": "double", "float32": "float", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def _checked_bounds(from_: int, to: int, dtype: _dtype.dtype) -> tuple[int, int]:
    """random_'s checks and, for floating dtypes, torch's bounds moved to representable values
    (with its warning when the range is wider than the dtype holds exactly)."""
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    if not dtype.is_floating_point:
        return from_, to
    digits = _DIGITS[dtype.name]
    from_, to = D.float_bounds(from_, to, digits)
    if from_ >= to:
        raise RuntimeError(
            "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got "
            f"from={from_} >= to={to}"
        )
    lim = 1 << digits
    import warnings

    for name, v in (("from", from_), ("to - 1", to - 1)):
        if not -lim <= v <= lim:
            warnings.warn(
                f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations {_CPP[dtype.name]} "
                "can support discrete uniform distribution only within this range. This warning will become an error "
                "in version 1.7 release, please fix the code in advance", UserWarning, stacklevel=3,
            )
    return from_, to


def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Generator | None = None) -> Tensor:
    g = resolve(generator)
    if isinstance(p, Tensor):
        parr = np.broadcast_to(np.asarray(p._data if isinstance(p._data, np.ndarray) else p._data.get()),
                               self.shape)

        def fill(n: int, order: tuple) -> np.ndarray:
            return D.bernoulli_tensor(g, parr.transpose(order) if order else parr).ravel()

        return _write(self, fill, "BernoulliBackward1", (p,) if p.requires_grad else (), op="bernoulli_")
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
    return _write(self, lambda n, o: D.bernoulli_scalar(g, n, p), "BernoulliBackward2", op="bernoulli_")


def exponential_(self: Tensor, lambd: float = 1, *, generator: Generator | None = None) -> Tensor:
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    _check_float(self.dtype, "exponential_cpu")
    g = resolve(generator)
    return _write(self, lambda n, o: D.exponential(g, n, lambd, self.dtype.np), "ExponentialBackward0",
                  op="exponential_")


def cauchy_(self: Tensor, median: float = 0, sigma: float = 1, *, generator: Generator | None = None) -> Tensor:
    g = resolve(generator)
    return _write(self, lambda n, o: D.cauchy(g, n, median, sigma, self.dtype.np), "CauchyBackward0", op="cauchy_")


def log_normal_(self: Tensor, mean: float = 1, std: float = 2, *, generator: Generator | None = None) -> Tensor:
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
    g = resolve(generator)
    return _write(self, lambda n, o: D.log_normal(g, n, mean, std, self.dtype.np), "LogNormalBackward0",
                  op="log_normal_")


def geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
    g = resolve(generator)
    return _write(self, lambda n, o: D.geometric(g, n, p, self.dtype.np), "GeometricBackward0", op="geometric_")


# -- factories ------------------------------------------------------------------------------------
def _factory(args: tuple, size: Any, dtype: Any, device: Any, requires_grad: bool, fill, float_only: str = "",
             out: Tensor | None = None, default: _dtype.dtype | None = None) -> Tensor:
    shape = _size(args, size)
    dt = dtype or (out.dtype if out is not None else None) or default or default_float()
    if float_only:
        _check_float(dt, float_only)
    arr = fill(_numel(shape), dt).reshape(shape)
    if out is not None:
        out._data[...] = to_device_array(arr.astype(out._data.dtype), out.device)
        out._version_counter[0] += 1
        return out
    return _new(arr, dt, device, requires_grad)


def rand(*size: Any, generator: Generator | None = None, out: Tensor | None = None, dtype: Any = None,
         layout: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False,
         **kw: Any) -> Tensor:
    g = resolve(generator)
    return _factory(size, kw.pop("size", None), dtype, device, requires_grad,
                    lambda n, dt: D.uniform(g, n, dt.np, 0, 1), "check_uniform_bounds", out)


def randn(*size: Any, generator: Generator | None = None, out: Tensor | None = None, dtype: Any = None,
          layout: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False,
          **kw: Any) -> Tensor:
    g = resolve(generator)
    return _factory(size, kw.pop("size", None), dtype, device, requires_grad,
                    lambda n, dt: D.normal(g, n, dt.np), "normal_kernel_cpu", out)


def randint(*args: Any, generator: Generator | None = None, out: Tensor | None = None, dtype: Any = None,
            layout: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False,
            **kw: Any) -> Tensor:
    """randint(high, size) or randint(low, high, size); low=, high=, size= as keywords too."""
    low, high, size = kw.pop("low", None), kw.pop("high", None), kw.pop("size", None)
    rest = list(args)
    if size is None and rest and isinstance(rest[-1], (tuple, list)):
        size = rest.pop()
    if len(rest) == 2:
        low, high = rest
    elif len(rest) == 1:
        if high is None:
            high = rest[0]
        else:
            low = rest[0]
    if low is None:
        low = 0
    if high is None or size is None:
        raise TypeError("randint() missing required arguments: high and size")
    low, high = _checked_bounds(int(low), int(high), dtype or (out.dtype if out is not None else _dtype.int64))
    g = resolve(generator)
    return _factory((), size, dtype, device, requires_grad,
                    lambda n, dt: D.random_from_to(g, n, low, high, dt.np), out=out, default=_dtype.int64)


def randperm(n: int, *, generator: Generator | None = None, out: Tensor | None = None, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False,
             pin_memory: bool = False) -> Tensor:
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    g = resolve(generator)
    return _factory((n,), None, dtype, device, requires_grad, lambda k, dt: D.randperm(g, n), out=out,
                    default=_dtype.int64)


def _like(input: Tensor, dtype: Any, device: Any) -> tuple[_dtype.dtype, Any]:
    return dtype or input.dtype, device if device is not None else input.device


def rand_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = None, generator: Generator | None = None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return rand(tuple(input.shape), generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
               requires_grad: bool = False, memory_format: Any = None, generator: Generator | None = None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return randn(tuple(input.shape), generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)


def randint_like(input: Tensor, *args: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                 requires_grad: bool = False, memory_format: Any = None, generator: Generator | None = None,
                 **kw: Any) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return randint(*args, tuple(input.shape), generator=generator, dtype=dt, device=dev, requires_grad=requires_grad,
                   **kw)


# -- normal, bernoulli, multinomial -------------------------------------------------------------------
def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           out: Tensor | None = None, dtype: Any = None, layout: Any = None, device: Any = None,
           requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """All of torch.normal's overloads: (float, float, size), (Tensor, float), (float, Tensor),
    (Tensor, Tensor). The tensor ones draw standard normals (or normals of std, for a number std)
    and then scale and shift them, as torch's kernels do; their gradients are zeros."""
    g = resolve(generator)
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: a size is needed for "
                            "number mean and std")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
        return _factory((), size, dtype, device, requires_grad, lambda n, dt: D.normal(g, n, dt.np, mean, std),
                        "normal_kernel_cpu", out)
    from gradviz.ops import functions as F

    if mt and not st:
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
        z = Tensor(D.normal(g, mean.numel(), mean.dtype.np, 0.0, std).reshape(tuple(mean.shape)), mean.device)
        with _no_grad():
            res = F.add(z, mean)
        return _differentiable(res, "NormalBackward1", (mean,))
    if st and bool((std._data < 0).any()):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    base = std if not mt else mean
    shape = tuple(np.broadcast_shapes(tuple(mean.shape), tuple(std.shape))) if mt else tuple(std.shape)
    z = Tensor(D.normal(g, _numel(shape), base.dtype.np).reshape(shape), base.device)
    with _no_grad():
        res = F.add(F.mul(z, std), mean)
    if mt:
        return _differentiable(res, "NormalBackward3", (mean, std))
    return _differentiable(res, "NormalBackward2", (std,))


def _no_grad():
    from gradviz.autograd import no_grad

    return no_grad()


def _differentiable(res: Tensor, name: str, inputs: tuple[Tensor, ...]) -> Tensor:
    """Give an out-of-place random result torch's node (zero gradients for its inputs)."""
    if _grad_state.enabled and builtins.any(t._tracked for t in inputs):
        record(_NODES[name], inputs, [res], {})
    return res


def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None,
              out: Tensor | None = None) -> Tensor:
    """torch.bernoulli(input): each element 1 with the probability input holds; with a number p,
    every element with probability p (input gives only the shape and dtype)."""
    g = resolve(generator)
    res = Tensor(np.zeros(tuple(input.shape), dtype=input._data.dtype), input.device)
    if p is not None:
        with _no_grad():
            bernoulli_(res, p, generator=g)
        return res
    parr = np.asarray(input._data)
    if parr.size and not bool(((parr >= 0) & (parr <= 1)).all()):
        raise RuntimeError(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  "
            "If so, please report an enhancement request to PyTorch.)"
        )
    with _no_grad():
        bernoulli_(res, Tensor(parr, input.device), generator=g)
    return _differentiable(res, "BernoulliBackward0", (input,))


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None, out: Tensor | None = None) -> Tensor:
    """torch.multinomial: with replacement (and more than one sample), a binary search of each
    row's normalised cumulative sums for 53-bit uniforms; otherwise the exponential trick
    (argmax or topk of p / Exp(1) noise)."""
    g = resolve(generator)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {_dtype.scalar_type_name(input.dtype)}"
        )
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    n = int(num_samples)
    ncat = input.shape[-1]
    if not replacement and n > ncat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if ncat > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    p = np.asarray(input._data)
    rows = p.reshape(-1, ncat)
    if not replacement or n == 1:
        if not bool((rows < np.inf).all() and (rows >= 0).all()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if bool((rows.sum(axis=1) == 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        q = D.exponential(g, rows.size, 1.0, rows.dtype).reshape(rows.shape)
        q = rows / q
        if n == 1:
            idx = np.argmax(q, axis=1)[:, None]
        else:
            # topk: descending values; equal values keep the lower index first
            idx = np.argsort(-q, axis=1, kind="stable")[:, :n]
    else:
        idx = D.multinomial_with_replacement(g, rows, n)
    res = idx.reshape(tuple(input.shape[:-1]) + (n,)).astype(np.int64)
    if out is not None:
        out._data[...] = res
        return out
    return _new(res, _dtype.int64, input.device, False)


def dropout_noise(input: Tensor, p: float, feature: bool = False) -> Tensor:
    """The scaled mask torch's CPU dropout multiplies by, for 0 < p < 1 (torch returns the input
    itself for p == 0): ``empty_like(input).bernoulli_(1 - p)`` divided by ``1 - p``; for feature
    dropout, one draw per (N, C) channel, shaped to broadcast. nn.functional.dropout can use it
    to give torch's masks draw for draw."""
    if feature:
        shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if input.ndim > 1 else tuple(input.shape)
    else:
        shape = tuple(input.shape)
    noise = Tensor(np.zeros(shape, dtype=input._data.dtype), input.device)
    if p == 1:  # torch multiplies by zeros without a draw
        return noise
    with _no_grad():
        bernoulli_(noise, 1 - p)
    noise._data[...] = noise._data / noise._data.dtype.type(1 - p)
    return noise
