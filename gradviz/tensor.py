"""Tensor: an array (numpy, or cupy on cuda devices) plus what autograd needs to know about it."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import gradviz.autograd as _autograd
from gradviz import _dtype
from gradviz._dtype import dtype as DType
from gradviz._sparse_coo import SparseCOO
from gradviz.autograd import forward_events as _forward
from gradviz.autograd import grad_mode
from gradviz.autograd import graph as _graph
from gradviz.autograd.forward_state import FORWARD_ONLY as _FORWARD_ONLY
from gradviz.autograd.graph import Node, RemovableHandle, grad_accumulator
from gradviz.device import CPU, as_device, to_device_array
from gradviz.device import device as Device

_tensor_ids = itertools.count(1)


class Size(tuple):
    """A tensor's shape; prints as torch.Size does."""

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"  # torch's spelling: a torch script prints the same

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n


class _VersionSnapshot(int):
    """The int torch's ``Tensor._version`` returns. Code written against the old list-valued
    ``_version`` (``t._version[0]``, ``t._version[0] += 1``) still reads and bumps the shared
    counter through indexing; new code uses ``_version_counter``."""

    _counter: list[int]

    def __new__(cls, counter: list[int]) -> _VersionSnapshot:
        snap = super().__new__(cls, counter[0])
        snap._counter = counter
        return snap

    def __getitem__(self, i: int) -> int:
        return self._counter[i]

    def __setitem__(self, i: int, value: int) -> None:
        self._counter[i] = value


