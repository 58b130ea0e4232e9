"""gradviz.autograd: backward(), grad(), Function, anomaly mode, and the engine behind them."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import gradviz._numpy_warnings  # noqa: F401 - numpy's floating-point warnings from gradviz code: silent, as torch
from gradviz.autograd import forward_events as _forward
from gradviz.autograd import graph
from gradviz.autograd.engine import (
    Engine,
    get_default_engine,
    get_max_recursion_depth,
    set_max_recursion_depth,
)
from gradviz.autograd.function import BackwardCFunction, Function, FunctionCtx
from gradviz.autograd.grad_mode import (
    detect_anomaly,
    enable_grad,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
    set_multithreading_enabled,
)
from gradviz.autograd.graph import Edge, Identity, Node, gradient_edge


def _as_tuple(x: Any) -> tuple:
    if x is None:
        return ()
    if isinstance(x, _tensor.Tensor):
        return (x,)
    return tuple(x)


# A 0-d one per numpy dtype, copied for each implicit root gradient: np.ones goes through
# numpy's Python-level ``ones`` (empty + copyto), ndarray.copy is one C call.
_ONES: dict[np.dtype, np.ndarray] = {}


def _scalar_one(dt: np.dtype) -> np.ndarray:
    one = _ONES.get(dt)
    if one is None:
        one = _ONES[dt] = np.ones((), dt)
    return one.copy()


def _make_grads(outputs: tuple, grads: tuple) -> list:
    Tensor, ones_like = _tensor.Tensor, _tensor.ones_like
    new_grads = []
    for i, (out, grad) in enumerate(zip(outputs, grads, strict=True)):
        if isinstance(grad, Tensor):
            if grad.shape != out.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {grad.shape!r} and output[{i}] "
                    f"has a shape of {out.shape!r}."
                )
            new_grads.append(grad)
        elif grad is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError(
                        f"grad can be implicitly created only for real scalar outputs but got {out.dtype!r}"
                    )
                if out._data.shape == () and type(out._data) is np.ndarray:
                    # The usual scalar loss: ones_like without its device and dtype resolution.
                    new_grads.append(Tensor._wrap(_scalar_one(out._data.dtype), out.dtype, out.device))
                else:
                    new_grads.append(ones_like(out))
            else:
                new_grads.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(grad).__name__}")
    return new_grads


def _run_backward(outputs: tuple, grads: list, keep_graph: bool, create_graph: bool, inputs: tuple,
                  allow_unreachable: bool, accumulate_grad: bool) -> list:
    """torch's run_backward: root edges from outputs, output edges from inputs, then execute."""
    if _forward.engine.probe is not None:
        _forward.backward_call("backward" if accumulate_grad else "grad", outputs, inputs, keep_graph)
    roots, root_grads = [], []
    for i, (out, g) in enumerate(zip(outputs, grads, strict=True)):
        edge = gradient_edge(out)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append(edge)
        root_grads.append(g)
    output_edges = []
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        fn = t.grad_fn
        if fn is None:
            ref = t._grad_accumulator
            fn = ref() if ref is not None else None
        if accumulate_grad:
            t.retain_grad()
        if fn is None:
            # A leaf no op has used: nothing can reach it (torch's unreachable input).
            output_edges.append(Edge(Identity(), 0))
        else:
            output_edges.append(Edge(fn, t._output_nr))
    result = get_default_engine().execute(roots, root_grads, keep_graph, create_graph, accumulate_grad, output_edges)
    if not accumulate_grad and not allow_unreachable:
        for i, r in enumerate(result):
            if r is None:
                exc = RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior."
                )
                probe = get_default_engine().probe
                if probe is not None:
                    probe.call_error(exc)  # after the task's end: the engine itself finished
                raise exc
    return result


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: Any = None,
    inputs: Any = None,
) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``)."""
    if type(tensors) is _tensor.Tensor and grad_tensors is None and grad_variables is None and inputs is None:
        get_default_engine().execute(*_one_root(tensors, retain_graph, create_graph))
        return
    if inputs is not None and len(_as_tuple(inputs)) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = _as_tuple(tensors)
    inputs = _as_tuple(inputs)
    grad_tensors = grad_tensors if grad_tensors is not None else grad_variables
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grads)} gradients")
    new_grads = _make_grads(tensors, grads)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        _warn_create_graph_cycle()
    _run_backward(tensors, new_grads, retain_graph, create_graph, inputs, True, True)


def _one_root(tensor: _tensor.Tensor, retain_graph: bool | None, create_graph: bool) -> tuple:
    """Engine.execute's arguments for ``tensor.backward()``: one output, its implicit gradient,
    every leaf. The same checks and calls as backward's general path without its tuple
    conversions (a fixed cost of every training step). Its caller (backward, or Tensor.backward
    itself) calls execute: one Python frame less for each nested backward level."""
    d = tensor._data
    if (type(d) is np.ndarray and d.shape == () and (tensor._requires_grad or tensor._grad_fn is not None)
            and tensor.dtype.is_floating_point):
        # The scalar loss (_make_grads' checks hold): a copy of a cached one as its gradient.
        grad = _tensor.Tensor._wrap(_scalar_one(d.dtype), tensor.dtype, tensor.device)
    else:
        grad = _make_grads((tensor,), (None,))[0]
    edge = gradient_edge(tensor)
    keep = create_graph if retain_graph is None else retain_graph
    if _forward.engine.probe is not None:
        _forward.backward_call("backward", (tensor,), (), keep)
    if edge[0] is None:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    if create_graph:
        _warn_create_graph_cycle()
    return [edge], [grad], keep, create_graph, True, []


_create_graph_warned = False


def _warn_create_graph_cycle() -> None:
    """torch's warning (once per process, as its engine gives it) for backward(create_graph=True):
    a leaf's .grad then holds a graph that leads back to the leaf."""
    global _create_graph_warned
    if _create_graph_warned:
        return
    _create_graph_warned = True
    warnings.warn(
        "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
        "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid "
        "this. If you have to use this function, make sure to reset the .grad fields of your parameters to None "
        "after use to break the cycle and avoid the leak.",
        UserWarning,
        stacklevel=4,
    )


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """Gradients of ``outputs`` with respect to ``inputs``, returned instead of accumulated."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    inputs_t = _as_tuple(inputs)
    if not inputs_t:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    grads = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    new_grads = _make_grads(outputs, grads)
    if retain_graph is None:
        retain_graph = create_graph
    result = _run_backward(outputs, new_grads, retain_graph, create_graph, inputs_t, allow_unused, False)
    if materialize_grads:
        # torch's zeros_like(input, requires_grad=create_graph): with create_graph the zeros are
        # a leaf that a further grad() can take (its gradient, in turn, materialized).
        result = [
            _materialized_zeros(t, create_graph) if r is None else r for r, t in zip(result, inputs_t, strict=True)
        ]
    return tuple(result)


def _materialized_zeros(like: Any, requires_grad: bool) -> Any:
    from gradviz.ops.functions import zeros_for

    z = zeros_for(like.shape, like.dtype, like.device)
    if requires_grad:
        z.requires_grad_(True)
    return z


class _ExecutionEngine:
    """torch's Variable._execution_engine: queue_callback and run_backward."""

    def queue_callback(self, callback: Any) -> None:
        get_default_engine().queue_callback(callback)

    def run_backward(self, tensors, grad_tensors, keep_graph, create_graph, inputs=(),
                     allow_unreachable=True, accumulate_grad=True):
        return tuple(
            _run_backward(
                tuple(tensors),
                list(grad_tensors),
                keep_graph,
                create_graph,
                tuple(inputs),
                allow_unreachable,
                accumulate_grad,
            )
        )


