"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp and hvp over the reverse-mode engine.

Each follows torch's recipe step for step, so that the same backward calls (and nodes) run:
inputs are re-wrapped (a view under create_graph, a detached copy otherwise), forward-mode
products use the double-backward trick (gradients of a vjp with respect to zero grad_outputs that
require grad), and results are detached unless ``create_graph``. ``strict`` raises torch's errors
where an output is independent of an input. Only ``vectorize=False`` and ``strategy="reverse-mode"``
run as such: gradviz has no vmap and no forward-mode AD, so ``vectorize=True`` and
``strategy="forward-mode"`` give the same values from the reverse-mode loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradviz.autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _gv() -> Any:
    import gradviz

    return gradviz


def _as_tuple(inp: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    Tensor = _gv().Tensor
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the {where} "
                f"has type {type(el)}."
            )
    return is_tuple, items


def _unpack(res: Any, flags: bool | tuple[bool, bool]) -> Any:
    """Undo the tuple wrapping of arguments the user passed bare (flag False)."""
    if isinstance(flags, bool):
        return res if flags else res[0]
    outs_tuple, ins_tuple = flags
    if outs_tuple and ins_tuple:
        return res
    if outs_tuple:
        return tuple(r[0] for r in res)
    if ins_tuple:
        return res[0]
    return res[0][0]


def _preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    # Under create_graph a view keeps the user's graph attached; otherwise a fresh leaf, so the
    # user's graph is neither walked nor extended.
    return tuple(
        t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph) for t in inputs
    )


def _postprocess(res: Any, create_graph: bool) -> Any:
    if isinstance(res, tuple):
        return tuple(_postprocess(r, create_graph) for r in res)
    return res if create_graph else res.detach()


def _validate_v(v: tuple, other: tuple, other_is_tuple: bool) -> None:
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (a, b) in enumerate(zip(v, other, strict=True)):
        if a.size() != b.size():
            where = f"Entry {idx} in " if other_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.size()} but got {a.size()}.")


_NOT_REQUIRING = {
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
    "This is not allowed in strict mode. You should ensure that your function is thrice differentiable and that "
    "the hessian depends on the inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect "
    "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure that your "
    "function is twice differentiable and that the jacobian depends on the inputs (this would be violated by a "
    "linear function for example).",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
    "function. This is not allowed in strict mode.",
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be computed "
    "in a differentiable manner from the input when running in strict mode.",
}


def _check_requires_grad(tensors: tuple, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is not allowed in "
                "strict mode."
            )
        if not t.requires_grad:
            raise RuntimeError(_NOT_REQUIRING[kind].format(i=i))


def _grad(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None, create_graph: bool = False,
          retain_graph: bool | None = None) -> tuple:
    """autograd.grad over the outputs that need a gradient (None for every input if none does)."""
    from gradviz.autograd import grad

    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs, strict=True) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return grad(
        tuple(o for o, _ in pairs), inputs, tuple(g for _, g in pairs),
        allow_unused=True, create_graph=create_graph, retain_graph=retain_graph,
    )


_FILL_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
    "using the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
    "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
    "grad_jacobian. This is not allowed in strict mode as it prevents from using the double backward trick to "
    "replace forward mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    zeros_like = _gv().zeros_like
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_FILL_MESSAGES[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is not allowed in "
                "strict mode when create_graph=True."
            )
        out.append(g)
    return tuple(out)