class Tensor:
    """An n-dimensional array that can record the operations applied to it."""

    # Fields most tensors never set are class-level defaults; a tensor that sets one keeps it in
    # its __dict__ (made only then, as torch tensors have one): every op's output writes nine
    # slots instead of seventeen.
    __slots__ = (
        "_data", "_requires_grad", "_grad_fn", "_output_nr", "_version_counter", "_id", "dtype", "device",
        "_base", "__dict__", "__weakref__",
    )
    _grad: Tensor | None = None
    _grad_accumulator: Any = None
    _retains_grad: bool = False
    name: str | None = None
    _hooks: dict | None = None
    _post_accumulate_grad_hooks: dict | None = None  # gradviz.autograd.graph_hooks
    # For a view: the version its grad_fn was made at. When the base or another view of it has
    # been changed in place since, the view's history is stale and grad_fn makes a new one
    # (AsStridedBackward0 of the base), as torch's view + in-place handling does.
    _view_version: int = 0
    # A view made in no_grad mode of a tensor that requires grad (torch's CreationMeta::NO_GRAD_MODE).
    _view_no_grad: bool = False
    # Forward-mode AD: the tangent at the current dual level (gradviz/autograd/forward_state.py).
    _fw_grad: Tensor | None = None

    __array_priority__ = 1000  # numpy scalars on the left defer to our reflected operators

    def __init__(self, *args: Any, device: Any = None, requires_grad: bool = False):
        data = args[0] if args else None
        if len(args) != 2 or not isinstance(args[1], Device) or not (
            hasattr(data, "__array_interface__") or hasattr(data, "__cuda_array_interface__")
        ):
            # torch's legacy constructor: Tensor(list), Tensor(ndarray) (in the default dtype, whatever
            # the array's), Tensor(sizes...), Tensor(tensor), Tensor(). Tensor(array, device) is ours.
            _legacy_init(self, _dtype._default[0], args, device)
            return
        device = args[1]
        dt = _dtype.from_numpy_dtype(data.dtype)
        if dt.np != data.dtype:  # a numpy type torch lacks (uint32, float128): held as the nearest one
            data = data.astype(dt.np)
        self._data = data
        self.dtype: DType = dt
        self.device: Device = device
        self._requires_grad = requires_grad
        self._grad_fn: Node | None = None
        self._output_nr = 0
        # Shared with views of this tensor: an in-place change to either bumps both.
        self._version_counter: list[int] = [0]
        self._id = next(_tensor_ids)
        self._base: Tensor | None = None

    @classmethod
    def _wrap(cls, data: Any, dtype: DType, device: Device) -> Tensor:
        """A new tensor over ``data`` whose gradviz dtype the caller knows (ops' hot path)."""
        t = object.__new__(cls)
        t._data = data
        t.dtype = dtype
        t.device = device
        t._requires_grad = False
        t._grad_fn = None
        t._output_nr = 0
        t._version_counter = [0]
        t._id = next(_tensor_ids)
        t._base = None
        return t

    # No __getattr__ (it would unspecialise every attribute read of every tensor): the torch members
    # gradviz lacks are MissingMember descriptors (gradviz/_missing.py, put on by gradviz/_api.py).

    # -- basic properties
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Size | int:
        if dim is None:
            return self.shape
        n = self._data.ndim
        if n == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        if not -n <= dim < n:  # torch's range error, not a tuple's
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
        return self._data.shape[dim]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    @property
    def grad_fn(self) -> Node | None:
        if self._base is not None and self._view_version != self._version_counter[0]:
            _regenerate_view_grad_fn(self)
        fn = self._grad_fn
        return None if fn is _FORWARD_ONLY else fn

    @grad_fn.setter
    def grad_fn(self, fn: Node | None) -> None:
        self._grad_fn = fn

    @property
    def grad(self) -> Tensor | None:
        g = self._grad
        if g is None and self._grad_fn is not None and not self._retains_grad:
            # torch's warning: a non-leaf's .grad stays None unless retain_grad() asked for it
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
            if _forward.engine.probe is not None:
                _forward.non_leaf_grad_read(self)
        return g

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and (
            type(value) is not Tensor or value.dtype is not self.dtype or value._data.shape != self._data.shape
        ):
            _check_grad_assignment(self, value)
        if value is None and self._grad is not None and _forward.engine.probe is not None:
            _forward.grad_reset(self, "none")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        # No regeneration of a stale view's history here (torch's requires_grad doesn't either).
        # A dual tensor's is its primal's: forward AD's stand-in history is no reason.
        if self._requires_grad:
            return True
        fn = self._grad_fn
        base = self._base
        return (fn is not None and fn is not _FORWARD_ONLY) or (base is not None and base.requires_grad)

    @property
    def _tracked(self) -> bool:
        """Whether an op on this tensor reaches record(): it requires grad, or it has a tangent at
        the live dual level (then, where its primal needs no gradient, it carries forward AD's
        stand-in history: gradviz/autograd/forward_state.py). The ops' question, as torch's
        generated code asks requires_grad and isFwGradDefined."""
        if self._requires_grad or self._grad_fn is not None or self._fw_grad is not None:
            return True
        base = self._base
        return base is not None and base._tracked

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and self.grad_fn is None and not self.dtype.is_floating_point:
            # torch words this one differently from requires_grad_()'s
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a "
                    "computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach()."
                )
            return self
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = bool(requires_grad)
        if requires_grad:
            from gradviz.autograd.engine import get_default_engine

            probe = get_default_engine().probe
            if probe is not None:
                probe.tensor_created(self)
        return self

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_xpu(self) -> bool:
        # gradviz has no XPU device; programs test it beside is_cuda (pytorch/examples' dcgan)
        return False

    @property
    def _version_nr(self) -> int:
        return self._version_counter[0]

    @property
    def _version(self) -> _VersionSnapshot:
        """The version now, an int as torch's ``_version``."""
        return _VersionSnapshot(self._version_counter)

    @property
    def data(self) -> Tensor:
        # the storage without the version counter: changes through .data go unnoticed by
        # autograd, as torch's (that is what sets .data apart from detach())
        out = Tensor._wrap(self._data, self.dtype, self.device)
        if _forward.engine.probe is not None:
            _forward.detach("data", self, out)
        return out

    @data.setter
    def data(self, value: Tensor) -> None:
        # torch's set_data: this tensor now holds value's array (shape and dtype too), keeping
        # its own autograd identity (grad_fn, requires_grad, version counter)
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self.requires_grad and not value.dtype.is_floating_point:
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        self._data = value._data
        self.dtype = value.dtype
        self.device = value.device

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    # -- conversion
    def numpy(self) -> np.ndarray:
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
            )
        if self.device.type == "cuda":
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        data = self._data
        if type(data) is SparseCOO:
            raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")
        if _forward.engine.probe is not None:
            _forward.detach("numpy", self, None)
        return data

    def item(self) -> float | int | bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        if _forward.engine.probe is not None:
            _forward.detach("item", self, None)
        return self._data.reshape(()).item()

    def _scalar(self) -> float | int | bool:
        # float(t), int(t): torch's Python-level error, not item()'s
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self._data.reshape(()).item()

    def tolist(self) -> Any:
        if _forward.engine.probe is not None:
            _forward.detach("tolist", self, None)
        return to_device_array(self._data, CPU).tolist()

    def __float__(self) -> float:
        if self.requires_grad:
            _warn_once(_TO_SCALAR_WARNING)
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __bool__(self) -> bool:
        if self._data.size == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __index__(self) -> int:
        if self.dtype is not _dtype.int64 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = to_device_array(self._data, CPU)
        return arr if dtype is None else arr.astype(dtype)

    # -- autograd API
    def detach(self) -> Tensor:
        """A tensor sharing storage and version counter, cut from the graph."""
        t = Tensor._wrap(self._data, self.dtype, self.device)
        t._version_counter = self._version_counter
        if _forward.engine.probe is not None:
            _forward.detach("detach", self, t)
        return t

    def detach_(self) -> Tensor:
        if self._base is not None:
            # a view's history is its base's: torch refuses to cut it in place
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) "
                "for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and "
                "hence detach_() cannot be called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            )
        self.grad_fn = None
        self._requires_grad = False
        return self

    def retain_grad(self) -> None:
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self._retains_grad:
            return
        self._retains_grad = True
        import weakref

        ref = weakref.ref(self)

        def retain_grad_hook(grad: Tensor | None) -> Tensor | None:
            t = ref()
            if t is None or grad is None:
                return grad
            if t.grad is None:
                t.grad = grad.clone() if grad_mode.is_grad_enabled() else grad.detach().clone()
            else:
                t.grad = t.grad + grad
            return grad

        fn = self.grad_fn
        if fn._retains_grad_hooks is None:
            fn._retains_grad_hooks = {}
        fn._retains_grad_hooks[self._output_nr] = retain_grad_hook

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new one."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._register_tensor_pre_hook(self._output_nr, hook)
        return grad_accumulator(self)._register_tensor_pre_hook(0, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Call ``hook(tensor)`` on this leaf after its ``.grad`` has been accumulated."""
        from gradviz.autograd.graph_hooks import register_post_accumulate_grad_hook

        return register_post_accumulate_grad_hook(self, hook)

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Sequence[Tensor] | Tensor | None = None,
    ) -> None:
        if gradient is None and inputs is None:
            # The engine runs from this frame (autograd.backward's one-output path without its
            # frame): a nested backward level spends one Python frame less.
            _autograd.get_default_engine().execute(*_autograd._one_root(self, retain_graph, create_graph))
        else:
            _autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # -- printing
    def __repr__(self) -> str:
        from gradviz._format import format_tensor

        return format_tensor(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        # torch's: a 0-dim tensor formats as its number (f"{loss}" prints 0.25, not tensor(0.2500));
        # any other takes no format spec
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return str(self)


# Set by gradviz.ops when it binds Tensor's methods (this module cannot import the ops, which
# import it): makes a stale view's history anew (AsStridedBackward0 of its base).
_regenerate_view_grad_fn: Callable[[Tensor], None] = lambda t: None  # noqa: E731 - replaced by gradviz.ops

# Tensor.T and .mT are bound by gradviz.ops; their one-time warnings are here.
_T_DEPRECATED = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it will throw an "
    "error in a future release. Consider `x.mT` to transpose batches of matrices or "
    "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
    "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
)
_warned: set[str] = set()
# torch 2.13's TORCH_WARN_ONCE in float(t) (python_variable_methods.cpp), its "Triggered
# internally at ..." suffix, which names torch's own source line, left out
_TO_SCALAR_WARNING = ("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                      "Consider using tensor.detach() first.")


def _warn_once(message: str) -> None:
    """A UserWarning given once per process, as torch's TORCH_WARN_ONCE."""
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)


