"""gradcheck and gradgradcheck: compare backward's gradients with central finite differences.

Slow mode, as torch's: for every element of every input that requires grad, the numerical
Jacobian column ``(f(x + eps) - f(x - eps)) / 2 eps``; for every element of every differentiable
output, the analytical row from ``autograd.grad`` with a one-hot gradient. Jacobians are laid out
as torch's, ``(input numel, output numel)``, so a mismatch prints the same matrices. ``fast_mode``
runs the same (exact) check: gradviz has no random projection matching torch's streams.
``check_forward_ad`` compares the columns forward-mode AD gives (one dual input at a time).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import no_grad
from gradviz.autograd.graph import InputMetadata, Node, collect_next_edges


class GradcheckError(RuntimeError):
    """Raised by gradcheck and gradgradcheck when a check fails."""


def _as_tuple(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _tensor_cls() -> type:
    from gradviz.tensor import Tensor

    return Tensor


def _differentiable_outputs(out: Any) -> tuple:
    return tuple(o for o in _as_tuple(out) if o.requires_grad)


def _check_inputs(inputs: tuple) -> None:
    Tensor = _tensor_cls()
    any_grad = False
    for idx, t in enumerate(inputs):
        if isinstance(t, Tensor) and t.requires_grad:
            any_grad = True
            if t.dtype.name != "float64":
                warnings.warn(
                    f"Input #{idx} requires gradient and is not a double precision floating point or complex. "
                    "This check will likely fail if all the inputs are not of double precision floating point or "
                    "complex. ",
                    stacklevel=4,
                )
    if not any_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them have requires_grad=True."
        )


def _float_outputs(out: Any) -> list:
    """The outputs finite differences are taken of: tensors (a non-floating one gives zeros)."""
    Tensor = _tensor_cls()
    return [o for o in _as_tuple(out) if isinstance(o, Tensor)]


def _numerical_jacobian(func: Callable, inputs: tuple, outputs: list, eps: float) -> list[list[np.ndarray]]:
    """[input][output] -> array (input numel, output numel), for the inputs that require grad."""
    Tensor = _tensor_cls()
    result = []
    for x in inputs:
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        data = x._data
        cols = [np.zeros((x.numel(), o.numel()), dtype=o._data.dtype) for o in outputs]
        # Row-major element order (torch's), through any strides: written into the input's own
        # array (no version bump), so func sees the same tensor.
        for k, idx in enumerate(np.ndindex(data.shape)):
            orig = data[idx].copy()
            data[idx] = orig - eps
            before = [np.array(o._data, copy=True) for o in _float_outputs(func(*inputs))]
            data[idx] = orig + eps
            after = [np.array(o._data, copy=True) for o in _float_outputs(func(*inputs))]
            data[idx] = orig
            for j, (a, b) in enumerate(zip(before, after, strict=True)):
                if a.shape != b.shape:
                    raise ValueError(
                        "Expected `func` to return outputs with the same shape when inputs are perturbed "
                        f"on index {k} by {eps}, but got: shapes {a.shape} and {b.shape}."
                    )
                if b.dtype.kind == "f":
                    cols[j][k] = ((b - a) / (2 * eps)).reshape(-1)
        result.append(cols)
    return result


def _analytical_jacobian(inputs: tuple, output: Any) -> tuple[list[np.ndarray], bool, bool]:
    """Rows of one output's Jacobian from backward with one-hot gradients, per input that
    requires grad; and whether the gradients had the inputs' dtypes and sizes."""
    from gradviz.autograd import grad as autograd_grad

    Tensor = _tensor_cls()
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    jac = [np.zeros((x.numel(), output.numel()), dtype=x._data.dtype) for x in diff]
    types_ok = sizes_ok = True
    for k in range(output.numel()):
        onehot = np.zeros(output.numel(), dtype=output._data.dtype)
        onehot[k] = 1
        g_out = Tensor._wrap(onehot.reshape(output._data.shape), output.dtype, output.device)
        grads = autograd_grad(output, diff, g_out, retain_graph=True, allow_unused=True)
        for i, (g, x) in enumerate(zip(grads, diff, strict=True)):
            if g is None:
                continue
            if g.dtype != x.dtype:
                types_ok = False
            if g.numel() != x.numel():
                sizes_ok = False
                continue
            jac[i][:, k] = np.asarray(g.detach()._data).reshape(-1)
    return jac, types_ok, sizes_ok


def _as_tensor(a: np.ndarray, like: Any) -> Any:
    Tensor = _tensor_cls()
    out = Tensor._wrap(a, like.dtype, like.device)
    return out


