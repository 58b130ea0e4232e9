"""torch.optim.Optimizer: parameter groups, per-parameter state, state dicts and step hooks.

Updates run under no_grad and write into the parameters' storage in place, bumping their version
counters as torch's in-place ops do, so autograd sees exactly the mutations torch's optimizers make.
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd import no_grad
from gradviz.ops.inplace_write import bump_version
from gradviz.tensor import Tensor, make_tensor

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks a default that every parameter group must give itself (torch.optim.optimizer.required)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_post_hooks: OrderedDict[int, Callable] = OrderedDict()


class _RemovableHandle:
    _next_id = 0

    def __init__(self, store: dict) -> None:
        self._store = store
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1

    def remove(self) -> None:
        self._store.pop(self.id, None)

    def __enter__(self) -> _RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _add_hook(store: dict, hook: Callable) -> _RemovableHandle:
    handle = _RemovableHandle(store)
    store[handle.id] = hook
    return handle


def register_optimizer_step_pre_hook(hook: Callable) -> _RemovableHandle:
    return _add_hook(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> _RemovableHandle:
    return _add_hook(_global_post_hooks, hook)


def _typename(obj: Any) -> str:
    # torch.typename: "torch.FloatTensor" for tensors, the qualified class name otherwise
    if isinstance(obj, Tensor):
        return {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "int64": "torch.LongTensor",
                "bool": "torch.BoolTensor"}.get(obj.dtype.name if hasattr(obj.dtype, "name") else "", "torch.Tensor")
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", "__builtin__", None) else f"{module}.{name}"


def _with_step_hooks(func: Callable) -> Callable:
    """Wraps a subclass's step so the global and per-optimizer pre/post hooks run around it."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        for pre_hook in chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(
                        f"{func} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                    )
        out = func(*args, **kwargs)
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out

    wrapper._hooked = True  # type: ignore[attr-defined]
    return wrapper


def _scalar_tensor(value: float, dtype: _dtype.dtype = _dtype.float32) -> Tensor:
    """A 0-dim tensor, as torch keeps an optimizer's ``step`` count."""
    return make_tensor(np.array(value, dtype=dtype.np), _cpu())


def _cpu() -> Any:
    from gradviz.device import as_device

    return as_device("cpu")


class Optimizer:
    """Base class of all optimizers: subclass it, pass ``defaults`` to ``__init__``, write ``step``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _with_step_hooks(step)

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                + _typename(params)
            )
        self.state: defaultdict[Any, Any] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("step_pre", "step_post", "state_dict_pre", "state_dict_post", "load_state_dict_pre",
                     "load_state_dict_post"):
            self.__dict__.setdefault(f"_optimizer_{name}_hooks", OrderedDict())
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- hooks
    def register_step_pre_hook(self, hook: Callable) -> _RemovableHandle:
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> _RemovableHandle:
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        return self._add_ordered(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        return self._add_ordered(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        return self._add_ordered(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        return self._add_ordered(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    @staticmethod
    def _add_ordered(store: OrderedDict, hook: Callable, prepend: bool) -> _RemovableHandle:
        handle = _add_hook(store, hook)
        if prepend:
            store.move_to_end(handle.id, last=False)
        return handle

    # -- state dicts
    def state_dict(self) -> dict[str, Any]:
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack_group(g) for g in self.param_groups]
        # the state's tensors are the optimizer's own, not copies, as torch returns them
        packed_state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _cast_value(param: Tensor, value: Any, key: Any = None) -> Any:
        if isinstance(value, Tensor):
            # torch's policy: a step count stays as saved; other state follows the parameter's
            # device, and its dtype when the parameter is floating point
            if key == "step":
                return value
            if param.dtype.is_floating_point and value.dtype is not param.dtype:
                return value.to(device=param.device, dtype=param.dtype)
            return value if value.device == param.device else value.to(device=param.device)
        if isinstance(value, dict):
            return {k: Optimizer._cast_value(param, v, k) for k, v in value.items()}
        if isinstance(value, Iterable) and not isinstance(value, str):
            return type(value)(Optimizer._cast_value(param, v) for v in value)  # type: ignore[call-arg]
        return value

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict[Any, Any] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = self._cast_value(id_map[k], v)
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state, "param_groups": [update_group(g, n) for g, n in zip(groups, saved_groups)]})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # -- gradients and steps
    def zero_grad(self, set_to_none: bool = True) -> None:
        # foreach (or fused) optimizers zero with torch._foreach_zero_ over each (device, dtype)
        # group, in the order the groups first appear, once every gradient was detached
        foreach = bool(self.defaults.get("foreach", False) or self.defaults.get("fused", False))
        groups: dict[tuple[Any, Any], list[Tensor]] = {}
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    if foreach and not g.is_sparse:
                        groups.setdefault((g.device, g.dtype), []).append(g)
                    else:
                        with no_grad():
                            g.zero_()
        for grads in groups.values():
            for g in grads:
                g._data[...] = 0
                bump_version(g, "_foreach_zero_")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors "
                "in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param._retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if len({id(p) for p in tensors}) != len(tensors):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an "
                "error; see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if not seen.isdisjoint(id(p) for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


def _lr_value(lr: Any) -> float:
    """torch's _to_scalar: a 1-element tensor lr is read as a number for the update."""
    return float(lr.item()) if isinstance(lr, Tensor) else lr


def _check_lr(lr: Any) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _grads_of(group: dict[str, Any]) -> list[tuple[Tensor, np.ndarray]]:
    """(param, grad array) for the group's params that have a gradient, in group order."""
    out = []
    for p in group["params"]:
        g = p._grad
        if g is not None:
            out.append((p, g._data))
    return out


def _takes_foreach(group: dict[str, Any]) -> bool:
    """Whether torch runs the group's multi-tensor loop: foreach=True, or foreach left None (and
    not fused, not differentiable) with every parameter that has a gradient on a cuda device
    (torch's _default_to_fused_or_foreach; cpu's default is the single-tensor loop)."""
    foreach = group.get("foreach")
    if foreach is not None:
        return bool(foreach)
    if group.get("fused") or group.get("differentiable"):
        return False
    return all(p.device.type == "cuda" for p in group["params"] if p._grad is not None)


def _zeros_state(p: Tensor, fill: float = 0.0) -> Tensor:
    """A zero (or filled) tensor like p, on p's device (torch.zeros_like / full_like)."""
    arr = p._data.copy()
    arr[...] = fill
    return make_tensor(arr, p.device)


def _no_grad_step(func: Callable) -> Callable:
    """Runs an optimizer's step with grad mode off; a closure still runs with grad on."""

    @functools.wraps(func)
    def wrapper(self: Optimizer, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            from gradviz.autograd import enable_grad

            with enable_grad():
                loss = closure()
        with no_grad():
            func(self)
        return loss

    return wrapper
