"""torch.func.functional_call and stack_module_state (torch/_functorch/functional_call.py): call
a module with other tensors in place of its parameters and buffers, and stack the states of
several models for an ensemble under vmap."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from gradviz.ops import functions as _F
from gradviz.tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]


def _owner(module: Any, name: str) -> tuple[Any, str]:
    *path, leaf = name.split(".")
    for part in path:
        module = getattr(module, part)
    return module, leaf


@contextlib.contextmanager
def _swapped(module: Any, tensors: dict[str, Any], strict: bool) -> Iterator[None]:
    """The module with ``tensors`` standing in for its parameters and buffers of those names
    (or set as plain attributes), put back afterwards whatever happens."""
    if strict:
        expected = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
        unexpected = sorted(set(tensors) - expected)
        missing = sorted(expected - set(tensors))
        if unexpected or missing:
            lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
            if unexpected:
                lines.append("\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
            if missing:
                lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise RuntimeError("\n".join(lines))
    undo: list[tuple[Any, str, str, Any]] = []
    try:
        for name, value in tensors.items():
            owner, leaf = _owner(module, name)
            for slot in ("_parameters", "_buffers"):
                store = owner.__dict__.get(slot)
                if store is not None and leaf in store:
                    undo.append((owner, slot, leaf, store[leaf]))
                    store[leaf] = value
                    break
            else:
                undo.append((owner, "", leaf, owner.__dict__.get(leaf, _ABSENT)))
                object.__setattr__(owner, leaf, value)
        yield
    finally:
        for owner, slot, leaf, old in reversed(undo):
            if slot:
                owner.__dict__[slot][leaf] = old
            elif old is _ABSENT:
                owner.__dict__.pop(leaf, None)
            else:
                object.__setattr__(owner, leaf, old)


_ABSENT = object()


def functional_call(module: Any, parameter_and_buffer_dicts: dict[str, Any] | Sequence[dict[str, Any]],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """torch.func.functional_call: ``module(*args, **kwargs)`` computed with the given tensors in
    place of the parameters and buffers of those names."""
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError(f"Expected all elements of parameter_and_buffer_dicts to be dictionaries, got "
                             f"{[type(d) for d in parameter_and_buffer_dicts]}")
        merged = {}
        seen: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        for d in parameter_and_buffer_dicts:
            merged.update(d)
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, merged, strict):
        return module(*args, **(kwargs or {}))


def _stacked_leaf(tensors: Sequence[Tensor], name: str) -> Tensor:
    all_grad = all(t.requires_grad for t in tensors)
    no_grad = not any(t.requires_grad for t in tensors)
    if not all_grad and not no_grad:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = _F.stack(list(tensors))
    if all_grad:
        result = result.detach().requires_grad_()
    return result


def stack_module_state(models: Sequence[Any]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """torch.func.stack_module_state: each parameter and buffer stacked over the models (new
    leaves where the models' parameters require grad), ready for ``vmap(functional_call)``."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    kind = type(models[0])
    if not all(type(m) is kind for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = [dict(m.named_parameters()) for m in models]
    buffers = [dict(m.named_buffers()) for m in models]
    stacked_params = {k: _stacked_leaf([p[k] for p in params], k) for k in params[0]}
    stacked_buffers = {k: _stacked_leaf([b[k] for b in buffers], k) for k in buffers[0]}
    return stacked_params, stacked_buffers
