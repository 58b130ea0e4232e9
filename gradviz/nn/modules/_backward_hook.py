"""A Module's full backward hooks (register_full_backward_hook / _pre_hook), as torch's
BackwardHook: the module's tensor inputs and outputs pass through BackwardHookFunction (so the
graph holds a BackwardHookFunctionBackward node on each side, as torch's does); the outputs' node
catches grad_output (and runs the pre-hooks, which may replace it), the inputs' node catches
grad_input once the backward reaches it and runs the hooks, which may replace it."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

from gradviz.autograd.grad_mode import is_grad_enabled
from gradviz.nn.modules._functions import BackwardHookFunction
from gradviz.tensor import Tensor

_GRADVIZ_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep  # gradviz/


def _user_stacklevel() -> int:
    """warnings.warn's stacklevel that names the user's line that ran the backward (torch's
    points past its own frames the same way), over the engine's frames in between."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(_GRADVIZ_DIR):
        frame, level = frame.f_back, level + 1
    return level


def _pack(indices: list[int], values: Any, size: int) -> tuple:
    """values at their positions among size slots, None elsewhere (non-tensor arguments)."""
    out: list[Any] = [None] * size
    for i, v in zip(indices, values, strict=True):
        out[i] = v
    return tuple(out)


class BackwardHook:
    """One module call's hooks: set up on its inputs before forward, on its outputs after."""

    def __init__(self, module: Any, hooks: list[Callable], pre_hooks: list[Callable]) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = self.n_outputs = -1
        self.input_index: list[int] | None = None
        self.output_index: list[int] | None = None

    def _wrap(self, on_node: Callable, args: tuple) -> tuple[tuple, list[int] | None]:
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in index]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None
        wrapped = BackwardHookFunction.apply(*tensors)
        nodes = [t.grad_fn for t in wrapped if t.grad_fn is not None]
        on_node(nodes[0])
        out = list(args)
        for i, t in zip(index, wrapped, strict=True):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), index

    def setup_input_hook(self, args: tuple) -> tuple:
        def on_node(node: Any) -> None:
            def hook(grad_input: tuple, _grad_output: tuple) -> Any:
                if self.grad_outputs is None:
                    return None
                assert self.input_index is not None
                res = _pack(self.input_index, grad_input, self.n_inputs)
                for user_hook in self.hooks:
                    out = user_hook(self.module, res, self.grad_outputs)
                    if out is None:
                        continue
                    if len(out) != len(res):
                        raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                           f"got {len(out)}, but expected {len(res)}")
                    res = out
                self.grad_outputs = None
                return tuple(res[i] for i in self.input_index)

            node.register_hook(hook)

        res, self.input_index = self._wrap(on_node, args)
        self.n_inputs = len(args)
        return res

    def setup_output_hook(self, result: Any) -> Any:
        def on_node(node: Any) -> None:
            def hook(_grad_input: tuple, grad_output: tuple) -> Any:
                assert self.output_index is not None
                self.grad_outputs = _pack(self.output_index, grad_output, self.n_outputs)
                for pre_hook in self.pre_hooks:
                    new = pre_hook(self.module, self.grad_outputs)
                    if new is None:
                        continue
                    if len(new) != len(self.grad_outputs):
                        raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                           f"got {len(new)}, but expected {len(self.grad_outputs)}")
                    self.grad_outputs = new
                local = self.grad_outputs
                if self.input_index is None:  # no input requires grad: the hooks run here
                    warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                                  "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/"
                                  "main/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook"
                                  " for more details.", stacklevel=_user_stacklevel())
                    none_inputs = _pack([], [], self.n_inputs)
                    for user_hook in self.hooks:
                        out = user_hook(self.module, none_inputs, self.grad_outputs)
                        if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
                            raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                               "always return None or None for all gradients.")
                    self.grad_outputs = None
                return tuple(local[i] for i in self.output_index)

            node.register_hook(hook)

        single = not isinstance(result, tuple)
        args = (result,) if single else result
        res, self.output_index = self._wrap(on_node, args)
        self.n_outputs = len(args)
        return res[0] if single else res