def _check_analytical(inputs: tuple, output: Any, nondet_tol: float, check_grad_dtypes: bool) -> list[np.ndarray]:
    jac1, types_ok, sizes_ok = _analytical_jacobian(inputs, output)
    jac2, _, _ = _analytical_jacobian(inputs, output)
    reentrant = all(
        a.size == 0 or float(np.abs(a.astype(np.float64) - b).max()) <= nondet_tol
        for a, b in zip(jac1, jac2, strict=True)
    )
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output multiple times gives "
            "different values, although analytical gradient matches numerical gradient."
            f"The tolerance for nondeterminism was {nondet_tol}."
        )
    return jac1


def _allclose(a: np.ndarray, n: np.ndarray, rtol: float, atol: float) -> bool:
    dt = np.result_type(a.dtype, n.dtype)
    return bool(np.allclose(a.astype(dt), n.astype(dt), rtol=rtol, atol=atol, equal_nan=False))


def _slow_check(func: Callable, inputs: tuple, func_out: Any, outputs: tuple, eps: float, rtol: float,
                atol: float, check_grad_dtypes: bool, nondet_tol: float) -> None:
    Tensor = _tensor_cls()
    all_out = _float_outputs(func_out)
    with no_grad():
        numerical = _numerical_jacobian(func, inputs, all_out, eps) if _needs_grad_free(func) else None
    if numerical is None:
        numerical = _numerical_jacobian(func, inputs, all_out, eps)
    if not outputs:
        for per_input in numerical:
            for jac in per_input:
                if np.any(jac != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    # numerical[input][output] -> per differentiable output, per input (torch's transpose)
    keep = [j for j, o in enumerate(all_out) if o.requires_grad]
    diff_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    for i, o in enumerate(outputs):
        analytical = _check_analytical(inputs, o, nondet_tol, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][keep[i]]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {i:d} with respect to input {j:d},\n"
                    f"numerical:{_as_tensor(n, o)}\nanalytical:{_as_tensor(a, diff_inputs[j])}\n"
                )


def _forward_check(func: Callable, inputs: tuple, func_out: Any, eps: float, rtol: float, atol: float) -> None:
    """torch's check_forward_ad: each Jacobian column from forward-mode AD (the input made dual
    with a one-hot tangent) against finite differences."""
    from gradviz.autograd import forward_ad  # imports the ops, which import this package

    Tensor = _tensor_cls()
    all_out = _float_outputs(func_out)
    with no_grad():
        numerical = _numerical_jacobian(func, inputs, all_out, eps) if _needs_grad_free(func) else None
    if numerical is None:  # gradgradcheck's function takes gradients itself
        numerical = _numerical_jacobian(func, inputs, all_out, eps)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    for j, pos in enumerate(diff):
        x = inputs[pos]
        cols = [np.zeros((x.numel(), o.numel()), dtype=o._data.dtype) for o in all_out]
        for k in range(x.numel()):
            onehot = np.zeros(x.numel(), dtype=x._data.dtype)
            onehot[k] = 1
            tangent = Tensor._wrap(onehot.reshape(x._data.shape), x.dtype, x.device)
            with forward_ad.dual_level():
                args = list(inputs)
                args[pos] = forward_ad.make_dual(x, tangent)
                outs = _float_outputs(func(*args))
                for c, o in zip(cols, outs):
                    t = forward_ad.unpack_dual(o).tangent
                    if t is not None:
                        c[k] = np.asarray(t._data).reshape(-1)
        for i, (a, o) in enumerate(zip(cols, all_out)):
            n = numerical[j][i]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(
                    f"Jacobian computed with forward mode mismatch for output {i:d} with respect to input {j:d},\n"
                    f"numerical:{_as_tensor(n, o)}\nanalytical:{_as_tensor(a, x)}\n"
                )


def _needs_grad_free(func: Callable) -> bool:
    """Whether func may be evaluated under no_grad for the differences: not gradgradcheck's
    function, which calls autograd.grad itself."""
    return not getattr(func, "_gradviz_needs_grad", False)


