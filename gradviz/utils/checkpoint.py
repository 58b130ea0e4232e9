"""torch.utils.checkpoint: activation checkpointing.

``use_reentrant=True`` (torch's default when not given, with its warning) runs the function
without a graph and records one ``CheckpointFunctionBackward`` node over the inputs; its backward
runs the function again with the forward's random state and backpropagates through it, as
torch's CheckpointFunction does. ``use_reentrant=False`` records the function's own nodes, as
torch's does (torch frees their saved tensors and recomputes them in backward through
saved-tensor hooks; gradviz keeps them, so the function runs once: the same graph, values and
gradients, more memory).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import gradviz.autograd as _autograd
from gradviz.autograd.function import Function
from gradviz.autograd.grad_mode import enable_grad, no_grad
from gradviz.random import get_rng_state, set_rng_state
from gradviz.tensor import Tensor

__all__ = [
    "CheckpointError", "CheckpointFunction", "DefaultDeviceType", "check_backward_validity", "checkpoint",
    "checkpoint_sequential", "detach_variable", "get_device_states", "noop_context_fn", "set_checkpoint_debug_enabled",
    "set_checkpoint_early_stop", "set_device_states",
]

_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, "
    "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, but if "
    "you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants."
)


class CheckpointError(RuntimeError):
    pass


class DefaultDeviceType:
    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        return DefaultDeviceType._default_device_type


def noop_context_fn() -> tuple[contextlib.nullcontext, contextlib.nullcontext]:
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for x in inputs:
        if not isinstance(x, Tensor):
            out.append(x)
            continue
        d = x.detach()
        d.requires_grad = x.requires_grad
        out.append(d)
    return tuple(out)


def check_backward_validity(inputs: Any) -> None:
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def get_device_states(*args: Any) -> tuple[list, list]:
    return [], []  # no accelerator state to save: gradviz's devices draw from the CPU generator


def set_device_states(devices: list, states: list, *, device_type: str | None = None) -> None:
    return None


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    yield  # gradviz never recomputes, so there is nothing to stop early


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    yield


class CheckpointFunction(Function):
    """The reentrant checkpoint: its node is CheckpointFunctionBackward, as torch's."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
        ctx.inputs, ctx.tensor_indices, tensors = [], [], []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensors)
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors, strict=True):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        state = get_rng_state()
        try:
            if ctx.preserve_rng_state:
                set_rng_state(ctx.fwd_cpu_state)
            with enable_grad():
                outputs = ctx.run_function(*detached)
        finally:
            if ctx.preserve_rng_state:
                set_rng_state(state)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=False) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(x.grad if isinstance(x, Tensor) else None for x in detached))


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable = noop_context_fn, determinism_check: str = "default", debug: bool = False,
               early_stop: bool = True, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    forward_ctx, _ = context_fn()
    with forward_ctx:
        return function(*args, **kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: bool | None = None,  # noqa: A002
                          **kwargs: Any) -> Any:
    """The modules in ``segments`` runs, each but the last checkpointed (torch's split)."""
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)

    def run(start: int, end: int) -> Callable:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = fns[j](x)
            return x

        return forward

    size = len(fns) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,  # noqa: A001
                           preserve_rng_state=kwargs.get("preserve_rng_state", True))
    return run(end + 1, len(fns) - 1)(input)


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