class _VariableMeta(type):
    # torch's VariableMeta: every Tensor is a Variable to isinstance, as in torch since 0.4
    def __instancecheck__(cls, other: Any) -> bool:
        from gradviz.tensor import Tensor

        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """The legacy ``Variable(data, requires_grad=False)``: as in torch, a tensor detached from
    ``data`` (sharing its storage and version counter) with ``requires_grad`` set; also where torch
    keeps ``Variable._execution_engine``."""

    _execution_engine = _ExecutionEngine()

    def __new__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False, name: Any = None) -> Any:
        from gradviz.tensor import Tensor

        if data is None:
            from gradviz.ops.functions import empty

            return empty(0, requires_grad=requires_grad)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        return t


__all__ = [
    "BackwardCFunction",
    "Edge",
    "Engine",
    "Function",
    "FunctionCtx",
    "Node",
    "Variable",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "get_default_engine",
    "get_max_recursion_depth",
    "grad",
    "graph",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
    "set_max_recursion_depth",
]

# -- autograd extras (gradcheck, functional, once_differentiable): binding the functions here
# shadows the gradcheck submodule, as in torch (``from gradviz.autograd.gradcheck import
# GradcheckError`` still works through sys.modules).
from gradviz.autograd import functional, graph_hooks, profiler  # noqa: E402, F401 - graph_hooks fills autograd.graph
from gradviz.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402

__all__ += ["GradcheckError", "functional", "gradcheck", "gradgradcheck", "profiler"]
__all__ += ["set_multithreading_enabled"]  # (inference_mode: bound by gradviz.ops.modes, which defines it)

# At the end: gradviz.tensor imports this package's modules (functions above look it up late).
# (By its module name: the package's ``tensor`` is torch's function, and gradviz.tensor may be the module
# being imported, not yet holding Tensor, when it is the first of gradviz's modules imported.)
_tensor = importlib.import_module("gradviz.tensor")




# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
