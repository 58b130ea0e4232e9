"""SavedTensor: what ``grad_fn._raw_saved_<name>`` gives, torch's handle on one saved variable.

Its ``register_hooks(pack_hook, unpack_hook)`` packs that one variable now (torch's
``SavedVariable::register_hooks``): the pack hook gets a detached alias of a saved input, or the
saved output without its grad_fn, under no_grad; the unpack hook runs each time backward (or
``_saved_<name>``) reads it, and the unpacked tensor takes back the saved tensor's place in the
graph. One pair per variable, and none once the graph has been freed, with torch's errors.
"""

from __future__ import annotations

from typing import Any

from gradviz.autograd.saved_variable import SavedVariable

ERR_HOOKS_SET = (
    "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one "
    "pair of hooks is allowed at a time."
)
ERR_FREED = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of "
    "the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
    "you need to backward through the graph a second time or if you need to access saved variables "
    "after calling backward."
)
ERR_PACK_INPLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook cannot be modified by in-place operations as this can lead to unexpected side-effects. "
    "Please open an issue if you need to perform in-place operations on the input to a pack hook."
)


class SavedTensor:
    """One saved variable of a backward node (torch._C._autograd.SavedTensor)."""

    __slots__ = ("_node", "_var")

    def __init__(self, node: Any, var: SavedVariable) -> None:
        self._node = node
        self._var = var

    def register_hooks(self, *args: Any) -> None:
        """Pack this saved tensor with ``pack_hook`` now; backward reads ``unpack_hook(packed)``."""
        if len(args) != 2 or not all(callable(a) for a in args):
            invoked = ", ".join(repr(a) for a in (self, *args))
            raise TypeError(
                "register_hooks(): incompatible function arguments. The following argument types are "
                "supported:\n    1. (self: torch._C._autograd.SavedTensor, arg0: collections.abc.Callable, "
                f"arg1: collections.abc.Callable) -> None\n\nInvoked with: {invoked}"
            )
        pack, unpack = args
        sv = self._var
        if sv.released:  # a freed variable has no hooks left either (torch resets both)
            raise RuntimeError(ERR_FREED)
        if getattr(sv, "_packed", None) is not None:
            raise RuntimeError(ERR_HOOKS_SET)
        if sv.tensor is None:
            raise RuntimeError(ERR_FREED)
        from gradviz.autograd import graph_hooks
        from gradviz.ops import _hooked_nodes

        graph_hooks.pack_registered(sv, pack, unpack)
        node = self._node
        if type(node.saved) is dict and not _hooked_nodes.is_hooked(type(node)):
            # From now on this node's backward unpacks its saved variables as torch's does.
            node.__class__ = _hooked_nodes.hooked_class(type(node))

    def __repr__(self) -> str:
        return f"<torch._C._autograd.SavedTensor object at {id(self):#x}>"


def raw_saved_property(key: str) -> property:
    """OpNode's ``_raw_saved_<key>``: a SavedTensor (a list of them for a saved tensor list)."""

    def get(self: Any) -> Any:
        v = self.saved.get(key)
        if type(v) is SavedVariable:
            return SavedTensor(self, v)
        if type(v) is list and v and type(v[0]) is SavedVariable:
            return [SavedTensor(self, s) for s in v]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '_raw_saved_{key}'")

    return property(get)