def _check_grad_assignment(t: Tensor, value: Any) -> None:
    """torch's checks on ``t.grad = value`` (off the fast path: only a value that is not a plain
    tensor of t's dtype and shape gets here)."""
    if not isinstance(value, Tensor):
        raise TypeError(
            f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
        )
    if value.dtype is not t.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{_dtype.cpp_type_name(value.dtype)}' to a tensor with "
            f"grad_dtype '{_dtype.scalar_type_name(t.dtype)}'. The gradient must match the tensor's grad_dtype "
            "(defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific dtype, "
            "or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its "
            "gradient may break downstream systems that assume they match."
        )
    if value._data.shape != t._data.shape:
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size '{list(t.shape)}'. "
            "Please ensure that the gradient and the tensor are the same size"
        )


# AccumulateGrad's stolen .grad is Tensor.detach() inline (graph.py cannot import this module).
_graph._wrap_tensor = Tensor._wrap


def _legacy_init(t: Tensor, dt: DType, args: tuple, device: Any) -> None:
    """torch.Tensor(...) and the typed FloatTensor(...): a list's values in ``dt``, a tensor's
    storage itself (of that dtype only), or the sizes (torch leaves the memory uninitialized:
    zeros here)."""

    dev = as_device(device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        if src.dtype is not dt:
            opts = ("TensorOptions(dtype={}, device=cpu, layout=Strided, requires_grad=false (default), "
                    "pinned_memory=false (default), memory_format=(nullopt))")
            raise TypeError(f"expected {opts.format(_dtype.cpp_type_name(dt))} (got "
                            f"{opts.format(_dtype.cpp_type_name(src.dtype))})")
        arr = src._data
    elif len(args) == 1 and isinstance(args[0], np.ndarray):
        # torch converts the array (shared when its dtype is already dt's, as from_numpy shares)
        src_np = args[0]
        if src_np.dtype.kind not in "biufc":
            raise TypeError(f"can't convert np.ndarray of type numpy.{src_np.dtype.type.__name__}. The only "
                            "supported types are: float64, float32, float16, complex64, complex128, int64, "
                            "int32, int16, int8, uint64, uint32, uint16, uint8, and bool.")
        arr = src_np if src_np.dtype == dt.np else src_np.astype(dt.np)
    elif len(args) == 1 and isinstance(args[0], (list, tuple)) and not isinstance(args[0], Size):
        arr = np.array(args[0], dtype=np.float64 if dt.is_floating_point else None).astype(dt.np)
    else:
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
        for s in sizes:
            if not isinstance(s, int) or isinstance(s, bool):
                raise TypeError(f"new(): argument 'size' must be tuple of ints, but found element of type "
                                f"{type(s).__name__} at pos {sizes.index(s)}")
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)}")
        arr = np.zeros(sizes if args else (0,), dtype=dt.np)
    Tensor.__init__(t, to_device_array(arr, dev), dev)


def make_tensor(arr: Any, dev: Device, requires_grad: bool = False) -> Tensor:
    t = Tensor(arr, dev)
    if requires_grad and not t.dtype.is_floating_point:
        # the factories' wording (requires_grad_() and the attribute have their own)
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    if requires_grad:
        t.requires_grad_(True)
    return t


def _shape(size: tuple) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)
