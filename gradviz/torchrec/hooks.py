"""The user's hooks on torch, seen as they run: every hook the program registers while it is
recorded (tensor hooks, Node pre/post hooks, post-accumulate-grad hooks, Module full backward
(pre-)hooks) is wrapped at registration, and the wrapper reports a ``hook`` event with the
function's qualified name just before calling it, as gradviz's engine does.

Registration is where torch lets Python in: ``Tensor.register_hook`` and
``Tensor.register_post_accumulate_grad_hook`` are Python; a Node's ``register_hook`` and
``register_prehook`` (C++) store the function through ``Function._register_hook``; Module hooks
are Python. Hooks torch registers for itself (a Module's BackwardHook machinery) are left as
they are: the user's function inside is the one reported. Hooks registered before the recording
began are not seen (under ``gradviz run`` the recording begins before the script).

A wrapper never changes what the hook does: same arguments, same result, same exception, and
no frame of its own in the exception's traceback. The wrapper outlives the recording (torch
holds it): afterwards it only calls the hook.
"""

from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch

from gradviz.torchrec.lines import ours

# where(args) -> (the call's probe task, the node adapter) or None, from inside the hook
Where = Callable[[tuple], Any]


def is_internal(fn: Any) -> bool:
    """A hook torch or gradviz registers for itself (not the user's)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return code is not None and ours(code.co_filename)


class HookPatches:
    """Installs and removes the registration wrappers; ``report(fn, kind, target, args)`` is
    called before each user hook runs (target: what the hook was registered on, see below)."""

    def __init__(self, report: Callable[[Any, str, Any, tuple], None]) -> None:
        self.report = report
        self.active = False
        # the recorder's per-call hooks (TorchSource._begin): registered the cheap way, see below
        self.own: set[Any] = set()
        self._saved: list[tuple[Any, str, Any]] = []

    def start(self) -> None:
        self.active = True
        fn_cls = torch.autograd.function.Function
        tensor = torch.Tensor
        module = torch.nn.Module
        self._patch(fn_cls, "_register_hook", staticmethod(self._node_register(fn_cls._register_hook)))
        self._patch(tensor, "register_hook", self._tensor_register(tensor.register_hook, "tensor_pre"))
        self._patch(tensor, "register_post_accumulate_grad_hook",
                    self._tensor_register(tensor.register_post_accumulate_grad_hook, "post_accumulate"))
        self._patch(module, "register_full_backward_hook",
                    self._module_register(module.register_full_backward_hook, "post"))
        self._patch(module, "register_full_backward_pre_hook",
                    self._module_register(module.register_full_backward_pre_hook, "pre"))

    def stop(self) -> None:
        self.active = False
        for owner, name, old in reversed(self._saved):
            if old is _INHERITED:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._saved.clear()

    def _patch(self, owner: Any, name: str, new: Any) -> None:
        self._saved.append((owner, name, owner.__dict__.get(name, _INHERITED)))
        setattr(owner, name, new)

    def wrap(self, fn: Any, kind: str, target: Any) -> Any:
        """fn, reporting itself before it runs while the recording is on."""
        patches = self

        @functools.wraps(fn)
        def hook(*args: Any, **kwargs: Any) -> Any:
            if patches.active:
                patches.report(fn, kind, target, args)
            try:
                return fn(*args, **kwargs)
            except BaseException as e:
                tb = e.__traceback__
                if tb is not None and tb.tb_frame.f_code is _HOOK_CODE[0]:
                    e.__traceback__ = tb.tb_next  # the user's frames only, as without recording
                raise

        _HOOK_CODE[0] = hook.__code__
        return hook

    def _node_register(self, orig: Any) -> Any:
        own = self.own

        def _register_hook(backward_hooks: Any, hook: Any) -> Any:
            if type(hook) is functools.partial and hook in own:
                # the recorder's own hook, on every node of a call: into torch's dict for the
                # node without a RemovableHandle; the dict is the handle (the recorder pops its
                # hook from it when the call ends)
                if backward_hooks is None:
                    backward_hooks = OrderedDict()
                backward_hooks[hook] = hook
                return backward_hooks, backward_hooks
            if self.active and not is_internal(hook):
                hook = self.wrap(hook, "node", None)  # pre or post: told by its arguments
            return orig(backward_hooks, hook)

        return _register_hook

    def _tensor_register(self, orig: Any, kind: str) -> Any:
        def register(t: torch.Tensor, hook: Any) -> Any:
            if self.active and not is_internal(hook):
                gf = t.grad_fn
                # a leaf: its AccumulateGrad (by the tensor, weakly); else its grad_fn, by the
                # (sequence number, name) that names it in a call (the node itself would be held
                # by its own hook: a cycle through C++ that nothing collects)
                target = ("leaf", weakref.ref(t)) if gf is None else ("node", (gf._sequence_nr(), gf.name()))
                hook = self.wrap(hook, kind, target)
            return orig(t, hook)

        register.__name__ = orig.__name__
        register.__doc__ = orig.__doc__
        return register

    def _module_register(self, orig: Any, kind: str) -> Any:
        def register(m: torch.nn.Module, hook: Any, *args: Any, **kwargs: Any) -> Any:
            if self.active:
                hook = self.wrap(hook, kind, ("module", None))
            return orig(m, hook, *args, **kwargs)

        register.__name__ = orig.__name__
        register.__doc__ = orig.__doc__
        return register


_INHERITED = object()  # a patched attribute that the class inherited: deleted again, not set
_HOOK_CODE: list[Any] = [None]  # the wrappers' code object (one for all): their frame is left out
