"""Forward-mode AD's state, below the ops: the one dual level, the tensors holding a tangent at
it, and the stand-in history that lets a dual tensor's ops reach ``record``.

torch keeps a forward gradient per tensor per level and allows one level at a time
(torch.autograd.forward_ad); gradviz keeps the tangent in the tensor's ``_fw_grad``. Every op
decides whether to record by asking whether an input is tracked (``Tensor._tracked``: it requires
grad, or it has a tangent), and while the level holds tangents ops go on recording under no_grad
(forward AD ignores grad mode). A dual tensor whose primal needs no gradient also carries
``FORWARD_ONLY`` as its ``_grad_fn``, so that the ops' quick checks of that field see it.
``record`` makes no node and no edge for it: its ``grad_fn`` reads None, its ``requires_grad``
False (its primal's, as torch's), and leaving the level takes both the tangent and the stand-in
away.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from gradviz.autograd import grad_mode as _grad_mode
from gradviz.autograd.graph import Node


class _ForwardOnly(Node):
    """The stand-in history of a tensor that only forward AD follows. Never an edge of a node;
    a backward from it fails as a backward from a tensor without history does."""

    __slots__ = ()

    def __init__(self) -> None:  # not numbered: it is no node of any graph
        self._id = 0
        self.sequence_nr = -1
        self.topological_nr = 0
        self.next_edges = []
        self.input_metadata = ()

    def apply(self, grads: list[Any]) -> list[Any]:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")

    def name(self) -> str:
        return "ForwardADOnly"


FORWARD_ONLY = _ForwardOnly()


class _State:
    """The process's forward AD level (torch's is global, not per thread)."""

    # level: the current dual level, -1 outside any (torch's forward_ad._current_level).
    # live: True while the level holds a tangent: the one field record() reads per op.
    # computing: True while a forward formula runs: its ops compute with primals and tangents
    #   and give no tangents of their own.
    # tensors: every tensor given a tangent or the stand-in at this level, cleared at its exit.
    # propagate: gradviz.ops.forward_grad's hook, (cls, inputs, outputs, saved) -> the inputs
    #   record builds edges for, or None when no node is to be made (the outputs' tangents then
    #   computed); propagate_after: the outputs' tangents, once record gave them their node.
    # prune_at: the length of tensors at which the dead references are dropped.
    __slots__ = ("level", "live", "computing", "tensors", "prune_at", "propagate", "propagate_after")

    def __init__(self) -> None:
        self.level = -1
        self.live = False
        self.computing = False
        self.tensors: list[weakref.ref] = []
        self.prune_at = 4096
        self.propagate: Callable[..., Any] | None = None
        self.propagate_after: Callable[..., Any] | None = None


STATE = _State()


def track(t: Any) -> None:
    """t holds a tangent (or the stand-in) at the current level: forget both at the level's exit."""
    tensors = STATE.tensors
    tensors.append(weakref.ref(t))
    if not STATE.live:
        _set_live(True)
    if len(tensors) > STATE.prune_at:
        # a long computation inside one level: forget the tensors that are gone
        STATE.tensors = tensors = [r for r in tensors if r() is not None]
        STATE.prune_at = max(4096, 2 * len(tensors))


def give_tangent(t: Any, tangent: Any) -> None:
    """t (a new alias of a dual tensor, such as an unpacked saved output) has that tangent."""
    t._fw_grad = tangent
    track(t)


def clear_level() -> None:
    """Drop every tangent of the level being exited, and the stand-in histories with them."""
    for ref in STATE.tensors:
        t = ref()
        if t is None:
            continue
        t.__dict__.pop("_fw_grad", None)
        if t._grad_fn is FORWARD_ONLY:
            t._grad_fn = None
    STATE.tensors = []
    _set_live(False)


def _set_live(live: bool) -> None:
    """The level starts or stops holding tangents: ops go on to record() under no_grad too while
    it does (on this thread: grad mode is per thread, the level is the process's, as torch's)."""
    STATE.live = live
    _grad_mode.forward.live = live
    state = _grad_mode._state
    state.enabled = state.grad or live