def _test_backward_mul_by_grad_output(outputs: tuple, inputs: tuple) -> None:
    from gradviz.autograd import grad as autograd_grad
    from gradviz.ops.functions import zeros_for

    Tensor = _tensor_cls()
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise GradcheckError("no Tensors requiring grad found in input")
    zeros = [zeros_for(o.shape, o.dtype, o.device) for o in outputs]
    grads = autograd_grad(outputs, diff, zeros, allow_unused=True)
    for g, x in zip(grads, diff, strict=True):
        if g is None:
            continue
        if np.any(np.asarray(g._data) != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.device != x.device:
            raise GradcheckError("grad is incorrect device")
        if g.shape != x.shape:
            raise GradcheckError("grad is incorrect size")


class _UndefinedGradBackward(Node):
    """Hands on no gradient (torch's UndefinedGrad): the node before it gets an undefined one."""

    def name(self) -> str:
        return "UndefinedGradBackward"

    def apply(self, grads: list[Any]) -> list[Any]:
        return [None]


def _undefined_grad(o: Any) -> Any:
    node = _UndefinedGradBackward(collect_next_edges((o,)))
    out = type(o)._wrap(o._data.copy(), o.dtype, o.device)
    out._grad_fn = node
    node.input_metadata = [InputMetadata(o._data.shape, o.dtype, o.device)]
    return out


_UNDEFINED_NOTE = 'Please look at "Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'


def _test_undefined_backward_mode(func: Callable, outputs: tuple, inputs: tuple) -> None:
    """Backward must cope with undefined (None) output gradients: all of them at once, and (with
    several outputs) each one alone; the input gradients are then None or zero."""
    from gradviz.autograd import grad as autograd_grad
    from gradviz.ops.functions import zeros_for

    Tensor = _tensor_cls()
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise GradcheckError("no Tensors requiring grad found in input")

    def warn() -> None:
        warnings.warn(
            "Backwards compatibility: New undefined gradient support checking feature is enabled by default, but it "
            "may break existing callers of this function. If this is true for you, you can call this function with "
            '"check_undefined_grad=False" to disable the feature',
            stacklevel=4,
        )

    def fresh() -> list:
        return [o for o in _differentiable_outputs(func(*inputs)) if isinstance(o, Tensor)]

    to_check = [[_undefined_grad(o) for o in fresh()]]
    if len(to_check[0]) > 1:
        for k in range(len(outputs)):
            to_check.append([_undefined_grad(o) if i == k else o for i, o in enumerate(fresh())])
    for outs in to_check:
        zeros = [zeros_for(o.shape, o.dtype, o.device) for o in outs]
        try:
            grads = autograd_grad(outs, diff, zeros, allow_unused=True)
        except RuntimeError as e:
            warn()
            msg = f"Expected backward function to handle undefined output grads. {_UNDEFINED_NOTE}"
            raise GradcheckError(msg) from e
        for g in grads:
            if g is not None and np.any(np.asarray(g._data) != 0):
                warn()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are undefined or zero. "
                    + _UNDEFINED_NOTE
                )


def gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check ``func``'s backward against finite differences at ``inputs`` (torch's defaults).
    Returns True, or raises GradcheckError (False with ``raise_exception=False``)."""
    if not (check_forward_ad or check_backward_ad):
        raise ValueError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise ValueError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise ValueError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    if check_batched_forward_grad:
        raise NotImplementedError("gradviz has no vmap of forward-mode AD: gradcheck(check_batched_forward_grad=True) "
                                  "is not supported")
    try:
        inputs_t = _as_tuple(inputs)
        _check_inputs(inputs_t)
        func_out = func(*inputs_t)
        outputs = _differentiable_outputs(func_out)
        if check_forward_ad:
            _forward_check(func, inputs_t, func_out, eps, rtol, atol)
        if not check_backward_ad:
            return True
        _slow_check(func, inputs_t, func_out, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol)
        if outputs:
            _test_backward_mul_by_grad_output(outputs, inputs_t)
            if check_undefined_grad:
                _test_undefined_backward_mode(func, outputs, inputs_t)
        return True
    except GradcheckError:
        if raise_exception:
            raise
        return False


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """gradcheck of the gradients of ``func``: second derivatives against finite differences of
    the first. Without ``grad_outputs``, random ones in [-1, 1) (from gradviz's generator)."""
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise ValueError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise ValueError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise ValueError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    Tensor = _tensor_cls()
    inputs_t = _as_tuple(inputs)
    if grad_outputs is None:
        import gradviz

        outs = _differentiable_outputs(func(*inputs_t))
        grad_outputs_t = tuple(
            (gradviz.rand(*o.shape, dtype=o.dtype if o.dtype.is_floating_point else gradviz.float64) * 2 - 1)
            .detach()
            .requires_grad_(True)
            for o in outs
        )
    else:
        grad_outputs_t = _as_tuple(grad_outputs)
    n_out = len(grad_outputs_t)

    def new_func(*args: Any) -> tuple:
        from gradviz.autograd import grad as autograd_grad

        input_args, g_outs = args[:-n_out] if n_out else args, args[-n_out:] if n_out else ()
        outputs = _differentiable_outputs(func(*input_args))
        diff = tuple(x for x in input_args if isinstance(x, Tensor) and x.requires_grad)
        grads = autograd_grad(outputs, diff, g_outs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    new_func._gradviz_needs_grad = True  # type: ignore[attr-defined]
    return gradcheck(
        new_func,
        inputs_t + grad_outputs_t,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_forward_ad=check_fwd_over_rev,  # forward AD through the backward: forward over reverse
        check_backward_ad=check_rev_over_rev,
        fast_mode=fast_mode,
        masked=masked,
    )


__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]