def _single_element_v_error(of_output: bool) -> RuntimeError:
    if of_output:
        return RuntimeError(
            "The vector v can only be None if the user-provided function returns a single Tensor with a single element."
        )
    return RuntimeError(
        "The vector v can only be None if the input to the user-provided function is a single Tensor with a single "
        "element."
    )


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), v^T J)``: the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        ins_tuple, ins = _as_tuple(inputs, "inputs", "vjp")
        ins = _preprocess(ins, create_graph, True)
        outs_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outs, "outputs", strict)
        if v is not None:
            _, vs = _as_tuple(v, "v", "vjp")
            vs = _preprocess(vs, create_graph, False)
            _validate_v(vs, outs, outs_tuple)
        else:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise _single_element_v_error(True)
            vs = None
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _fill_in_zeros(_grad(outs, ins, vs, create_graph=create_graph), ins, strict, create_graph, "back")
    return (
        _unpack(_postprocess(outs, create_graph), outs_tuple),
        _unpack(_postprocess(res, create_graph), ins_tuple),
    )


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), J v)``, by the double-backward trick."""
    zeros_like = _gv().zeros_like
    with enable_grad():
        ins_tuple, ins = _as_tuple(inputs, "inputs", "jvp")
        ins = _preprocess(ins, create_graph, True)
        if v is not None:
            _, vs = _as_tuple(v, "v", "jvp")
            vs = _preprocess(vs, create_graph, False)
            _validate_v(vs, ins, ins_tuple)
        else:
            if len(ins) != 1 or ins[0].numel() != 1:
                raise _single_element_v_error(False)
            vs = None
        outs_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outs, "outputs", strict)
        # u -> u^T J is linear in u: its gradient with respect to u, applied to v, is J v.
        grad_outs = tuple(zeros_like(o, requires_grad=True) for o in outs)
        grad_ins = _grad(outs, ins, grad_outs, create_graph=True)
        _check_requires_grad(grad_ins, "grad_inputs", strict)
    if create_graph:
        with enable_grad():
            res = _grad(grad_ins, grad_outs, vs, create_graph=create_graph)
    else:
        res = _grad(grad_ins, grad_outs, vs, create_graph=create_graph)
    res = _fill_in_zeros(res, outs, strict, create_graph, "back_trick")
    return (
        _unpack(_postprocess(outs, create_graph), outs_tuple),
        _unpack(_postprocess(res, create_graph), outs_tuple),
    )


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``: entry [i][j] has shape ``out_i.shape + in_j.shape``
    (tuples collapse where the user passed a single tensor)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    # gradviz has neither vmap nor forward-mode AD. Where torch would use them, the same Jacobian
    # comes from the reverse-mode loop below (the values agree; a create_graph result's nodes
    # are those of the loop), after torch's checks of the option combinations.
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"` are not '
                'supported together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.'
            )
        if strict:
            raise RuntimeError(
                'torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not supported '
                'together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.'
            )
        _as_tuple(inputs, "inputs", "jacobian")
        if not vectorize:
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly implemented for "
                "`vectorize=True`."
            )
    gv = _gv()
    with enable_grad():
        ins_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
        ins = _preprocess(ins, create_graph, True)
        outs_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported together. "
                "Please either set `strict=False` or `vectorize=False`."
            )
        jac: tuple = ()
        for i, out in enumerate(outs):
            rows: list[list] = [[] for _ in ins]
            flat = out.reshape(-1)
            for k in range(out.numel()):
                row = _grad((flat[k],), ins, retain_graph=True, create_graph=create_graph)
                for j, (g, inp) in enumerate(zip(row, ins, strict=True)):
                    if g is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of input {j}. This is "
                                "not allowed in strict mode."
                            )
                        g = gv.zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(
                            f"The jacobian of the user-provided function is independent of input {i}. This is not "
                            "allowed in strict mode when create_graph=True."
                        )
                    rows[j].append(g)
            jac += (
                tuple(
                    gv.stack(r, dim=0).view(tuple(out.shape) + tuple(ins[j].shape))
                    if r
                    else gv.zeros(tuple(out.shape) + tuple(ins[j].shape), dtype=ins[j].dtype)
                    for j, r in enumerate(rows)
                ),
            )
        jac = _postprocess(jac, create_graph)
        return _unpack(jac, (outs_tuple, ins_tuple))


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar ``func`` at ``inputs``: the Jacobian of its Jacobian."""
    Tensor = _gv().Tensor
    ins_tuple, ins = _as_tuple(inputs, "inputs", "hessian")

    def scalar_func(*inp: Any) -> Any:
        out = func(*inp)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp: Any) -> Any:
        j = jacobian(scalar_func, inp, create_graph=True)
        _check_requires_grad(j, "jacobian", strict)
        return j

    res = jacobian(
        jac_func, ins, create_graph=create_graph, strict=strict, vectorize=vectorize, strategy=outer_jacobian_strategy
    )
    return _unpack(res, (ins_tuple, ins_tuple))


def _scalar_function_jacobian(func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool, strict: bool,
                              name: str) -> tuple:
    """vhp's and hvp's first part: (inputs, v, outputs, their gradients with a graph)."""
    Tensor = _gv().Tensor
    ins_tuple, ins = _as_tuple(inputs, "inputs", name)
    ins = _preprocess(ins, create_graph, True)
    if v is not None:
        _, vs = _as_tuple(v, "v", name)
        vs = _preprocess(vs, create_graph, False)
        _validate_v(vs, ins, ins_tuple)
    else:
        if len(ins) != 1 or ins[0].numel() != 1:
            raise _single_element_v_error(False)
        vs = None
    outs_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", name)
    _check_requires_grad(outs, "outputs", strict)
    if outs_tuple or not isinstance(outs[0], Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")
    jac = _grad(outs, ins, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return ins_tuple, ins, vs, outs_tuple, outs, jac


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), v^T H)`` for a scalar func."""
    with enable_grad():
        ins_tuple, ins, vs, outs_tuple, outs, jac = _scalar_function_jacobian(func, inputs, v, create_graph, strict,
                                                                              "vhp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _fill_in_zeros(_grad(jac, ins, vs, create_graph=create_graph), ins, strict, create_graph, "double_back")
    return (
        _unpack(_postprocess(outs, create_graph), outs_tuple),
        _unpack(_postprocess(res, create_graph), ins_tuple),
    )


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), H v)`` for a scalar func, by the double-backward trick."""
    zeros_like = _gv().zeros_like
    with enable_grad():
        ins_tuple, ins, vs, outs_tuple, outs, jac = _scalar_function_jacobian(func, inputs, v, create_graph, strict,
                                                                              "hvp")
        grad_jac = tuple(zeros_like(t, requires_grad=True) for t in ins)
        double_back = _grad(jac, ins, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(double_back, grad_jac, vs, create_graph=create_graph)
        res = _fill_in_zeros(res, ins, strict, create_graph, "double_back_trick")
    return (
        _unpack(_postprocess(outs, create_graph), outs_tuple),
        _unpack(_postprocess(res, create_graph), ins_tuple),
    )


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
