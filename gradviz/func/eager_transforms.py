"""torch.func's differentiating transforms (torch/_functorch/eager_transforms.py): grad,
grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, over gradviz's reverse-mode engine.

functorch gives each transform a level of its own; gradviz gets the same answers from the one
engine. A transform wraps the inputs it differentiates: a fresh detached leaf, or a view where the
input requires grad (inside another transform, or a parameter under ordinary autograd), so that
the outer level can differentiate through it. It runs the function with grad enabled and asks
the engine for the gradients. Where an outer level may differentiate the result (nested
transforms such as ``jacrev(jacrev(f))``, or a function that reads tensors requiring grad) the
backward builds its graph (create_graph) and the results keep it, as torch's do; otherwise they
are detached.

Forward-mode products (jvp, jacfwd) use forward-mode AD (torch.autograd.forward_ad): the
primals made dual with the tangents, the tangents carried op by op. torch's forward_ad has one
dual level, so a jvp inside another (jacfwd(jacfwd(f))) falls back to the double-vjp identity
(the gradient of ``vjp(u)`` with respect to ``u`` along the tangent is ``J @ tangent``), whose
ops the outer level's tangents flow through. ``hessian`` is forward over reverse
(``jacfwd(jacrev)``), as torch's.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from gradviz.autograd import forward_ad as _forward_ad
from gradviz.autograd import forward_state as _forward_state
from gradviz.autograd import grad as _autograd_grad
from gradviz.autograd.grad_mode import enable_grad, is_grad_enabled
from gradviz.func._pytree import tree_flatten, tree_unflatten
from gradviz.ops import functions as _F
from gradviz.tensor import Tensor

__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "vjp"]


class _Levels(threading.local):
    depth = 0  # how many differentiating transforms this thread is inside


_levels = _Levels()


class _level:
    """One more differentiating transform running on this thread."""

    def __enter__(self) -> bool:
        nested = _levels.depth > 0
        _levels.depth += 1
        return nested

    def __exit__(self, *exc: Any) -> None:
        _levels.depth -= 1


def _wrap(t: Any, nested: bool) -> Any:
    """The tensor a transform differentiates with respect to: a view of the input where the input
    itself requires grad (an outer transform's tensor, or a parameter that ordinary autograd
    differentiates through the transform, as MAML's outer loop does), else a fresh leaf. A dual
    tensor that only forward AD follows (a jacfwd outside: forward over reverse) becomes a fresh
    leaf that keeps its tangent."""
    if not isinstance(t, Tensor):
        return t
    if t._fw_grad is not None and not t.requires_grad:
        leaf = t.detach().requires_grad_(True)
        _forward_state.give_tangent(leaf, t._fw_grad)
        leaf._transform_leaf = True
        return leaf
    if t.requires_grad and (nested or is_grad_enabled()):
        return t.view_as(t)  # still a function of the outer tensor
    leaf = t.detach().requires_grad_(True)
    leaf._transform_leaf = True  # not a tensor of the user's: an outer jvp's results need no graph to it
    return leaf


def _argnums_tuple(argnums: int | tuple[int, ...], nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not isinstance(argnums, int):
        if not isinstance(argnums, tuple) or len(argnums) == 0:
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(n)}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnum={n}, but only {nargs} positional inputs")
    return tuple(n % nargs for n in nums)


def _wrap_args(args: tuple, nums: tuple[int, ...], nested: bool) -> tuple[list[Any], list[tuple[list, Any]]]:
    """args with the differentiated ones wrapped; per argnum, its wrapped leaves and their spec."""
    new = list(args)
    wrapped: list[tuple[list, Any]] = []
    for n in nums:
        leaves, spec = tree_flatten(args[n])
        for leaf in leaves:
            if not isinstance(leaf, Tensor):
                raise RuntimeError(
                    f"Expected all leaves of argument {n} to be Tensors, got {type(leaf)}: the function "
                    "can only be differentiated with respect to Tensors"
                )
        mine = [_wrap(leaf, nested) for leaf in leaves]
        new[n] = tree_unflatten(mine, spec)
        wrapped.append((mine, spec))
    return new, wrapped


def _per_argument(flat: list[Any], wrapped: list[tuple[list, Any]]) -> list[Any]:
    """flat (one value per differentiated leaf, in order) rebuilt into each argument's structure."""
    results, i = [], 0
    for leaves, spec in wrapped:
        results.append(tree_unflatten(flat[i : i + len(leaves)], spec))
        i += len(leaves)
    return results


def _reads_outer_leaves(outputs: Sequence[Tensor], own: Sequence[Tensor]) -> bool:
    """Whether the outputs' graph reaches a leaf that requires grad and is not one of ``own``:
    then the results are functions of it and keep their graph (torch's transforms compose with
    ordinary autograd that way)."""
    own_ids = {id(t) for t in own}
    seen: set[int] = set()
    stack = [o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            if id(variable) not in own_ids and not getattr(variable, "_transform_leaf", False):
                return True
            continue
        stack.extend(fn for fn, _ in node.next_functions)
    return False


def _finish(t: Any, keep: bool) -> Any:
    return t if keep or not isinstance(t, Tensor) else t.detach()


def _gradients(outputs: Sequence[Tensor], inputs: Sequence[Tensor], grad_outputs: Sequence[Any] | None,
               create_graph: bool, retain_graph: bool = True) -> list[Tensor]:
    """d outputs / d inputs (weighted by grad_outputs); zeros where an input was not used."""
    if not inputs:
        return []
    grads = _autograd_grad(list(outputs), list(inputs), grad_outputs=grad_outputs, retain_graph=retain_graph,
                           create_graph=create_graph, allow_unused=True)
    return [_F.zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


def _split_aux(out: Any, has_aux: bool, api: str) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}(f)(*args): output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    return out


def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """torch.func.grad_and_value: ``(gradient, value)``, or ``((gradient, (value, aux)))`` with has_aux."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args))
        with _level() as nested, enable_grad():
            new_args, wrapped = _wrap_args(args, nums, nested)
            out, aux = _split_aux(func(*new_args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                    f"{out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
                )
            flat = [t for leaves, _ in wrapped for t in leaves]
            keep = nested or (is_grad_enabled() and _reads_outer_leaves([out], flat))
            grads = _gradients([out], flat, None, create_graph=keep) if out.requires_grad else [
                _F.zeros_like(t) for t in flat]
            results = _per_argument([_finish(g, keep) for g in grads], wrapped)
            g = results[0] if isinstance(argnums, int) else tuple(results)
            value = _finish(out, keep)
            if has_aux:
                leaves, spec = tree_flatten(aux)
                return g, (value, tree_unflatten([_finish(a, keep) for a in leaves], spec))
            return g, value

    return wrapper


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """torch.func.grad: the gradient of a scalar function with respect to the argnums inputs."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = inner(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """torch.func.vjp: ``(output, vjp_fn)`` (``aux`` third with has_aux); ``vjp_fn(cotangents)``
    returns a tuple with one gradient per primal."""
    with _level() as nested, enable_grad():
        new_args, wrapped = _wrap_args(primals, tuple(range(len(primals))), nested)
        out, aux = _split_aux(func(*new_args), has_aux, "vjp")
    out_leaves, out_spec = tree_flatten(out)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has only Tensors as outputs, "
                               f"got {type(o)}")
    flat = [t for leaves, _ in wrapped for t in leaves]
    keep = nested or (is_grad_enabled() and _reads_outer_leaves(out_leaves, flat))

    def vjp_fn(cotangents: Any, *, retain_graph: bool = True, create_graph: bool | None = None) -> tuple[Any, ...]:
        ct_leaves, ct_spec = tree_flatten(cotangents)
        if len(ct_leaves) != len(out_leaves):
            raise RuntimeError(
                f"Expected pytree structure of cotangents to be the same as pytree structure of outputs to the "
                f"function. cotangents: {ct_spec}, primal output: {out_spec}"
            )
        for c, o in zip(ct_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {_size(c)} and output[0] "
                                   f"has a shape of {_size(o)}.")
        pairs = [(o, c) for o, c in zip(out_leaves, ct_leaves) if o.requires_grad]
        with _level() as inner_nested, enable_grad():
            build = keep or inner_nested if create_graph is None else create_graph
            grads = (_gradients([o for o, _ in pairs], flat, [c for _, c in pairs], create_graph=build,
                                retain_graph=retain_graph)
                     if pairs else [_F.zeros_like(t) for t in flat])
        return tuple(_per_argument([_finish(g, build) for g in grads], wrapped))

    value = tree_unflatten([_finish(o, keep) for o in out_leaves], out_spec)
    if has_aux:
        return value, vjp_fn, aux
    return value, vjp_fn


def _size(t: Tensor) -> str:
    return "torch.Size([" + ", ".join(str(s) for s in t.shape) + "])"


def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable[..., Any]:
    """torch.func.jacrev: the Jacobian by reverse mode, one vjp per output element; each output's
    Jacobian has shape ``output.shape + input.shape``, in the inputs' and outputs' structures.
    chunk_size only groups torch's batched vjps: the values are the same."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args))
        with _level() as nested, enable_grad():
            new_args, wrapped = _wrap_args(args, nums, nested)
            out, aux = _split_aux(func(*new_args, **kwargs), has_aux, "jacrev")
            out_leaves, out_spec = tree_flatten(out)
            for o in out_leaves:
                if not isinstance(o, Tensor):
                    raise RuntimeError(f"jacrev(f, ...)(*args): Expected f to be a function that has only Tensors "
                                       f"as outputs, got {type(o)}")
            flat = [t for leaves, _ in wrapped for t in leaves]
            keep = nested or (is_grad_enabled() and _reads_outer_leaves(out_leaves, flat))
            per_output = []
            for o in out_leaves:
                rows: list[list[Tensor]] = [[] for _ in flat]
                o_flat = o.reshape(-1)
                for k in range(o_flat.shape[0]):
                    gs = (_gradients([o_flat[k]], flat, None, create_graph=keep) if o.requires_grad
                          else [_F.zeros_like(t) for t in flat])
                    for r, g in zip(rows, gs):
                        r.append(g)
                jac = []
                for x, r in zip(flat, rows):
                    if r:
                        j = _F.stack(r).reshape(tuple(o.shape) + tuple(x.shape))
                    else:  # an output with no elements
                        j = _F.zeros(tuple(o.shape) + tuple(x.shape), dtype=o.dtype)
                    jac.append(_finish(j, keep))
                results = _per_argument(jac, wrapped)
                per_output.append(results[0] if isinstance(argnums, int) else tuple(results))
            result = tree_unflatten(per_output, out_spec)
            if has_aux:
                leaves, spec = tree_flatten(aux)
                return result, tree_unflatten([_finish(a, keep) for a in leaves], spec)
            return result

    return wrapper


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple[Any, ...]:
    """torch.func.jvp: ``(output, jvp_out)``: the Jacobian-vector product along ``tangents``."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. "
                           "E.g. it should be valid to call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected tangents to be a tuple. "
                           "E.g. it should be valid to call f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if len(p_leaves) != len(t_leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents also must be. "
                           f"Got primals with structure {p_spec} and tangents with structure {t_spec}")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same shape. "
                               f"Got primal of shape {_size(p)} and tangent of shape {_size(t)}")
    if _forward_ad.STATE.level < 0:
        return _jvp_forward(func, primals, p_leaves, p_spec, t_leaves, has_aux)
    return _jvp_double_vjp(func, primals, t_leaves, has_aux)


def _jvp_forward(func: Callable[..., Any], primals: tuple, p_leaves: list, p_spec: Any, t_leaves: list,
                 has_aux: bool) -> tuple[Any, ...]:
    """jvp by forward-mode AD: the primals made dual with the tangents at a dual level."""
    grad_on = is_grad_enabled()
    with _level() as nested, enable_grad(), _forward_ad.dual_level():
        duals = [_forward_ad.make_dual(p, t) for p, t in zip(p_leaves, t_leaves)]
        out, aux = _split_aux(func(*tree_unflatten(duals, p_spec)), has_aux, "jvp")
        out_leaves, out_spec = tree_flatten(out)
        for o in out_leaves:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"jvp(f, primals, tangents): Expected f(*primals) to return only tensors, got "
                                   f"unsupported type {type(o)}")
        tangents_out = [_forward_ad.unpack_dual(o).tangent for o in out_leaves]
    tangents_out = [_F.zeros_like(o) if t is None else t for t, o in zip(tangents_out, out_leaves)]
    # The results keep their graph where something outside differentiates them: an outer
    # transform, or ordinary autograd through primals or tensors the function reads.
    keep = nested or (grad_on and _reads_outer_leaves(out_leaves + tangents_out, []))
    value = tree_unflatten([_finish(o, keep) for o in out_leaves], out_spec)
    jvp_out = tree_unflatten([_finish(t, keep) for t in tangents_out], out_spec)
    if has_aux:
        return value, jvp_out, aux
    return value, jvp_out


def _jvp_double_vjp(func: Callable[..., Any], primals: tuple, t_leaves: list, has_aux: bool) -> tuple[Any, ...]:
    """jvp inside a dual level (nested forward transforms: jacfwd(jacfwd(f))), which torch's
    forward_ad cannot nest: by the double-vjp identity. The gradient of ``vjp(u)`` with respect to
    ``u`` along the tangent is ``J @ tangent``; the outer level's tangents flow through it."""
    with _level() as nested, enable_grad():
        new_args, wrapped = _wrap_args(primals, tuple(range(len(primals))), nested)
        out, aux = _split_aux(func(*new_args), has_aux, "jvp")
        out_leaves, out_spec = tree_flatten(out)
        flat = [t for leaves, _ in wrapped for t in leaves]
        keep = True  # inside a dual level: the outer level differentiates the results
        # u: a cotangent that requires grad; vjp(u) is linear in u, and d<vjp(u), t>/du = J t
        us = [_F.zeros_like(o).requires_grad_(True) for o in out_leaves]
        live = [(o, u) for o, u in zip(out_leaves, us) if o.requires_grad]
        if live:
            vjps = _autograd_grad([o for o, _ in live], flat, grad_outputs=[u for _, u in live], create_graph=True,
                                  allow_unused=True)
            pairs = [(g, t) for g, t in zip(vjps, t_leaves) if g is not None and g.requires_grad]
        else:
            pairs = []
        if pairs:
            outs = _autograd_grad([g for g, _ in pairs], us, grad_outputs=[t for _, t in pairs], create_graph=keep,
                                  allow_unused=True)
            tangents_out = [_F.zeros_like(o) if g is None else g for g, o in zip(outs, out_leaves)]
        else:
            tangents_out = [_F.zeros_like(o) for o in out_leaves]
        value = tree_unflatten(out_leaves, out_spec)
        jvp_out = tree_unflatten(tangents_out, out_spec)
        if has_aux:
            return value, jvp_out, aux
        return value, jvp_out


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:
    """torch.func.jacfwd: the Jacobian by forward products, one jvp per input element."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args))
        inputs = [tree_flatten(args[n]) for n in nums]
        flat_in = [t for leaves, _ in inputs for t in leaves]
        aux_box: list[Any] = []

        def f_of(*xs: Tensor) -> Any:
            new = list(args)
            i = 0
            for n, (leaves, spec) in zip(nums, inputs):
                new[n] = tree_unflatten(list(xs[i : i + len(leaves)]), spec)
                i += len(leaves)
            out = func(*new, **kwargs)
            if has_aux:
                out, aux = _split_aux(out, True, "jacfwd")
                aux_box[:] = [aux]
            return out

        columns: list[list[Any]] = []  # per input leaf, per element: the output leaves' tangents
        out_leaves: list[Tensor] = []
        out_spec: Any = None
        for j, x in enumerate(flat_in):
            cols = []
            for k in range(x.numel()):
                basis = [_F.zeros_like(t) for t in flat_in]
                basis[j] = _F.zeros_like(x).reshape(-1)
                basis[j][k] = 1
                basis[j] = basis[j].reshape(tuple(x.shape))
                value, tangent = jvp(f_of, tuple(flat_in), tuple(basis))
                out_leaves, out_spec = tree_flatten(value)
                cols.append(tree_flatten(tangent)[0])
            columns.append(cols)
        if not flat_in or not columns or (not columns[0] and not out_leaves):
            out_leaves, out_spec = tree_flatten(f_of(*flat_in))
        per_output = []
        for oi, o in enumerate(out_leaves):
            jac = []
            for x, cols in zip(flat_in, columns):
                if cols:
                    j = _F.stack([c[oi] for c in cols], dim=-1).reshape(tuple(o.shape) + tuple(x.shape))
                else:
                    j = _F.zeros(tuple(o.shape) + tuple(x.shape), dtype=o.dtype)
                jac.append(j)
            results = _per_argument(jac, inputs)
            per_output.append(results[0] if isinstance(argnums, int) else tuple(results))
        result = tree_unflatten(per_output, out_spec)
        if has_aux:
            return result, aux_box[0] if aux_box else None
        return result

    return wrapper


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """torch.func.hessian: the Jacobian of the Jacobian, forward over reverse as torch's."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """torch.func.linearize: ``(func(*primals), jvp_fn)``, ``jvp_fn(*tangents)`` the JVP at the
    primals. torch traces the linearized function once; gradviz runs a jvp per call (the same
    values)."""
    p_leaves, p_spec = tree_flatten(primals)
    out = func(*primals)
    out_leaves, out_spec = tree_flatten(out)
    value = tree_unflatten([o.detach() if isinstance(o, Tensor) else o for o in out_leaves], out_spec)

    def jvp_fn(*tangents: Any) -> Any:
        t_leaves, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as the primals {p_spec}")
        for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            if tuple(t.shape) != tuple(p.shape):
                raise RuntimeError(f"tangent:{i} with shape {_size(t)} in flattened pytree doesn't match the shape "
                                   f"{_size(p)} of the corresponding primal.")
            if t.dtype is not p.dtype:
                raise RuntimeError(f"tangent:{i} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{p.dtype} of the corresponding primal.")
        return jvp(func, tuple(primals), tuple(tangents))[1]

    return value, jvp_fn
