"""torch.func.vmap (torch/_functorch/vmap.py): map a function over a dimension of its inputs.

torch runs the function once on batched tensors, with a batching rule per op. gradviz runs it once
per slice and stacks the results: the same values and the same errors for the programs vmap is
used for (per-sample gradients, ensembles, Jacobian rows), at a per-sample loop's speed. Where
the output requires grad (MAML's outer loop), its graph is a StackBackward0 over the per-sample
graphs, where torch's batching rules record one batched graph: the gradients agree, the node
names do not.
``chunk_size`` only groups torch's batched calls, so it changes nothing here. Random ops inside
the function draw slice after slice, which is not how torch's batched draws fall: programs that
draw inside vmap get other random numbers than torch's, and ``randomness="error"`` (the default)
is not enforced.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from gradviz.func._pytree import tree_flatten, tree_unflatten
from gradviz.ops import functions as _F
from gradviz.tensor import Tensor

__all__ = ["vmap"]


def _name(func: Callable[..., Any]) -> str:
    return getattr(func, "__name__", repr(func))


def _dims_for(in_dims: Any, args: tuple, fname: str) -> list[tuple[Any, Any]]:
    """Per positional argument, its leaves and their in_dims (one per leaf)."""
    if isinstance(in_dims, int) or in_dims is None:
        per_arg = [in_dims] * len(args)
    elif isinstance(in_dims, (tuple, list)):
        if len(in_dims) != len(args):
            raise ValueError(
                f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure "
                f"of `inputs`. in_dims has structure {_structure(in_dims)} but inputs has structure "
                f"{_structure(args)}."
            )
        per_arg = list(in_dims)
    else:
        raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...): expected `in_dims` to be int or a (potentially "
                         f"nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    out = []
    for arg, d in zip(args, per_arg):
        leaves, spec = tree_flatten(arg)
        if isinstance(d, int) or d is None:
            dims = [d] * len(leaves)
        else:
            dims, _ = tree_flatten(d)
            if len(dims) != len(leaves):
                raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible "
                                 "with the structure of `inputs`.")
        out.append((leaves, spec, dims))
    return out


def _structure(x: Any) -> str:
    return f"TreeSpec({type(x).__name__}, {len(x) if isinstance(x, (tuple, list)) else 1})"


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable[..., Any]:
    """torch.func.vmap: ``func`` mapped over dimension ``in_dims`` of its inputs, the results
    stacked along ``out_dims``."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                           f"Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    fname = _name(func)

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not args:
            raise ValueError(f"vmap({fname})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                             "trying to vmap over a function with no inputs. The latter is unsupported.")
        per_arg = _dims_for(in_dims, args, fname)
        size = None
        sizes = []
        for leaves, _, dims in per_arg:
            for leaf, d in zip(leaves, dims):
                if d is None:
                    continue
                if not isinstance(leaf, Tensor):
                    raise ValueError(
                        f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the "
                        f"input is of type {type(leaf)}. We cannot vmap over non-Tensor arguments, please use None "
                        "as the respective in_dim"
                    )
                if not isinstance(d, int):
                    raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): in_dims must be int or "
                                     f"None, got {type(d)}")
                n = leaf.dim()
                if not -n <= d < n:
                    raise ValueError(
                        f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but that "
                        f"input is a Tensor of dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim < {n}."
                    )
                sizes.append(leaf.shape[d])
        if not sizes:
            raise ValueError(
                f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): at least one input must be a Tensor mapped over "
                "a dimension (in_dims is None for every input)"
            )
        size = sizes[0]
        if any(s != size for s in sizes):
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sizes} for the mapped dimension")
        results = []
        for i in range(size):
            call_args = []
            for leaves, spec, dims in per_arg:
                sliced = [leaf if d is None else leaf.select(d, i) for leaf, d in zip(leaves, dims)]
                call_args.append(tree_unflatten(sliced, spec))
            results.append(func(*call_args, **kwargs))
        return _stack_outputs(results, out_dims, fname, size)

    return wrapped


def _stack_outputs(results: list[Any], out_dims: Any, fname: str, size: int) -> Any:
    first_leaves, spec = tree_flatten(results[0]) if results else ([], None)
    if isinstance(out_dims, int) or out_dims is None:
        dims = [out_dims] * len(first_leaves)
    else:
        dims, _ = tree_flatten(out_dims)
        if len(dims) != len(first_leaves):
            raise ValueError(f"vmap({fname}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
                             "the structure of `outputs`.")
    per_result = [tree_flatten(r)[0] for r in results]
    stacked = []
    for j, d in enumerate(dims):
        column = [leaves[j] for leaves in per_result]
        if d is None:
            stacked.append(column[0])
            continue
        if not all(isinstance(c, Tensor) for c in column):
            bad = next(type(c) for c in column if not isinstance(c, Tensor))
            raise ValueError(f"vmap({fname}, ...): `{fname}` must only return Tensors, got type {bad}. Did you "
                             "mean to set out_dims= to None for output?")
        n = column[0].dim() + 1
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        stacked.append(_F.stack(column, dim=d))
    return tree_unflatten(stacked, spec)
